"""trace="auto": a program with no phase() calls gets its project's function calls as phases
(recursion, generators, exceptions, threads), nothing of the standard library, narrowed by
trace_functions, beside a LineProfiler, and sys.monitoring given back at close; 3.11 says why
it cannot."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).with_name("auto_trace_program.py")
needs_monitoring = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is new in Python 3.12")


def run(tmp_path: Path, *globs: str, script: Path = PROGRAM) -> dict:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)  # the project's root, as a checkout's
    target = project / "train.py"
    shutil.copy(script, target)
    done = subprocess.run(
        [sys.executable, str(target), str(tmp_path / "run"), *globs], capture_output=True, text=True, timeout=120,
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_monitoring
def test_a_program_with_no_phases_gets_its_function_calls(tmp_path):
    out = run(tmp_path)
    phases = out["phases"]
    steps = 10
    assert phases["train.train"] == 1
    assert phases["train.train/train.load_batch"] == steps
    assert phases["train.worker/train.load_batch"] == 5  # the other thread's calls, under its own
    # fib(4) calls itself 8 times below the top call, nested as deep as the recursion goes
    fib = {path: n for path, n in phases.items() if path.startswith("train.train/train.fib")}
    assert fib["train.train/train.fib"] == steps and sum(fib.values()) == 9 * steps
    assert max(path.count("/") for path in fib) == 4
    assert phases["train.train/train.numbers"] == 4  # three yields and the return: each resumption
    assert phases["train.train/train.fails"] == 1  # left by an exception
    assert not [p for p in phases if "sleep" in p or "json" in p or "threading" in p]  # project code only
    assert out["repairs"] == {"mismatched_exits": 0, "stale_exits": 0, "dropped_entries": 0, "cross_stack_exits": 0}
    auto = out["auto_trace"]
    assert auto["unavailable_reason"] is None and auto["errors"] == 0 and auto["functions"] == 6
    assert out["spans"] == sum(phases.values())  # trace="auto" keeps every entry as a span
    assert "lineprofiler-auto" not in out["tools_after"]  # given back at close


@needs_monitoring
def test_trace_functions_narrows_to_the_matching_functions(tmp_path):
    phases = run(tmp_path, "load_*")["phases"]
    assert phases == {"train.load_batch": 15}


@needs_monitoring
def test_it_runs_beside_a_line_profiler(tmp_path):
    script = tmp_path / "both.py"
    script.write_text(
        PROGRAM.read_text().replace(
            "    with profiler:\n",
            "    from lineprofiler import LineProfiler\n"
            "    lines = LineProfiler(str(__import__('pathlib').Path(__file__).parent))\n"
            "    with profiler, lines:\n",
        ).replace("    (path,) =", "    assert any(key[1] == 'load_batch' for key in lines.get_stats())\n    (path,) =")
    )
    out = run(tmp_path, script=script)
    assert out["phases"]["train.train/train.load_batch"] == 10


def test_without_sys_monitoring_it_says_why(tmp_path):
    if sys.version_info >= (3, 12):
        pytest.skip("this Python has sys.monitoring: see the tests above")
    out = run(tmp_path)
    assert "needs sys.monitoring" in out["auto_trace"]["unavailable_reason"]
    assert out["phases"] == {}


@needs_monitoring
def test_the_code_cache_is_bounded_and_lets_go_of_code_a_program_compiled():
    """A program that compiles code as it runs (exec, namedtuple, templates) must not make the
    tracer keep every code object alive: past ``cache_max`` the decisions are made anew."""
    import gc
    import weakref

    from lineprofiler.accounting import _phases

    recorder = _phases.Recorder()
    recorder.start()
    project = compile("def work(): pass", "project.py", "exec").co_consts[0]
    admit = lambda code: "work" if code is project else None  # noqa: E731 - the filter, in one line
    tracer = _phases.AutoTracer(recorder, admit, sys.monitoring.DISABLE, cache_max=4)
    compiled = [compile(f"x = {i}", f"generated_{i}", "exec") for i in range(10)]
    first = weakref.ref(compiled[0])
    for round_ in range(3):
        assert tracer.on_start(project, 0) is None  # the project's: entered, never disabled
        for code in compiled if round_ == 0 else ():
            assert tracer.on_start(code, 0) is sys.monitoring.DISABLE
        tracer.on_return(project, 0, None)
    stats = tracer.stats()
    assert stats["cache_clears"] >= 2 and stats["errors"] == 0 and stats["exits_skipped"] == 0
    del compiled, code
    gc.collect()
    assert first() is None  # the cache let go of it
    (work,) = [node for node in recorder.snapshot()["phases"] if node["path"] == "work"]
    assert work["entries"] == 3  # the same phase after every clear
