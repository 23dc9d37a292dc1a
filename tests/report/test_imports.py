"""``report`` and ``compare`` read files only: they import no profiler and no C module.

A report must run where only the run directory is (a laptop with no compiler, another Python).
The run directory here is written by the real profiler in one process; the report and the
comparison then run in a fresh interpreter, which lists what they imported.
"""

import json
import os
import subprocess
import sys
import textwrap

PROFILED = textwrap.dedent(
    """
    import multiprocessing as mp
    import sys

    from lineprofiler.accounting import Profiler


    def actor():
        # With a lines window, so that `report --lines` has line-stats files to read.
        profiler = Profiler(run_dir=sys.argv[1], role="actor", backend="lines", backend_window=(3, 6),
                            window_phase="iteration")
        for _ in range(20):
            with profiler.phase("iteration"), profiler.phase("step"):
                profiler.count("moves", 2)
        profiler.close()


    if __name__ == "__main__":
        learner = Profiler(run_dir=sys.argv[1], role="learner")
        child = mp.get_context("spawn").Process(target=actor)
        child.start()
        for _ in range(20):
            with learner.phase("train", io=True):
                sum(i * i for i in range(1000))
        child.join()
        learner.close()
    """
)

# Runs the commands through lineprofiler.cli.main and prints what was imported, as JSON. With
# "block", the profiler and the C modules cannot be imported at all: the commands must not care.
REPORTER = textwrap.dedent(
    """
    import contextlib
    import importlib.machinery
    import io
    import json
    import sys

    C_MODULES = ("lineprofiler.lines._tracer", "lineprofiler.accounting._phases", "lineprofiler.accounting._sampler")
    if sys.argv[2] == "block":
        for name in ("lineprofiler.accounting", "lineprofiler.lines", *C_MODULES):
            sys.modules[name] = None  # any import of these raises ImportError

    from lineprofiler.cli import main

    run_dir = sys.argv[1]
    outputs, codes = [], []
    for argv in (["report", run_dir], ["report", run_dir, "--no-samples"], ["compare", run_dir, run_dir],
                 ["compare", run_dir, run_dir, "--json"], ["report", run_dir, "--lines"],
                 ["report", run_dir, "--lines", "--json"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            codes.append(main(argv))
        outputs.append(out.getvalue())
    extension = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    loaded = sorted(n for n, module in sys.modules.items() if module is not None and n.startswith("lineprofiler"))
    compiled = sorted(
        name for name in loaded if str(getattr(sys.modules[name], "__file__", "") or "").endswith(extension)
    )
    print(json.dumps({"codes": codes, "outputs": outputs, "loaded": loaded, "compiled": compiled}))
    """
)


def _clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}


def _report(run_dir, mode):
    result = subprocess.run(
        [sys.executable, "-c", REPORTER, str(run_dir), mode], capture_output=True, text=True, timeout=120,
        env=_clean_env(),
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def test_report_and_compare_import_no_profiler_and_no_c_module(tmp_path):
    script = tmp_path / "profiled.py"
    script.write_text(PROFILED)
    run_dir = tmp_path / "profile"
    made = subprocess.run(
        [sys.executable, str(script), str(run_dir)], capture_output=True, text=True, timeout=120, env=_clean_env()
    )
    assert made.returncode == 0, made.stderr

    seen = _report(run_dir, "plain")
    assert seen["codes"] == [0] * 6
    assert "ACTOR  (1 of 1 process left line stats; entries 3..5 of iteration" in seen["outputs"][4]
    assert json.loads(seen["outputs"][5])["lines"]["roles"][0]["files"] == 1
    report = seen["outputs"][0]
    assert "Processes 2   Roles" in report and "I/O BY PHASE" in report and "MEMORY (RSS, sampled)" in report
    assert [name for name in seen["loaded"] if name.startswith("lineprofiler.accounting")] == []
    assert [name for name in seen["loaded"] if name.startswith("lineprofiler.lines")] == []
    assert seen["compiled"] == []

    # And where the profiler and the C modules cannot be imported at all, the output is the same.
    blocked = _report(run_dir, "block")
    assert blocked["codes"] == [0] * 6
    assert blocked["outputs"] == seen["outputs"]
