"""Backend windows and annotate=True through the public Profiler, on real torch and VizTracer.

A window starts on the start-th entry into ``window_phase`` and stops on the stop-th, so its
trace holds entries ``start .. stop-1``; the phases entered meanwhile appear in it by name.
"""

from __future__ import annotations

import json
import os
import socket

import pytest
from lp_installed import HAS_NVTX, HAS_TORCH, HAS_VIZTRACER, NO_TORCH, NO_VIZTRACER
from lp_integration_helpers import trace_events, worker_documents

# A child script's common part: phases around a little real work, `n` iterations.
LOOP = """
def work():
    return sum(i * i for i in range(300))

def loop(p, n, tensor=None):
    for _ in range(n):
        with p.phase("iteration"):
            with p.phase("forward"):
                work()
                if tensor is not None:
                    tensor()
"""


def named(events: list[dict], names=("iteration", "forward"), cat: str | None = None) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {name: [] for name in names}
    for event in events:
        if event.get("ph") == "X" and event.get("name") in out and (cat is None or event.get("cat") == cat):
            out[event["name"]].append(event)
    return out


def nested(outer: list[dict], inner: list[dict]) -> bool:
    """Every inner event lies inside one outer event (timestamps in µs)."""
    return all(
        any(o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 1 for o in outer) for i in inner
    )


def artifact(run_dir, stem: str, pid: int):
    return run_dir / "backend" / f"{stem}_{socket.gethostname()}_{pid}.json"


# ---------------------------------------------------------------------------------- viztracer


@pytest.mark.skipif(not HAS_VIZTRACER, reason=NO_VIZTRACER)
def test_viztracer_window_writes_a_loadable_trace_with_the_phase_names(run_python, tmp_path):
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + f"""
import os
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(3, 6), window_phase="iteration",
             snapshot_interval_s=None)
loop(p, 8)
p.close()
print(os.getpid())
"""
    )
    pid = int(out.stdout)
    path = artifact(run_dir, "viztracer", pid)
    assert sorted(p.name for p in (run_dir / "backend").iterdir()) == [path.name]  # no temp file
    events = trace_events(path)  # loadable JSON
    phases = named(events, cat="lineprofiler.phase")
    assert len(phases["iteration"]) == 3 and len(phases["forward"]) == 3  # entries 3, 4 and 5
    assert nested(phases["iteration"], phases["forward"])
    functions = {e["name"] for e in events if e.get("ph") == "X"}
    assert any(name.startswith("work ") for name in functions)  # the user's code is traced
    assert not any("lineprofiler/accounting" in name for name in functions)  # the profiler's hooks are not
    (document,) = worker_documents(run_dir)
    window = document["backend_window"]
    assert (window["state"], window["started_entry"], window["stopped_entry"]) == ("done", 3, 6)
    assert window["artifact"] == f"backend/{path.name}" and window["truncated"] is False
    own = json.loads(next((run_dir / "metadata").rglob("*.json")).read_text())
    assert own["backend"]["state"] == "done" and own["backend"]["artifact"] == window["artifact"]
    # The profiler's own accounting is unchanged by the window: every entry is counted.
    counts = {p["path"]: p["entries"] for p in document["phases"]}
    assert counts == {"iteration": 8, "iteration/forward": 8}


@pytest.mark.skipif(not HAS_VIZTRACER, reason=NO_VIZTRACER)
def test_a_window_open_at_close_is_cut_and_written_truncated(run_python, tmp_path):
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + f"""
import os
from lineprofiler.accounting import Profiler
with Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(2, 100), window_phase="iteration",
              snapshot_interval_s=None) as p:
    loop(p, 5)
print(os.getpid())
"""
    )
    path = artifact(run_dir, "viztracer", int(out.stdout))
    assert len(named(trace_events(path), cat="lineprofiler.phase")["iteration"]) == 4
    (document,) = worker_documents(run_dir)
    assert document["backend_window"]["state"] == "done" and document["backend_window"]["truncated"] is True


@pytest.mark.skipif(not HAS_VIZTRACER, reason=NO_VIZTRACER)
def test_a_window_that_exits_with_the_process_is_written_at_exit(run_python, tmp_path):
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + f"""
import os
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(2, 100), window_phase="iteration")
loop(p, 4)
print(os.getpid())  # no close(): the exit writes the trace
"""
    )
    path = artifact(run_dir, "viztracer", int(out.stdout))
    assert len(named(trace_events(path), cat="lineprofiler.phase")["iteration"]) == 3


@pytest.mark.skipif(not HAS_VIZTRACER, reason=NO_VIZTRACER)
def test_a_window_open_when_sigterm_ends_the_process_is_written(tmp_path):
    """Slurm's time limit: SIGTERM with the default action ends the process without atexit; the
    window open at that moment is still written, cut short, and the worker file says so."""
    import signal
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    script = tmp_path / "child.py"
    script.write_text(
        LOOP
        + f"""
import os, sys
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(2, 10_000), window_phase="iteration",
             snapshot_interval_s=None)
loop(p, 3)
print(os.getpid(), flush=True)
while True:
    loop(p, 1)
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid = int(child.stdout.readline())
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM  # still ended by the signal itself
    finally:
        child.kill()
    path = artifact(run_dir, "viztracer", pid)
    assert len(named(trace_events(path), cat="lineprofiler.phase")["iteration"]) >= 2
    (document,) = worker_documents(run_dir)
    assert document["times"]["status"] == "signalled"
    assert document["backend_window"]["state"] == "done" and document["backend_window"]["truncated"] is True


@pytest.mark.skipif(not HAS_VIZTRACER, reason=NO_VIZTRACER)
def test_each_forked_process_counts_its_own_entries_and_writes_its_own_trace(run_python, tmp_path):
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + f"""
import os
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(2, 4), window_phase="iteration",
             snapshot_interval_s=None)
loop(p, 2)  # the window is open in the parent when it forks
pid = os.fork()
if pid == 0:
    loop(p, 5)
    p.close()
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
loop(p, 3)
p.close()
print(os.getpid(), pid)
"""
    )
    parent, child = map(int, out.stdout.split())
    files = sorted(p.name for p in (run_dir / "backend").iterdir())
    assert files == sorted(artifact(run_dir, "viztracer", pid).name for pid in (parent, child))
    for pid in (parent, child):
        phases = named(trace_events(artifact(run_dir, "viztracer", pid)), cat="lineprofiler.phase")
        assert len(phases["iteration"]) == 2, pid  # entries 2 and 3 of that process
    windows = {d["identity"]["pid"]: d["backend_window"] for d in worker_documents(run_dir)}
    assert windows[child]["state"] == windows[parent]["state"] == "done"
    assert windows[child]["artifact"] != windows[parent]["artifact"]


# ---------------------------------------------------------------------------------- torch


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_torch_window_writes_a_chrome_trace_with_the_phase_names(run_python, tmp_path):
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + f"""
import os
from lineprofiler.accounting import Profiler, windows
p = Profiler(run_dir={str(run_dir)!r}, backend=windows.Backend.TORCH, backend_window=(3, 6),
             window_phase="iteration", snapshot_interval_s=None)
import torch  # after the profiler: the window imports nothing until it starts
loop(p, 8, tensor=lambda: torch.ones(64) @ torch.ones(64))
p.close()
print(os.getpid())
"""
    )
    path = artifact(run_dir, "torch_trace", int(out.stdout))
    assert sorted(p.name for p in (run_dir / "backend").iterdir()) == [path.name]
    events = trace_events(path)  # a loadable Chrome trace
    phases = named(events)
    assert len(phases["iteration"]) == 3 and len(phases["forward"]) == 3
    assert nested(phases["iteration"], phases["forward"])
    ops = {e["name"] for e in events if e.get("ph") == "X"}
    assert "aten::dot" in ops or "aten::matmul" in ops  # torch's own events inside the window
    (document,) = worker_documents(run_dir)
    assert document["backend_window"]["state"] == "done"
    assert document["backend_window"]["artifact"] == f"backend/{path.name}"


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.parametrize("torch_first", [True, False], ids=["torch-imported-first", "torch-imported-later"])
def test_torch_window_with_annotate_has_one_range_per_phase(run_python, tmp_path, torch_first):
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + ("import torch\n" if torch_first else "")
        + f"""
import os
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="torch", backend_window=(2, 4), window_phase="iteration",
             annotate=True, snapshot_interval_s=None)
import torch
loop(p, 5)
p.close()
print(os.getpid())
"""
    )
    phases = named(trace_events(artifact(run_dir, "torch_trace", int(out.stdout))))
    # annotate's record_function and the window's would both land here: exactly one each
    assert len(phases["iteration"]) == 2 and len(phases["forward"]) == 2


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.parametrize("torch_first", [True, False], ids=["torch-imported-first", "torch-imported-later"])
def test_annotate_shows_the_phase_names_in_a_torch_profiler_capture(run_python, tmp_path, torch_first):
    trace = tmp_path / "capture.json"
    run_python(
        LOOP
        + ("import torch\n" if torch_first else "")
        + f"""
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(tmp_path / "run")!r}, annotate=True, snapshot_interval_s=None)
import torch
import torch.profiler
with p.phase("outside"):  # before the capture: not in it
    pass
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as capture:
    loop(p, 3, tensor=lambda: torch.ones(16) @ torch.ones(16))
capture.export_chrome_trace({str(trace)!r})
p.close()
"""
    )
    phases = named(trace_events(trace), names=("iteration", "forward", "outside"))
    assert len(phases["iteration"]) == 3 and len(phases["forward"]) == 3
    assert phases["outside"] == []
    assert nested(phases["iteration"], phases["forward"])


@pytest.mark.skipif(not HAS_NVTX, reason="the nvtx package is not installed")
def test_annotate_pushes_nvtx_ranges_an_nvtx_tool_sees(run_python, tmp_path, nvtx_tool):
    log = tmp_path / "nvtx.log"
    run_python(
        f"""
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(tmp_path / "run")!r}, annotate=True, snapshot_interval_s=None)
with p.phase("iteration"):
    with p.phase("forward"):
        pass
    try:
        with p.phase("backward"):
            raise ValueError
    except ValueError:
        pass
p.close()
""",
        env={"NVTX_INJECTION64_PATH": str(nvtx_tool), "LP_NVTX_LOG": str(log)},
    )
    assert log.read_text().splitlines() == [
        "PUSH iteration",
        "PUSH forward",
        "POP",
        "PUSH backward",
        "POP",  # the exception still closes its range
        "POP",
    ]
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["annotate"]["nvtx"] == "nvtx" and meta["annotate"]["errors"] == 0


def test_viztracer_window_and_annotate_together(run_python, tmp_path):
    if not HAS_VIZTRACER:
        pytest.skip(NO_VIZTRACER)
    run_dir = tmp_path / "run"
    out = run_python(
        LOOP
        + f"""
import os
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(1, 3), window_phase="iteration",
             annotate=True, snapshot_interval_s=None)
loop(p, 4)
p.close()
print(os.getpid())
"""
    )
    phases = named(trace_events(artifact(run_dir, "viztracer", int(out.stdout))), cat="lineprofiler.phase")
    assert len(phases["iteration"]) == 2 and len(phases["forward"]) == 2
    (document,) = worker_documents(run_dir)
    assert document["errors"] == []
    assert os.path.exists(run_dir / "metadata.json")
