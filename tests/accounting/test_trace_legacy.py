"""0.10.0's tracing code runs as written, without a warning, and records: Profiler(run_dir,
trace=True, trace_capacity=...), the module-level signal_ready and wait_on, LINEPROFILER_TRACE."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from lineprofiler.runfiles import tracesection, workerfile

PROGRAM = textwrap.dedent(
    """
    import sys

    from lineprofiler import accounting

    profiler = accounting.Profiler(sys.argv[1], trace=True, trace_capacity=1000, install=True, enabled=True)
    for step in range(3):
        with accounting.phase("step"):
            accounting.signal_ready("queue", step)
            accounting.wait_on("queue", step)
    profiler.close()
    accounting.signal_ready("queue", 99)  # nothing installed now: a no-op, as in 0.10.0
    from_env = accounting.Profiler(sys.argv[1] + "-env", enabled=True)
    with from_env.phase("env"):
        from_env.signal("c", "k")
    from_env.close()
    """
)


def _only_document(run_dir: Path) -> dict:  # type: ignore[type-arg]
    (path,) = workerfile.find_worker_files(run_dir)
    doc = workerfile.read_worker_file(path)
    if doc.get("trace") is not None:
        doc["trace"]["spans"] = tracesection.span_rows(doc["trace"], path)
    return doc


def test_0_10_tracing_code_runs_without_warnings_and_records(tmp_path: Path) -> None:
    env = dict(os.environ, LINEPROFILER_TRACE="1")
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", PROGRAM, str(tmp_path / "run")],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    trace = _only_document(tmp_path / "run")["trace"]
    assert trace["capacity"] == 1000 and trace["recorded"] == 3 and len(trace["spans"]) == 3
    assert [link[:3] for link in trace["links"]] == [
        [kind, "queue", str(step)] for step in range(3) for kind in ("signal", "wait")
    ]
    env_trace = _only_document(tmp_path / "run-env")["trace"]  # trace= left out: LINEPROFILER_TRACE=1
    assert env_trace["recorded"] == 1 and [link[:3] for link in env_trace["links"]] == [["signal", "c", "k"]]


def test_0_10_trace_auto_traces_the_named_phases_and_says_when_it_cannot_trace_functions(tmp_path: Path) -> None:
    # -c code is no project file: only the named phase is traced (function calls:
    # tests/accounting/test_auto_trace.py); 3.11 has no sys.monitoring and says so once.
    program = (
        "import sys\nfrom lineprofiler import accounting\n"
        "p = accounting.Profiler(sys.argv[1], trace='auto', enabled=True)\n"
        "with p.phase('x'):\n    pass\np.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    said = sys.version_info < (3, 12)
    assert done.stderr.count("RuntimeWarning") == said and ("needs sys.monitoring" in done.stderr) == said
    assert _only_document(tmp_path)["trace"]["recorded"] == 1
    bad = subprocess.run(
        [sys.executable, "-c", "from lineprofiler import accounting\naccounting.Profiler(trace='sometimes')"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode != 0 and "trace must be True, False, 'auto'" in bad.stderr
