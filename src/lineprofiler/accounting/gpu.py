"""Adapters between phases and CUDA: sync=True, annotate=True, and the VRAM part of the GPU block.

None of these import torch. They read ``sys.modules["torch"]``: a process that has not imported
torch has no CUDA work for them to see, and importing it for the user would cost seconds and
hundreds of megabytes in a process that never asked for it.

What the profiler wires (through the hooks of ``accounting/_phases``):

* :func:`make_sync` -> ``set_sync(fn)``: ``fn()`` runs at both ends of a ``phase(..., sync=True)``.
* :class:`Annotator` -> ``set_annotate(enter, exit)``: NVTX range and
  ``torch.profiler.record_function`` per phase (``annotate=True``).
* :class:`GpuAttachment`: an attachment that contributes ``document["gpu"]["vram"]`` (VRAM
  peaks) and ``document["gpu"]["nvml"]`` (which devices NVML sees, or why it cannot) to each
  worker-file snapshot.
"""

from __future__ import annotations

import os
import sys
import threading

from . import capabilities
from ._error_text import describe

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "Annotator",
    "GpuAttachment",
    "describe_sync",
    "make_sync",
    "nvml_document",
    "vram_unavailable_reason",
]


# --------------------------------------------------------------------------------------------
# sync=True


def make_sync() -> Callable[[], None] | None:
    """The function ``phase(..., sync=True)`` calls at entry and exit, or None for "nothing to do".

    * torch imported, built with CUDA: a function that calls ``torch.cuda.synchronize()`` once
      CUDA is initialised in this process. Before that no kernel can be queued, and calling
      ``synchronize`` would itself create a CUDA context, so it returns at once.
    * torch imported, built without CUDA: None (nothing could ever be queued).
    * torch installed but not yet imported: a function that looks for it on each call and syncs
      once it is imported with CUDA, so constructing the profiler before ``import torch`` still
      works. It costs a dictionary lookup per sync=True boundary until then.
    * torch not installed: None.

    ``synchronize()`` drains the current device's queue, which is the device a process works on
    in the usual one-device-per-process layout.
    """
    torch = capabilities._torch_module()
    if torch is not None:
        return _cuda_sync(torch)
    if not capabilities.torch().available:
        return None
    return _LateSync()


def _cuda_sync(torch: Any) -> Callable[[], None] | None:
    cuda = torch.cuda
    try:
        compiled = bool(cuda._is_compiled())
    except Exception:
        compiled = False
    if not compiled:
        return None
    is_initialized = cuda.is_initialized
    synchronize = cuda.synchronize

    def sync() -> None:
        if is_initialized():
            synchronize()

    return sync


class _LateSync:
    """sync for a process that imports torch after the profiler starts; settles once it does."""

    __slots__ = ("_resolved",)

    def __init__(self) -> None:
        self._resolved: Callable[[], None] | None | bool = False

    def __call__(self) -> None:
        resolved = self._resolved
        if resolved is False:
            torch = capabilities._torch_module()
            if torch is None:
                return
            resolved = self._resolved = _cuda_sync(torch)
        if resolved is not None:
            resolved()  # type: ignore[operator]


def describe_sync(fn: Callable[[], object] | None) -> dict[str, Any]:
    """What a :func:`make_sync` result does, for metadata.json: ``mode`` and, when it does
    nothing, ``unavailable_reason``.

    ``mode``: ``"torch.cuda.synchronize"`` (torch with CUDA), ``"pending"`` (torch installed,
    not imported yet: decided at the first sync=True boundary after the import) or None.
    """
    if isinstance(fn, _LateSync):
        resolved = fn._resolved
        if resolved is False:
            return {
                "mode": "pending",
                "available": None,
                "unavailable_reason": "torch is not imported yet; decided at the first sync=True phase after it is",
            }
        fn = resolved  # type: ignore[assignment]
    if fn is not None:
        return {"mode": "torch.cuda.synchronize", "available": True, "unavailable_reason": None}
    reason = capabilities.torch_cuda().unavailable_reason or "torch has no CUDA here"
    return {"mode": None, "available": False, "unavailable_reason": f"sync=True is a no-op: {reason}"}


# --------------------------------------------------------------------------------------------
# annotate=True


class Annotator:
    """Per phase: an NVTX range and a ``torch.profiler.record_function``, closed on exit.

    ``enter(name)`` / ``exit(name)`` are the core's annotate hooks; they run in the thread that
    enters the phase, and each thread has its own stack (NVTX ranges and record_function are
    thread-local too). Exit closes in LIFO order: the record_function first, then the NVTX range,
    and if phases were left open above ``name`` (an exception that skipped an exit), those are
    closed first, so the stacks stay balanced. Nothing raises: a failing call is counted in
    :attr:`errors` with the last message in :attr:`last_error`.

    NVTX goes to ``torch.cuda.nvtx`` on a CUDA build of torch, else to the ``nvtx`` package; the
    CPU build of torch has no NVTX. record_function needs torch imported. Until torch is
    imported, each enter checks ``sys.modules`` once more, so a later import is picked up.
    """

    def __init__(self, *, nvtx: bool = True, record_function: bool = True) -> None:
        self._want_nvtx = nvtx
        self._want_rf = record_function
        self._local = threading.local()
        self._push: Callable[[str], Any] | None = None
        self._pop: Callable[[], Any] | None = None
        self._rf: Any = None
        self._torch_seen = False
        self.nvtx_source: str | None = None
        self.errors = 0
        self.last_error: str | None = None
        self._resolve()

    def _resolve(self) -> None:
        torch = capabilities._torch_module()
        self._torch_seen = torch is not None
        # Once a source is chosen it stays: a range must be popped where it was pushed.
        if self._want_nvtx and self._push is None:
            if capabilities.torch_has_nvtx():
                self._push, self._pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
                self.nvtx_source = "torch.cuda.nvtx"
            elif capabilities.nvtx().available:
                try:
                    import nvtx as nvtx_package

                    self._push, self._pop = nvtx_package.push_range, nvtx_package.pop_range
                    self.nvtx_source = "nvtx"
                except Exception as error:
                    self._note(error)
        if self._want_rf and torch is not None and self._rf is None:
            try:
                self._rf = torch.autograd.profiler.record_function
            except Exception as error:
                self._note(error)

    @property
    def record_function_active(self) -> bool:
        return self._rf is not None

    def _note(self, error: BaseException) -> None:
        self.errors += 1
        self.last_error = describe(error)  # bounded, and never raises from the error's own __str__

    def _stack(self) -> list[tuple[str, Callable[[], Any] | None, Any]]:
        stack: list[tuple[str, Callable[[], Any] | None, Any]]
        try:
            stack = self._local.stack
        except AttributeError:
            stack = self._local.stack = []
        return stack

    def enter(self, name: str) -> None:
        if not self._torch_seen and "torch" in sys.modules:
            self._resolve()
        pop = None
        if self._push is not None:
            try:
                self._push(name)
                pop = self._pop
            except Exception as error:
                self._note(error)
        rf = None
        if self._rf is not None:
            try:
                rf = self._rf(name)
                rf.__enter__()
            except Exception as error:
                rf = None
                self._note(error)
        self._stack().append((name, pop, rf))

    def exit(self, name: str) -> None:
        stack = self._stack()
        for index in range(len(stack) - 1, -1, -1):
            if stack[index][0] == name:
                break
        else:
            return  # an exit whose enter we did not see (annotate switched on mid-phase)
        while len(stack) > index:
            _, pop, rf = stack.pop()
            if rf is not None:
                try:
                    rf.__exit__(None, None, None)
                except Exception as error:
                    self._note(error)
            if pop is not None:
                try:
                    pop()
                except Exception as error:
                    self._note(error)

    def depth(self) -> int:
        """Open ranges in the calling thread (for tests and diagnosis)."""
        return len(self._stack())

    def after_fork_child(self) -> None:
        # The child continues only the forking thread; its open ranges belong to the parent's
        # tools. Keep the stack (the phases are still open and will exit in the child).
        pass

    def describe(self) -> dict[str, Any]:
        return {
            "nvtx": self.nvtx_source,
            "record_function": self._rf is not None,
            "errors": self.errors,
            "last_error": self.last_error,
        }


# --------------------------------------------------------------------------------------------
# VRAM and NVML facts for the worker file


def vram_unavailable_reason() -> str | None:
    """Why VRAM cannot be read in this process right now, or None when it can."""
    torch = capabilities._torch_module()
    if torch is None:
        return "torch is not imported by this process"
    try:
        if not torch.cuda._is_compiled():
            return "torch is built without CUDA"
        if not torch.cuda.is_initialized():
            return "CUDA is not initialised in this process"
    except Exception as error:
        return f"torch.cuda failed: {error.__class__.__name__}: {error}"
    return None


_STAT_KEYS = (
    ("allocated", "allocated_bytes.all.current", "allocated_bytes.all.peak"),
    ("reserved", "reserved_bytes.all.current", "reserved_bytes.all.peak"),
)


class GpuAttachment:
    """Profiler attachment: VRAM peaks and NVML facts, contributed to each snapshot.

    VRAM: at each :meth:`sample` (every :meth:`contribute`, i.e. every snapshot, and at stop)
    it reads ``torch.cuda.memory_stats(d)`` for each device d: current and peak bytes for the
    caching allocator's allocated and reserved memory. The allocator's own peak catches what
    happened between two reads; the attachment keeps the largest value it has seen, so a user
    who resets the peak counters lowers nothing here, and it never resets them itself. It reads
    only where torch is already imported and CUDA initialised.

    ``document["gpu"]["vram"]``::

        {"available": bool, "unavailable_reason": str | None, "samples": int,
         "allocated_peak": int | None, "reserved_peak": int | None,   # bytes, this process:
         "allocated_last": int | None, "reserved_last": int | None,   # sum over its devices
         "devices": {"<torch index>": {"allocated_peak", "reserved_peak",
                                       "allocated_last", "reserved_last"}},
         "cuda_visible_devices": str | None}

    torch's device indices are after CUDA_VISIBLE_DEVICES; NVML's are physical.

    ``document["gpu"]["nvml"]`` (unless something else, such as the sampler, has put it there)::

        {"available": bool, "unavailable_reason": str | None,
         "devices": [{"index": int, "name": str | None}], "driver": str | None}
    """

    def __init__(self, *, nvml: bool = True) -> None:
        self._lock = threading.Lock()
        self._nvml = nvml
        self._reset()

    def _reset(self) -> None:
        self._devices: dict[int, dict[str, int]] = {}
        self._samples = 0
        self._reason: str | None = "not sampled yet"

    def sample(self) -> bool:
        """Read VRAM now; False (with the reason kept) when it cannot be read."""
        reason = vram_unavailable_reason()
        if reason is not None:
            with self._lock:
                if self._samples == 0:
                    self._reason = reason
            return False
        torch = capabilities._torch_module()
        try:
            count = torch.cuda.device_count()
            readings = {}
            for device in range(count):
                stats = torch.cuda.memory_stats(device)
                readings[device] = {
                    key: (int(stats.get(current, 0)), int(stats.get(peak, 0))) for key, current, peak in _STAT_KEYS
                }
        except Exception as error:
            with self._lock:
                self._reason = f"torch.cuda.memory_stats failed: {error.__class__.__name__}: {error}"
            return False
        with self._lock:
            for device, reading in readings.items():
                record = self._devices.get(device)
                if record is None:
                    if reading["reserved"][1] == 0 and reading["reserved"][0] == 0:
                        continue  # a device this process never allocated on
                    record = self._devices[device] = {}
                for key, (current, peak) in reading.items():
                    record[f"{key}_last"] = current
                    record[f"{key}_peak"] = max(record.get(f"{key}_peak", 0), peak, current)
            self._samples += 1
            self._reason = None
        return True

    def vram_document(self) -> dict[str, Any]:
        with self._lock:
            devices = {str(d): dict(r) for d, r in sorted(self._devices.items())}
            samples = self._samples
            reason = self._reason
        doc: dict[str, Any] = {
            "available": samples > 0,
            "unavailable_reason": None if samples > 0 else reason,
            "samples": samples,
            "devices": devices,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }
        for key in ("allocated_peak", "reserved_peak", "allocated_last", "reserved_last"):
            doc[key] = sum(r.get(key, 0) for r in devices.values()) if samples > 0 else None
        return doc

    # ---- the attachment protocol ----

    def start(self) -> None:
        self.sample()

    def stop(self) -> None:
        self.sample()

    def after_fork_child(self) -> None:
        # A new process: the parent's peaks are not the child's. (A forked child cannot use the
        # parent's CUDA context; torch then reports CUDA as not initialised and nothing is read.)
        self._lock = threading.Lock()
        self._reset()

    def contribute(self, document: dict[str, Any]) -> None:
        self.sample()
        gpu = document.get("gpu")
        if not isinstance(gpu, dict):
            gpu = document["gpu"] = {}
        gpu["vram"] = self.vram_document()
        # Not in the start file, written while the profiler is constructed: probing NVML (ctypes,
        # the library's load and init) would cost every process's start more than the rest of
        # it. The first snapshot after it carries the facts; a start file says nothing of NVML.
        times = document.get("times")
        starting = isinstance(times, dict) and times.get("status") == "started"
        if self._nvml and "nvml" not in gpu and not starting:
            gpu["nvml"] = nvml_document()

    def close(self) -> None:
        pass


def nvml_document() -> dict[str, Any]:
    """``document["gpu"]["nvml"]`` from the capability probe (cached per process)."""
    cap = capabilities.nvml()
    return {
        "available": cap.available,
        "unavailable_reason": cap.unavailable_reason,
        "devices": list(cap.details.get("devices", [])),
        "driver": cap.version,
    }
