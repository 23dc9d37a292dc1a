"""The profiler and sys.settrace-based tools (debuggers, coverage's C tracer)."""

import sys
import threading

import lp_workloads as wl
import pytest
from lp_helpers import hits

from lineprofiler import LineProfiler


def make_tracer(seen):
    def local(frame, event, arg):
        if event == "line" and frame.f_code is wl.loop.__code__:
            seen.append(frame.f_lineno)
        return local

    def global_(frame, event, arg):
        return local if frame.f_code is wl.loop.__code__ else None

    return global_


def test_previous_trace_function_is_restored(here):
    seen: list[int] = []
    tracer = make_tracer(seen)
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        p = LineProfiler(project_folder=here)
        with p:
            wl.loop(3)
        assert sys.gettrace() is tracer
        wl.loop(3)  # the previous tracer works again
    finally:
        sys.settrace(old)
    per_run = 1 + 4 + 3 + 1
    if sys.version_info >= (3, 12):
        assert len(seen) == 2 * per_run  # sys.monitoring leaves settrace alone: both ran
    else:
        assert len(seen) == per_run  # 3.11: suspended inside the block, restored after
    assert hits(p.get_stats(), wl.loop)["body"] == 3


def test_settrace_with_gettrace_value_keeps_profiling(here):
    # Code that saves and restores sys.gettrace() inside the block must not stop the profiler.
    p = LineProfiler(project_folder=here)
    before = sys.gettrace()
    with p:
        saved = sys.gettrace()
        sys.settrace(None)
        sys.settrace(saved)
        wl.loop(4)
    assert hits(p.get_stats(), wl.loop)["body"] == 4
    # Whatever trace function was there before (none, or a debugger's) is back afterwards.
    assert sys.gettrace() is before


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 mechanics")
def test_311_hooks_every_running_thread_and_unhooks_it(here):
    ready, go, done = threading.Event(), threading.Event(), threading.Event()
    traces = {}

    def worker():
        ready.set()
        go.wait()
        traces["during"] = sys.gettrace()
        done.wait()
        traces["after"] = sys.gettrace()

    t = threading.Thread(target=worker)
    t.start()
    ready.wait()
    p = LineProfiler(project_folder=here)
    with p:
        assert type(sys.gettrace()).__name__ == "Hook"
        go.set()
        while "during" not in traces:
            threading.Event().wait(0.001)
    done.set()
    t.join()
    assert type(traces["during"]).__name__ == "Hook"
    assert traces["after"] is None
    assert sys.gettrace() is None


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 mechanics")
def test_311_stale_hook_restored_after_disable_removes_itself(here):
    p = LineProfiler(project_folder=here)
    with p:
        saved = sys.gettrace()  # our per-thread hook
    assert sys.gettrace() is None
    sys.settrace(saved)  # code restoring what it saved, after the block ended
    try:
        wl.loop(2)  # the first call event reaches the stale hook, which removes itself
        assert sys.gettrace() is None
    finally:
        sys.settrace(None)
    assert not any(k.qualname == "loop" for k in p.get_stats())


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 mechanics")
def test_311_a_thread_untraces_itself_after_the_window_mark_and_keeps_its_lines(here):
    """After pause_after()'s mark (a sampled window's end) the trace function is still installed
    until stop() gets the GIL; a thread that runs a line meanwhile takes it off itself, and the
    lines recorded before the mark are kept."""
    p = LineProfiler(project_folder=here)
    p.enable()
    wl.loop(3)
    assert type(sys.gettrace()).__name__ == "Hook"
    p.pause_after(0.0)
    wl.loop(5)  # its events meet the paused tracer (this file's lines are the project's too)
    assert sys.gettrace() is None
    p.stop_recording()
    assert sys.gettrace() is None
    loop = next(fs for key, fs in p.get_stats().items() if key.qualname == "loop")
    assert max(line.hits for line in loop.lines.values()) == 4  # loop(3)'s, not loop(5)'s


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 installs through the audited settrace path")
def test_311_refused_install_leaves_nothing_behind(tmp_path):
    """An audit hook that refuses sys.settrace makes enable() fail cleanly: the error reaches the
    caller, no thread keeps a trace function, and the profiler is not enabled."""
    import subprocess
    import textwrap

    script = tmp_path / "audit.py"
    script.write_text(textwrap.dedent(
        """\
        import sys, threading
        from lineprofiler import LineProfiler

        def refuse(event, args):
            if event == "sys.settrace":
                raise PermissionError("no tracing here")

        p = LineProfiler(project_folder=sys.argv[1])
        sys.addaudithook(refuse)
        try:
            p.enable()
        except PermissionError as e:
            print("refused:", e)
        assert not p.enabled
        assert sys.gettrace() is None and threading.gettrace() is None
        print("clean")
        """
    ))
    out = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["refused: no tracing here", "clean"]
