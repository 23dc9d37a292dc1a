"""gpu.py: sync=True, annotate=True (NVTX and record_function) and the VRAM/NVML attachment.

CUDA cannot exist on the machines that run CI. Where a test needs torch *with* CUDA there it uses
``cuda_torch``, a stand-in module that has only the torch.cuda calls gpu.py makes and records
them; everything else runs against the real CPU build of torch (Python 3.11) and the real nvtx
package, seen through a real NVTX tool library. On a machine with a GPU and a CUDA build of
torch the tests marked ``NEEDS_CUDA`` drive the real thing instead (``benchmarks/gpu_check.py``
covers the rest).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import threading
import types

import pytest
from lp_installed import (
    CUDA_DEVICE,
    HAS_NVTX,
    HAS_TORCH,
    NEEDS_CPU_TORCH,
    NEEDS_CUDA,
    NO_NVTX,
    NO_TORCH,
    TORCH_HAS_CUDA,
)

from lineprofiler.accounting import capabilities, gpu


class CudaTorch:
    """Stand-in for a CUDA build of torch: torch.cuda's calls used by gpu.py, recorded."""

    def __init__(self) -> None:
        self.initialized = False
        self.syncs = 0
        self.resets = 0
        self.stats: dict[int, dict[str, int]] = {}
        module = types.ModuleType("torch")
        module.__spec__ = importlib.machinery.ModuleSpec("torch", None)
        module._C = types.SimpleNamespace()
        module.cuda = types.SimpleNamespace(
            _is_compiled=lambda: True,
            is_initialized=lambda: self.initialized,
            synchronize=self._sync,
            device_count=lambda: 2,
            memory_stats=lambda device: dict(self.stats.get(device, {})),
            reset_peak_memory_stats=self._reset,
        )
        self.module = module

    def _sync(self) -> None:
        self.syncs += 1

    def _reset(self, *args: object) -> None:
        self.resets += 1

    def set(self, device: int, allocated: int, allocated_peak: int, reserved: int, reserved_peak: int) -> None:
        self.stats[device] = {
            "allocated_bytes.all.current": allocated,
            "allocated_bytes.all.peak": allocated_peak,
            "reserved_bytes.all.current": reserved,
            "reserved_bytes.all.peak": reserved_peak,
        }


@pytest.fixture
def cuda_torch(monkeypatch):
    fake = CudaTorch()
    monkeypatch.setitem(sys.modules, "torch", fake.module)
    return fake


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)


# ---- sync=True ----


def test_sync_is_none_when_torch_is_absent(no_torch):
    assert gpu.make_sync() is None


def test_sync_drains_only_once_cuda_is_initialised(cuda_torch):
    sync = gpu.make_sync()
    assert sync is not None
    sync()
    assert cuda_torch.syncs == 0  # no context yet: nothing queued, and syncing would create one
    cuda_torch.initialized = True
    sync()
    sync()
    assert cuda_torch.syncs == 2


def test_sync_settles_when_torch_is_imported_later(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(capabilities, "torch", lambda: capabilities.Capability("torch", True))
    sync = gpu.make_sync()
    assert sync is not None  # installed but not imported yet
    sync()  # a no-op until torch appears
    fake = CudaTorch()
    fake.initialized = True
    monkeypatch.setitem(sys.modules, "torch", fake.module)
    sync()
    sync()
    assert fake.syncs == 2


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.skipif(TORCH_HAS_CUDA, reason=NEEDS_CPU_TORCH)
def test_sync_with_the_cpu_build_of_torch(run_python):
    out = run_python(
        "import sys\n"
        "from lineprofiler.accounting import gpu\n"
        "late = gpu.make_sync()\n"
        "late()\n"
        "print(type(late).__name__, 'torch' in sys.modules)\n"
        "import torch\n"
        "late()\n"
        "print(gpu.make_sync(), late._resolved)\n"
    )
    assert out.splitlines() == ["_LateSync False", "None None"]
@pytest.mark.skipif(not CUDA_DEVICE, reason=NEEDS_CUDA)
def test_sync_waits_for_queued_kernels_on_a_cuda_build(run_python):
    # Built before torch is imported: a late sync that settles on torch.cuda.synchronize, a no-op
    # until CUDA is initialised. After it returns, the queued work is done (the event says so).
    out = run_python(
        "import json, time\n"
        "from lineprofiler.accounting import gpu\n"
        "late = gpu.make_sync()\n"
        "import torch\n"
        "late()  # CUDA not initialised yet: returns at once, creates no context\n"
        "before_init = torch.cuda.is_initialized()\n"
        "a = torch.randn(4096, 4096, device='cuda')\n"
        "late()\n"
        "x = a\n"
        "for _ in range(32):\n"
        "    x = x @ a / 64\n"
        "done = torch.cuda.Event()\n"
        "done.record()\n"
        "queued = not done.query()\n"
        "t0 = time.perf_counter()\n"
        "late()\n"
        "waited = time.perf_counter() - t0\n"
        "print(json.dumps([before_init, queued, done.query(), waited, gpu.describe_sync(late)]))\n"
    )
    before_init, queued, done_after, waited, described = json.loads(out)
    assert before_init is False
    assert queued, "32 products of 4096x4096 should still be running right after they are queued"
    assert done_after is True  # sync returned only once they had finished
    assert waited > 0.005, waited
    assert described["mode"] == "torch.cuda.synchronize", described





# ---- annotate=True: record_function ----


def _trace_events(prof, tmp_path, names):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    return [e for e in events if e.get("name") in names and e.get("ph") == "X"]


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_record_function_shows_phases_in_a_torch_trace(tmp_path):
    import torch
    from torch.profiler import ProfilerActivity, profile

    annotator = gpu.Annotator()
    assert annotator.record_function_active
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            annotator.enter("iteration")
            annotator.enter("mcts")
            torch.ones(64).sum()
            annotator.exit("mcts")
            annotator.exit("iteration")
    events = _trace_events(prof, tmp_path, {"iteration", "mcts"})
    iterations = sorted((e for e in events if e["name"] == "iteration"), key=lambda e: e["ts"])
    searches = sorted((e for e in events if e["name"] == "mcts"), key=lambda e: e["ts"])
    assert len(iterations) == len(searches) == 3
    for outer, inner in zip(iterations, searches, strict=True):
        assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    assert annotator.depth() == 0
    assert annotator.errors == 0


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_a_skipped_exit_is_closed_in_lifo_order(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    annotator = gpu.Annotator(nvtx=False)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        annotator.enter("iteration")
        annotator.enter("env_step")  # its exit never comes: an exception skipped it
        annotator.exit("iteration")
        annotator.exit("never_entered")  # ignored
    assert annotator.depth() == 0
    events = {e["name"]: e for e in _trace_events(prof, tmp_path, {"iteration", "env_step"})}
    assert set(events) == {"iteration", "env_step"}
    outer, inner = events["iteration"], events["env_step"]
    assert inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_without_torch_or_nvtx_the_annotator_does_nothing(no_torch, monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)
    annotator = gpu.Annotator()
    assert annotator.describe() == {"nvtx": None, "record_function": False, "errors": 0, "last_error": None}
    annotator.enter("a")
    annotator.exit("a")
    assert annotator.depth() == 0


def test_each_thread_has_its_own_stack(no_torch, monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)
    annotator = gpu.Annotator()
    annotator.enter("main_phase")
    seen = []

    def worker():
        annotator.enter("thread_phase")
        seen.append(annotator.depth())
        annotator.exit("main_phase")  # not this thread's: nothing to close
        seen.append(annotator.depth())
        annotator.exit("thread_phase")
        seen.append(annotator.depth())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [1, 1, 0]
    assert annotator.depth() == 1
    annotator.exit("main_phase")


# ---- annotate=True: NVTX, through a real NVTX tool ----


@pytest.mark.skipif(not HAS_NVTX, reason=NO_NVTX)
def test_nvtx_ranges_reach_an_nvtx_tool(run_python, nvtx_tool, tmp_path):
    log = tmp_path / "nvtx.log"
    out = run_python(
        "import json, sys\n"
        + ("import torch\n" if HAS_TORCH else "")
        + "from lineprofiler.accounting import gpu\n"
        "a = gpu.Annotator()\n"
        "a.enter('iteration'); a.enter('mcts'); a.exit('mcts'); a.exit('iteration')\n"
        "a.enter('iteration'); a.enter('inner'); a.exit('iteration')\n"
        "print(json.dumps(a.describe()))\n",
        env={"NVTX_INJECTION64_PATH": str(nvtx_tool), "LP_NVTX_LOG": str(log)},
    )
    described = json.loads(out)
    # The CPU build of torch has no NVTX, so the ranges go through the nvtx package there.
    assert described["nvtx"] == ("torch.cuda.nvtx" if TORCH_HAS_CUDA else "nvtx")
    assert described["record_function"] is HAS_TORCH
    assert described["errors"] == 0
    assert log.read_text().splitlines() == [
        "PUSH iteration",
        "PUSH mcts",
        "POP",
        "POP",
        "PUSH iteration",
        "PUSH inner",
        "POP",  # inner, closed first because iteration exited above it
        "POP",
    ]


# ---- VRAM and NVML in the worker document ----


def test_vram_without_torch_says_why(no_torch, monkeypatch, tmp_path):
    monkeypatch.setenv("LINEPROFILER_NVML_LIBRARY", str(tmp_path / "missing.so"))
    attachment = gpu.GpuAttachment()
    attachment.start()
    document = {"gpu": None}
    attachment.contribute(document)
    vram = document["gpu"]["vram"]
    assert vram["available"] is False
    assert vram["unavailable_reason"] == "torch is not imported by this process"
    assert vram["allocated_peak"] is None and vram["samples"] == 0
    nvml = document["gpu"]["nvml"]
    assert nvml["available"] is False and nvml["unavailable_reason"].startswith("cannot load NVML")


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.skipif(TORCH_HAS_CUDA, reason=NEEDS_CPU_TORCH)
def test_vram_with_the_cpu_build_says_why():
    import torch  # noqa: F401

    document: dict = {}
    gpu.GpuAttachment(nvml=False).contribute(document)
    assert document["gpu"]["vram"]["unavailable_reason"] == "torch is built without CUDA"
    assert "nvml" not in document["gpu"]


@pytest.mark.skipif(not CUDA_DEVICE, reason=NEEDS_CUDA)
def test_vram_peaks_on_a_cuda_build(run_python):
    # 256 MiB held, 512 MiB more allocated and freed between two reads: the allocator's own peak
    # carries it to the next read, and the attachment keeps it after the user resets the peaks.
    out = run_python(
        "import json, torch\n"
        "from lineprofiler.accounting import gpu\n"
        "attachment = gpu.GpuAttachment(nvml=False)\n"
        "attachment.start()\n"
        "held = torch.empty(64 << 20, dtype=torch.float32, device='cuda')\n"
        "attachment.sample()\n"
        "spike = torch.empty(128 << 20, dtype=torch.float32, device='cuda')\n"
        "del spike\n"
        "attachment.sample()\n"
        "torch.cuda.reset_peak_memory_stats()\n"
        "document = {}\n"
        "attachment.contribute(document)\n"
        "print(json.dumps(document['gpu']['vram']))\n"
    )
    vram = json.loads(out)
    mib = 1 << 20
    assert vram["available"] is True and vram["unavailable_reason"] is None
    assert vram["samples"] >= 3
    assert 256 * mib <= vram["allocated_last"] < 300 * mib
    assert vram["allocated_peak"] >= 768 * mib
    assert vram["reserved_peak"] >= vram["allocated_peak"]
    assert list(vram["devices"]) == ["0"]


def test_vram_waits_for_cuda_to_be_initialised(cuda_torch):
    attachment = gpu.GpuAttachment(nvml=False)
    assert attachment.sample() is False
    assert attachment.vram_document()["unavailable_reason"] == "CUDA is not initialised in this process"


def test_vram_peaks_keep_the_largest_and_never_reset(cuda_torch):
    cuda_torch.initialized = True
    attachment = gpu.GpuAttachment(nvml=False)
    cuda_torch.set(0, allocated=100, allocated_peak=500, reserved=1000, reserved_peak=1000)
    assert attachment.sample()
    # The user resets the allocator's peaks: ours stay; device 1 comes into use.
    cuda_torch.set(0, allocated=200, allocated_peak=200, reserved=800, reserved_peak=800)
    cuda_torch.set(1, allocated=50, allocated_peak=70, reserved=64, reserved_peak=128)
    assert attachment.sample()
    document = {"gpu": {"nvml": {"available": True, "from": "sampler"}}}
    attachment.contribute(document)
    vram = document["gpu"]["vram"]
    assert vram["devices"] == {
        "0": {"allocated_last": 200, "allocated_peak": 500, "reserved_last": 800, "reserved_peak": 1000},
        "1": {"allocated_last": 50, "allocated_peak": 70, "reserved_last": 64, "reserved_peak": 128},
    }
    assert (vram["allocated_peak"], vram["reserved_peak"]) == (570, 1128)
    assert (vram["allocated_last"], vram["reserved_last"]) == (250, 864)
    assert vram["samples"] == 3
    assert vram["available"] is True and vram["unavailable_reason"] is None
    assert document["gpu"]["nvml"] == {"available": True, "from": "sampler"}  # not overwritten
    assert cuda_torch.resets == 0


def test_a_device_never_used_is_left_out(cuda_torch):
    cuda_torch.initialized = True
    cuda_torch.set(1, 10, 10, 20, 20)
    attachment = gpu.GpuAttachment(nvml=False)
    attachment.sample()
    assert list(attachment.vram_document()["devices"]) == ["1"]


def test_a_forked_child_starts_its_own_peaks(cuda_torch):
    cuda_torch.initialized = True
    cuda_torch.set(0, 1, 999, 2, 999)
    attachment = gpu.GpuAttachment(nvml=False)
    attachment.sample()
    attachment.after_fork_child()
    cuda_torch.initialized = False  # torch reports a bad fork as "not initialised"
    assert attachment.vram_document()["samples"] == 0
    assert attachment.vram_document()["allocated_peak"] is None


def test_memory_stats_failing_is_a_reason(cuda_torch):
    cuda_torch.initialized = True

    def broken(device):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    cuda_torch.module.cuda.memory_stats = broken
    attachment = gpu.GpuAttachment(nvml=False)
    assert attachment.sample() is False
    assert attachment.vram_document()["unavailable_reason"] == (
        "torch.cuda.memory_stats failed: RuntimeError: CUDA error: an illegal memory access was encountered"
    )
