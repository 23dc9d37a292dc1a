"""phase(name, sync=True) through the public Profiler.

Without CUDA (every machine here) it is a no-op: the phase records exactly as without it. The one
stand-in in these tests is ``CUDA_TORCH`` below, a module in place of a CUDA build of torch: a
CUDA device cannot exist here, and the wiring (synchronize at both ends, before each clock read)
must still be checked through the public Profiler.
"""

from __future__ import annotations

import json

import pytest
from lp_installed import HAS_TORCH, NEEDS_CPU_TORCH, NO_TORCH, TORCH_HAS_CUDA
from lp_integration_helpers import phases_by_path, worker_documents

BODY = """
from lineprofiler.accounting import Profiler
p = Profiler(run_dir=RUN_DIR, snapshot_interval_s=None)
{between}
for _ in range(4):
    with p.phase("step"):
        with p.phase("forward", sync=True):
            sum(range(100))
        with p.phase("plain"):
            pass
p.close()
"""


def run_sync(run_python, tmp_path, before: str = "", between: str = "") -> tuple[dict, dict, dict]:
    run_dir = tmp_path / "run"
    code = before + f"\nRUN_DIR = {str(run_dir)!r}\n" + BODY.format(between=between)
    run_python(code)
    (document,) = worker_documents(run_dir)
    run_level = json.loads((run_dir / "metadata.json").read_text())  # written with the first snapshot
    own = json.loads(next((run_dir / "metadata").rglob("*.json")).read_text())  # rewritten at close
    return document, run_level, own


def assert_recorded(document: dict) -> None:
    phases = phases_by_path(document)
    assert {path: p["entries"] for path, p in phases.items()} == {"step": 4, "step/forward": 4, "step/plain": 4}
    assert phases["step/forward"]["sync"] is True and phases["step/plain"]["sync"] is False
    assert phases["step/forward"]["wall_ns"] > 0
    assert document["errors"] == [] and document["repairs"]["mismatched_exits"] == 0


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.skipif(TORCH_HAS_CUDA, reason=NEEDS_CPU_TORCH)
def test_sync_with_the_cpu_build_of_torch_is_a_no_op(run_python, tmp_path):
    document, run_level, own = run_sync(run_python, tmp_path, before="import torch\n")
    assert_recorded(document)
    assert run_level["sync"]["mode"] is None
    assert run_level["sync"]["unavailable_reason"].startswith("sync=True is a no-op: torch ")
    assert run_level["sync"]["unavailable_reason"].endswith("is built without CUDA")
    assert own["sync"] == run_level["sync"]


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_torch_imported_after_the_profiler_is_picked_up(run_python, tmp_path):
    # The first snapshot (which writes metadata.json) comes before the import of torch.
    document, run_level, own = run_sync(run_python, tmp_path, between="p.flush()\nimport torch")
    assert_recorded(document)
    assert run_level["sync"]["mode"] == "pending"  # torch installed, not imported yet
    if TORCH_HAS_CUDA:
        assert own["sync"]["mode"] == "torch.cuda.synchronize"
    else:
        assert own["sync"]["mode"] is None and "built without CUDA" in own["sync"]["unavailable_reason"]


def test_sync_without_torch_is_a_no_op(run_python, tmp_path):
    document, run_level, _ = run_sync(run_python, tmp_path, before="import sys\nsys.modules['torch'] = None\n")
    assert_recorded(document)
    assert run_level["sync"] == {
        "mode": None,
        "available": False,
        "unavailable_reason": (
            "sync=True is a no-op: import of torch is blocked in this process (sys.modules['torch'] is None)"
        ),
    }


# A CUDA build of torch, as far as make_sync looks at it: synchronize() takes DRAIN_S (the GPU
# finishing queued work) and records when it started and ended, on the core's clock.
CUDA_TORCH = """
import importlib.machinery, sys, time, types
DRAIN_S = 0.05
calls = []
def synchronize():
    start = time.monotonic_ns()
    time.sleep(DRAIN_S)
    calls.append((start, time.monotonic_ns()))
torch = types.ModuleType("torch")
torch.__spec__ = importlib.machinery.ModuleSpec("torch", None)
torch._C = types.SimpleNamespace()
torch.cuda = types.SimpleNamespace(_is_compiled=lambda: True, is_initialized=lambda: True, synchronize=synchronize)
sys.modules["torch"] = torch
"""


def test_sync_drains_the_device_before_each_clock_read(run_python, tmp_path):
    run_dir = tmp_path / "run"
    out = run_python(
        CUDA_TORCH
        + f"""
import json
from lineprofiler.accounting import Profiler
from lineprofiler.runfiles import workerfile
p = Profiler(run_dir={str(run_dir)!r}, snapshot_interval_s=None)
with p.phase("plain"):
    pass
assert calls == []  # a phase without sync=True never calls it
spans = []
for _ in range(3):
    outside_start = time.monotonic_ns()
    with p.phase("forward", sync=True):
        inside = time.monotonic_ns()
    spans.append((outside_start, inside, time.monotonic_ns()))
p.close()
document = workerfile.read_worker_file(p.path)
print(json.dumps({{"calls": calls, "spans": spans, "phases": document["phases"], "errors": document["errors"]}}))
"""
    )
    result = json.loads(out.stdout)
    calls, spans = result["calls"], result["spans"]
    assert len(calls) == 6  # entry and exit of each of the three entries
    forward = next(p for p in result["phases"] if p["path"] == "forward")
    assert forward["entries"] == 3 and result["errors"] == []
    for i, (outside_start, inside, outside_end) in enumerate(spans):
        entry_sync, exit_sync = calls[2 * i], calls[2 * i + 1]
        # Entry: drained before the body starts; the phase's clock starts after the drain.
        assert outside_start <= entry_sync[0] and entry_sync[1] <= inside
        # Exit: drained after the body, before the `with` statement is over.
        assert inside <= exit_sync[0] and exit_sync[1] <= outside_end
    # The recorded wall time covers each exit drain (the work the phase queued) and none of the
    # entry drains (work queued before it): per entry, t0 >= entry drain end, t1 >= exit drain end.
    assert forward["min_ns"] >= min(end - start for start, end in calls[1::2])
    assert forward["wall_ns"] >= sum(end - start for start, end in calls[1::2])
    pairs = zip(calls[0::2], spans, strict=True)
    assert forward["wall_ns"] <= sum(o_end - e_end for (_, e_end), (_, _, o_end) in pairs)
