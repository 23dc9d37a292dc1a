"""What a newer CPython changed for a line profiler, checked on every one the suite runs on.

- From 3.13, a LINE event for a function's first line fires only where PY_START is enabled for
  it (CPython gh-155992): a one-line ``def`` or ``lambda`` would show no hits at all.
- From 3.12, cProfile (3.15: ``profiling.tracing``) is a sys.monitoring tool on PROFILER_ID, the
  id the line tracer prefers, and coverage.py may hold COVERAGE_ID: all three in one process.
- 3.15's statistical profiler attaches to a running process and reads its memory; the line
  counts of that process must stay exact while it is sampled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TARGET = textwrap.dedent(
    """\
    square = lambda x: x * x
    def double(x): return 2 * x
    class Box:
        def get(self): return 1
        @staticmethod
        def make(): return Box()
    def loop(n):
        total = 0
        for i in range(n):
            total += square(i) + double(i) + Box.make().get()
        return total
    """
)

ONE_LINERS = textwrap.dedent(
    """\
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from lineprofiler import LineProfiler
    import pytarget
    p = LineProfiler(project_folder=sys.argv[1])
    with p:
        pytarget.loop(25)
    out = {name: {str(ln): s.hits for ln, s in st.lines.items()} for (_, name, _), st in p.get_stats().items()}
    print(json.dumps(out))
    """
)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    (tmp_path / "pytarget.py").write_text(TARGET)
    return tmp_path


def _run(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_one_line_bodies_get_their_line_events(target: Path) -> None:
    stats = _run(ONE_LINERS, str(target))
    assert stats["<lambda>"] == {"1": 25}
    assert stats["double"] == {"2": 25}
    assert stats["Box.get"] == {"4": 25}
    assert stats["Box.make"] == {"6": 25}
    assert stats["loop"] == {"8": 1, "9": 26, "10": 25, "11": 1}


ALONGSIDE = textwrap.dedent(
    """\
    import io, json, pstats, sys
    sys.path.insert(0, sys.argv[1])
    import coverage
    try:
        from profiling.tracing import Profile  # 3.15's name for cProfile
    except ImportError:
        from cProfile import Profile
    from lineprofiler import LineProfiler
    cov = coverage.Coverage(data_file=None, config_file=False, include=[sys.argv[1] + "/*"])
    if sys.version_info >= (3, 12):
        cov.set_option("run:core", "sysmon")
    cov.start()
    tracer = Profile()
    tracer.enable()
    import pytarget
    p = LineProfiler(project_folder=sys.argv[1])
    with p:
        pytarget.loop(25)
        tools = {i: sys.monitoring.get_tool(i) for i in range(6)} if sys.version_info >= (3, 12) else {}
    tracer.disable()
    cov.stop()
    text = io.StringIO()
    pstats.Stats(tracer, stream=text).print_stats("pytarget")
    out = {
        "lines": {name: {str(ln): s.hits for ln, s in st.lines.items()} for (_, name, _), st in p.get_stats().items()},
        "covered": sorted(cov.get_data().lines(pytarget.__file__) or []),
        "cprofile_saw_loop": "pytarget.py:7(loop)" in text.getvalue(),
        "tools": {str(k): v for k, v in tools.items() if v},
    }
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.11: one trace function per thread (test_coverage.py)")
def test_beside_cprofile_and_coverage(target: Path) -> None:
    result = _run(ALONGSIDE, str(target))
    assert result["lines"]["loop"] == {"8": 1, "9": 26, "10": 25, "11": 1}
    assert result["lines"]["double"] == {"2": 25}
    assert result["covered"] == list(range(1, 12))
    assert result["cprofile_saw_loop"]
    if sys.version_info >= (3, 12):
        holders = result["tools"]
        assert "lineprofiler" in holders.values(), holders
        assert len(holders) == 3, holders  # coverage, cProfile and us, each on an id of its own


SAMPLED = textwrap.dedent(
    """\
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    import pytarget
    from lineprofiler import LineProfiler
    p = LineProfiler(project_folder=sys.argv[1])
    calls = 0
    with p:
        print(os.getpid(), flush=True)
        end = time.monotonic() + float(sys.argv[2])
        while time.monotonic() < end:
            pytarget.double(calls)
            calls += 1
    (double,) = [st for (_, name, _), st in p.get_stats().items() if name == "double"]
    hits = {str(ln): s.hits for ln, s in double.lines.items()}
    print(json.dumps({"calls": calls, "hits": hits}), flush=True)
    """
)


def _can_attach() -> str | None:
    if sys.version_info < (3, 15):
        return "profiling.sampling (attach) is new in 3.15"
    try:
        scope = Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        scope = "0"
    if scope not in ("0", "1") and os.geteuid() != 0:
        return f"ptrace_scope is {scope}: this user may not attach to a process"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_can_attach() is not None, reason=str(_can_attach()))
def test_exact_while_sampled_by_profiling_sampling(target: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SAMPLED, str(target), "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    pid = int(child.stdout.readline())
    time.sleep(0.5)
    sampler = subprocess.run(
        [sys.executable, "-m", "profiling.sampling", "attach", "-d", "1", str(pid)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err[-2000:]
    assert sampler.returncode == 0, sampler.stderr[-2000:]
    assert "double" in sampler.stdout or "pytarget" in sampler.stdout, sampler.stdout[-2000:]
    result = json.loads(out.splitlines()[-1])
    assert result["calls"] > 1000
    assert result["hits"] == {"2": result["calls"]}
