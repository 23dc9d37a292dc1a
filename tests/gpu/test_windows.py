"""windows.py: torch.profiler and VizTracer windows over phase entries, one artifact per process.

The accounting core (``_phases.Recorder``) calls the window's watch callback on the n-th entry
into the watched phase and the annotate hooks on every phase; :func:`recorder` installs them on
a real recorder as the profiler's wiring does. torch.profiler (CPU build, Python 3.11) and
VizTracer are real too.
"""

from __future__ import annotations

import json
import os
import socket

import pytest
from lp_installed import HAS_TORCH, HAS_VIZTRACER, NO_TORCH, NO_VIZTRACER

from lineprofiler.accounting import _phases, gpu, windows
from lineprofiler.accounting.windows import Backend, Window

needs_viztracer = pytest.mark.skipif(not HAS_VIZTRACER, reason=NO_VIZTRACER)


def recorder(window: Window | None, annotator=None) -> _phases.Recorder:
    """A real recorder with the window's watch and the annotate hooks installed as the profiler
    installs them (accounting/_wiring.py): watch(n) on the n-th entry into the watched name."""
    rec = _phases.Recorder(measure_cpu=False)
    if window is not None and window.state != "unavailable":
        rec.set_watch(window.watch_name, window.on_entry)
    enter, exit_ = windows.annotate_hooks(annotator, window)
    if enter is not None or exit_ is not None:
        rec.set_annotate(enter, exit_)
    return rec


def work(n: int = 200) -> int:
    return sum(i * i for i in range(n))


def run_iterations(rec: _phases.Recorder, count: int, tensor_work=None) -> None:
    for _ in range(count):
        with rec.phase("iteration"):
            with rec.phase("mcts"):
                work()
                if tensor_work is not None:
                    tensor_work()


def phase_events(path, cat=None):
    events = json.loads(path.read_text())["traceEvents"]
    out = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name") in ("iteration", "mcts") and (cat is None or e.get("cat") == cat):
            out.setdefault(e["name"], []).append(e)
    return out


# ---- arguments ----


def test_backend_parse():
    assert Backend.parse("torch") is Backend.TORCH
    assert Backend.parse("VizTracer") is Backend.VIZTRACER
    assert Backend.parse(Backend.TORCH) is Backend.TORCH
    assert Backend.parse("Lines") is Backend.LINES
    assert Backend.parse(None) is None and Backend.parse("") is None
    with pytest.raises(ValueError, match="backend must be one of 'torch', 'viztracer', 'lines' or None, not 'nsys'"):
        Backend.parse("nsys")
    with pytest.raises(TypeError):  # the profiler's checks: a wrong type is a TypeError
        Backend.parse(3)


@pytest.mark.parametrize(
    "window, error",
    [((0, 5), ValueError), ((5, 5), ValueError), ((6, 5), ValueError), (("1", 2), TypeError), ((1.0, 2), TypeError),
     ((True, 3), TypeError), ((1,), TypeError), (None, TypeError)],
)
def test_bad_windows_are_refused(tmp_path, window, error):
    with pytest.raises(error, match="backend_window"):
        Window("viztracer", tmp_path, window, "iteration")


@pytest.mark.parametrize("phase, error", [("", ValueError), ("a/b", ValueError), (None, TypeError)])
def test_window_phase_is_a_leaf_name(tmp_path, phase, error):
    with pytest.raises(error, match="window_phase"):
        Window("viztracer", tmp_path, (1, 2), phase)


def test_artifact_names_are_per_process():
    assert windows.artifact_name(Backend.TORCH, "node07", 4242) == "torch_trace_node07_4242.json"
    assert windows.artifact_name(Backend.VIZTRACER, "gpu node/7", 1) == "viztracer_gpu%20node%2F7_1.json"


# ---- viztracer ----


@needs_viztracer
def test_viztracer_window_traces_the_window_with_phase_names(tmp_path):
    window = Window("viztracer", tmp_path, (2, 4), "iteration")
    assert window.state == "waiting" and window.unavailable_reason is None
    run_iterations(recorder(window), 6)
    assert window.state == "done", window.error
    expected = tmp_path / "backend" / f"viztracer_{socket.gethostname()}_{os.getpid()}.json"
    assert window.artifact == expected
    trace = json.loads(expected.read_text())  # loadable, complete JSON
    named = phase_events(expected, cat="lineprofiler.phase")
    # Entries 2 and 3 are inside the window; the 4th entry stops it before its phase opens.
    assert len(named["iteration"]) == 2 and len(named["mcts"]) == 2
    functions = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert any(name.startswith("work ") for name in functions)  # the user's code is traced
    assert not any("lineprofiler/accounting" in name for name in functions)  # the hooks' own code is not
    described = window.describe()
    assert described["artifact"] == f"backend/{expected.name}"
    assert (described["started_entry"], described["stopped_entry"], described["truncated"]) == (2, 4, False)
    assert [p.name for p in expected.parent.iterdir()] == [expected.name]  # no temp file left


def test_the_recorder_calls_watch_before_annotate_enter():
    # The window relies on this order: the watch starts the tracer, then the entry that
    # triggered it is annotated inside the trace.
    calls = []
    rec = _phases.Recorder(measure_cpu=False)
    rec.set_watch("iteration", lambda n: calls.append(("watch", n)))
    rec.set_annotate(lambda name: calls.append(("enter", name)), lambda name: calls.append(("exit", name)))
    for _ in range(2):
        with rec.phase("iteration"), rec.phase("mcts"):
            pass
    assert calls == [("watch", 1), ("enter", "iteration"), ("enter", "mcts"), ("exit", "mcts"), ("exit", "iteration"),
                     ("watch", 2), ("enter", "iteration"), ("enter", "mcts"), ("exit", "mcts"), ("exit", "iteration")]


@needs_viztracer
def test_stopping_the_profiler_inside_the_window_writes_a_truncated_trace(tmp_path):
    window = Window("viztracer", tmp_path, (2, 100), "iteration")
    run_iterations(recorder(window), 5)
    assert window.state == "active"
    window.stop()
    assert window.state == "done" and window.truncated
    assert len(phase_events(window.artifact, cat="lineprofiler.phase")["iteration"]) == 4
    window.stop()  # idempotent
    window.close()
    assert window.describe()["truncated"] is True


@needs_viztracer
def test_a_window_that_never_opens_writes_nothing(tmp_path):
    window = Window("viztracer", tmp_path, (10, 20), "iteration")
    run_iterations(recorder(window), 5)
    window.close()
    assert window.state == "waiting" and window.artifact is None
    assert not (tmp_path / "backend").exists()


@needs_viztracer
def test_start_failure_is_recorded_not_raised(tmp_path):
    window = Window("viztracer", tmp_path, (1, 3), "iteration", options={"no_such_option": 1})
    run_iterations(recorder(window), 4)
    assert window.state == "failed"
    # TypeError on 3.12+; VizTracer's C constructor turns it into a SystemError on 3.11.
    assert window.error.split(":")[0] in ("TypeError", "SystemError")
    assert not (tmp_path / "backend").exists()


@needs_viztracer
def test_save_failure_is_recorded_not_raised(tmp_path):
    blocker = tmp_path / "run"
    blocker.write_text("a file where the run directory should be")
    window = Window("viztracer", blocker, (1, 3), "iteration")
    run_iterations(recorder(window), 4)
    assert window.state == "failed"
    assert window.error.split(":")[0] in ("FileExistsError", "NotADirectoryError")


@needs_viztracer
def test_a_forked_child_writes_its_own_file(tmp_path):
    window = Window("viztracer", tmp_path, (2, 4), "iteration")
    rec = recorder(window)
    run_iterations(rec, 2)  # the window is open in the parent when it forks
    assert window.state == "active"
    pid = os.fork()
    if pid == 0:  # the child: what the profiler's fork hook does (reset restarts the watch count)
        code = 1
        try:
            window.after_fork_child()
            rec.reset()
            run_iterations(rec, 5)
            code = 0 if window.state == "done" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    run_iterations(rec, 3)
    assert window.state == "done"
    files = sorted(p.name for p in (tmp_path / "backend").iterdir())
    host = socket.gethostname()
    assert files == sorted([f"viztracer_{host}_{os.getpid()}.json", f"viztracer_{host}_{pid}.json"])
    for name in files:
        assert len(phase_events(tmp_path / "backend" / name, cat="lineprofiler.phase")["iteration"]) == 2


def test_missing_viztracer_is_a_no_op_with_a_reason(run_python, tmp_path):
    out = run_python(
        "import json, sys\n"
        "sys.modules['viztracer'] = None\n"
        "from lineprofiler.accounting import metadata, windows\n"
        f"w = windows.Window('viztracer', {str(tmp_path)!r}, (1, 3), 'iteration')\n"
        "for n in range(1, 6):\n"
        "    w.on_entry(n)\n"
        "print(json.dumps([w.describe(), windows.annotate_hooks(None, w) == (None, None),"
        " metadata.metadata({'backend': w.describe()})['backend']]))\n"
    )
    described, no_hooks, in_metadata = json.loads(out)
    assert described["state"] == "unavailable"
    assert described["unavailable_reason"] == (
        "import of viztracer is blocked in this process (sys.modules['viztracer'] is None)"
    )
    assert described["available"] is False
    assert no_hooks
    assert in_metadata == described
    assert not (tmp_path / "backend").exists()


@needs_viztracer
def test_contribute_puts_the_window_in_the_worker_document(tmp_path):
    window = Window("viztracer", tmp_path, (1, 2), "iteration")
    document: dict = {}
    window.contribute(document)
    assert document["backend_window"]["state"] == "waiting"
    assert document["backend_window"]["window"] == [1, 2]
    json.dumps(document)


# ---- torch ----


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_torch_window_writes_a_chrome_trace_with_phase_names(tmp_path):
    import torch

    window = Window("torch", tmp_path, (3, 6), "iteration")
    run_iterations(recorder(window), 8, tensor_work=lambda: torch.ones(32) @ torch.ones(32))
    assert window.state == "done", window.error
    expected = tmp_path / "backend" / f"torch_trace_{socket.gethostname()}_{os.getpid()}.json"
    assert window.artifact == expected
    named = phase_events(expected)
    assert len(named["iteration"]) == 3 and len(named["mcts"]) == 3
    ops = {e["name"] for e in json.loads(expected.read_text())["traceEvents"] if e.get("ph") == "X"}
    assert "aten::dot" in ops or "aten::matmul" in ops  # torch's own events, inside the window


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_torch_window_with_annotate_has_no_duplicate_ranges(tmp_path):
    import torch  # noqa: F401

    window = Window("torch", tmp_path, (2, 4), "iteration")
    annotator = gpu.Annotator(nvtx=False)
    rec = recorder(window, annotator)
    assert window.record_phases is False  # annotate's record_function covers it
    run_iterations(rec, 5)
    named = phase_events(window.artifact)
    assert len(named["iteration"]) == 2 and len(named["mcts"]) == 2
    assert annotator.depth() == 0


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_torch_start_failure_is_recorded(tmp_path):
    window = Window("torch", tmp_path, (1, 2), "iteration", options={"no_such_option": True})
    run_iterations(recorder(window), 3)
    assert window.state == "failed" and window.error.startswith("TypeError:")


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here")
def test_torch_window_without_torch_is_unavailable(tmp_path):
    window = Window("torch", tmp_path, (1, 2), "iteration")
    assert window.state == "unavailable"
    assert window.unavailable_reason == "torch is not installed"
    run_iterations(recorder(window), 3)
    assert not (tmp_path / "backend").exists()


@needs_viztracer
def test_annotate_hooks_combinations(tmp_path, monkeypatch):
    assert windows.annotate_hooks(None, None) == (None, None)
    annotator = gpu.Annotator(nvtx=False, record_function=False)
    enter, exit = windows.annotate_hooks(annotator, None)
    assert enter == annotator.enter and exit == annotator.exit
    window = Window("viztracer", tmp_path, (1, 2), "iteration")
    enter, exit = windows.annotate_hooks(None, window)
    assert enter == window.enter and exit == window.exit
    enter, exit = windows.annotate_hooks(annotator, window)  # both: composed
    enter("iteration")
    assert annotator.depth() == 1
    exit("iteration")
    assert annotator.depth() == 0
