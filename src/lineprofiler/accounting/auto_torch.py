"""``auto="torch"``: a PyTorch training loop's parts as phases, with no change to the program.

What is recorded, through torch's public hook API where one exists and costs no more than a
wrapper (the optimizer's), wrappers elsewhere:

* ``step``: from the first of the parts below after an optimizer step to the end of the next
  optimizer step, with under it:
* ``data_wait``: a DataLoader iterator's ``__next__`` in the main process;
* ``forward``: the outermost ``nn.Module`` call (``nn.Module.__call__`` wrapped: torch's global
  module hooks would take every module call off its fast path; a module called inside
  another's forward is part of it);
* ``backward``: ``torch.autograd.backward``, which ``Tensor.backward`` calls (wrapped: no hook
  API);
* ``optimizer``: ``Optimizer.step`` (global optimizer step pre/post hooks), and ``zero_grad``
  (``Optimizer.zero_grad``, wrapped);
* in a DataLoader worker (role ``dataloader``): ``fetch``, one entry per call of the dataset
  (``dataset[i]``, an iterable dataset's ``next()``, a ``__getitems__`` batch: entries are
  calls, not samples), with counter ``samples`` the samples they returned, and ``collate`` per
  batch;
* ``checkpoint`` (``io=True``): ``torch.save`` and ``torch.load``;
* ``collective/<op>`` with counter ``collective_bytes``: the public ``torch.distributed``
  collectives (:mod:`._torch_collectives` says what is seen and what is not: DDP's own
  gradient all-reduce is not);
* ``document["auto_torch"]["process_group"]``: the collectives those wrappers did not see (DDP's
  gradient all-reduce), per op, from torch's flight recorder, read at each snapshot
  (:mod:`._torch_flight_recorder`, which sets ``TORCH_FR_BUFFER_SIZE`` at start where the
  program did not).

Where torch is built with CUDA, the training process's parts are entered with ``gpu=True``: their
GPU time comes from CUDA event pairs (:mod:`.gpu_events`, which records none before the program
itself starts CUDA). DataLoader workers queue no kernels and time nothing on the GPU.

A program's own phases stay as they are: the auto phases nest under whatever is open. A step
is ended only while it is the innermost phase open: when the program's own phase is still open
inside it at the optimizer step, it ends at the next part instead (the data wait of the next
iteration), so the program's phases are never cut. Nothing here raises into the training
loop: a hook that fails counts an error (``document["auto_torch"]["errors"]``) and the loop
goes on. Everything installed is removed at close. Code that ``torch.compile`` traces (a compiled
function calling a module, a compiled optimizer step) is not timed: the hooks step aside
(``torch.compiler.is_compiling()``) rather than break its graph; a compiled module called from
eager code is timed as one forward.

torch is looked for when the profiler starts: imported already, the hooks go in at once;
installed but not imported yet, they go in right after ``import torch`` finishes (an import
watcher on ``sys.meta_path``, removed once it has fired); not installed, the worker file says so.
"""

from __future__ import annotations

import sys
import threading

from ._torch_flight_recorder import OwnCalls, ProcessGroupCollectives, ask_torch_to_record
from ._torch_import import TorchImportWatch
from .gpu_events import built_with_cuda

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: The role of a DataLoader worker process whose program made no profiler of its own.
DATALOADER_ROLE = "dataloader"


def _never() -> bool:
    return False


def _distributed_in_use(torch: Any) -> bool:
    try:
        dist = torch.distributed
        return bool(dist.is_available() and dist.is_initialized())
    except Exception:  # noqa: BLE001 - a torch without it: nothing to have missed
        return False


class _ThreadState(threading.local):
    """Per thread: the phases this module holds open across calls."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.step: Any = None  # the open ``step`` phase
        self.step_path = ""  # its path, to tell whether it is the innermost phase open
        self.step_done = False  # its optimizer step has run: end it at the next part
        self.in_forward = False
        self.optimizer: Any = None
        self.in_backward = False
        self.in_collective = False


class AutoTorch:
    """A profiler attachment: ``start()`` installs the hooks (or waits for ``import torch``),
    ``close()`` removes them, ``contribute()`` writes ``document["auto_torch"]``."""

    def __init__(self, profiler: Any) -> None:
        self._profiler = profiler
        self._recorder = profiler.recorder
        self._phases: dict[tuple[str, bool], Any] = {}  # (name, io) -> the recorder's Phase, looked up once
        self._local = _ThreadState()
        self._undo: list[Callable[[], object]] = []
        self._watch: TorchImportWatch | None = None
        self._installed: list[str] = []
        self._failed: list[str] = []
        self.errors = 0
        self.unavailable_reason: str | None = None
        self._closed = False
        self._in_worker = False  # a DataLoader worker: its parts are no step's
        #: Whether the parts are entered with gpu=True (their GPU time from CUDA events): a torch
        #: built with CUDA, in the training process (a DataLoader worker queues no kernels).
        self._gpu = False
        #: torch.compiler.is_compiling once torch is here: the hooks step aside in traced code.
        self.compiling: Callable[[], bool] = _never
        #: The wrapped collectives' spans, and what the flight recorder saw besides them.
        self.own_calls = OwnCalls()
        self.process_group = ProcessGroupCollectives(self.own_calls)

    # ------------------------------------------------------------------ attachment

    def start(self) -> None:
        if self._undo or self._watch is not None or self._closed:
            return
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "nn"):
            ask_torch_to_record()
            self._install(torch)
            return
        from . import capabilities

        if not capabilities.torch().available:
            self.unavailable_reason = "auto='torch': torch is not installed for this interpreter"
            return
        ask_torch_to_record()  # before the program makes a process group: the ring is sized then
        self._watch = TorchImportWatch(self._on_torch_imported)
        self._watch.arm()

    def _on_torch_imported(self, torch: Any) -> None:
        self._watch = None
        if not self._closed:
            self._install(torch)

    def close(self) -> None:
        self._closed = True
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.disarm()
        state = self._local
        self._end_step(state, force=True)
        undo, self._undo = self._undo, []
        for remove in reversed(undo):
            try:
                remove()
            except Exception:  # noqa: BLE001 - a guest never raises into its host
                self.errors += 1

    stop = close

    def contribute(self, document: dict[str, Any]) -> None:
        process_group = None
        if self._undo or self._closed and self._installed:  # torch is here: its rings can be read
            self.process_group.read()
            process_group = self.process_group.section()
        document["auto_torch"] = {
            "hooks": list(self._installed),
            "failed": list(self._failed),
            "errors": self.errors,
            "unavailable_reason": self.unavailable_reason,
            "process_group": process_group,
        }

    def after_fork_child(self) -> None:
        self.process_group.after_fork_child()

    # ------------------------------------------------------------------ installing

    def _install(self, torch: Any) -> None:
        from . import _torch_patches

        self.compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or _never
        self._gpu = built_with_cuda(torch)
        if _distributed_in_use(torch):
            self.process_group.started_late()  # its ring holds collectives from before us

        for name, install in _torch_patches.INSTALLERS:
            try:
                self._undo.append(install(torch, self))
                self._installed.append(name)
            except Exception as error:  # noqa: BLE001 - another torch version: that part is not recorded
                self._failed.append(f"{name}: {type(error).__name__}: {error}")

    # ------------------------------------------------------------------ phases (called by the hooks)

    def guarded(self, fn: Callable[..., object], *args: Any) -> None:
        """``fn(*args)``, counting an error instead of raising into the program."""
        try:
            fn(*args)
        except Exception:  # noqa: BLE001
            self.errors += 1

    def open(self, name: str, io: bool = False, *, in_step: bool = True) -> Any:
        """Enter phase ``name`` and return it; None when that failed. ``in_step``: a part of a
        step (one is opened if none is); else it only ends a step whose optimizer step ran."""
        state = self._local
        try:
            if self._in_worker or (state.step is not None and not state.step_done):
                pass  # the common case: inside an open step
            elif in_step:
                self._ensure_step(state)
            elif state.step is not None:
                self._end_step(state)
            phase = self._phases.get((name, io))
            if phase is None:
                phase = self._phases[name, io] = self._recorder.phase(name, io, False, self._gpu)
            phase.__enter__()
            return phase
        except Exception:  # noqa: BLE001
            self.errors += 1
            return None

    def shut(self, phase: Any) -> None:
        if phase is None:
            return
        try:
            phase.__exit__(None, None, None)
        except Exception:  # noqa: BLE001
            self.errors += 1

    def count(self, name: str, n: int) -> None:
        try:
            self._recorder.count(name, n)
        except Exception:  # noqa: BLE001
            self.errors += 1

    def _innermost(self) -> str:
        try:
            return self._recorder.current_path() or ""
        except Exception:  # noqa: BLE001
            return ""

    def _ensure_step(self, state: _ThreadState) -> None:
        if state.step is not None:
            if not state.step_done or not self._end_step(state):
                return
        if self._closed:
            return
        step = self._phases.get(("step", False))
        if step is None:
            step = self._phases["step", False] = self._recorder.phase("step", False, False, self._gpu)
        step.__enter__()
        state.step, state.step_done = step, False
        state.step_path = self._innermost()

    def _end_step(self, state: _ThreadState, force: bool = False) -> bool:
        """End the open step if it is the innermost phase open (else leave it: the program's
        own phase is open inside it); True when no step is open any more."""
        step = state.step
        if step is None:
            return True
        innermost = self._innermost() == state.step_path
        if not innermost and not force:
            return False
        state.step = None
        if innermost:
            self.shut(step)
        return True

    def step_finished(self) -> None:
        """After an optimizer step: the step ends now, or at the next part where it cannot."""
        state = self._local
        if state.step is not None:
            state.step_done = True
            self._end_step(state)

    def end_finished_step(self) -> None:
        """End a step whose optimizer step has run, if it is the innermost phase open."""
        state = self._local
        if state.step is not None and state.step_done:
            self._end_step(state)

    def become_dataloader_worker(self) -> None:
        """In a DataLoader worker process: this profiler is the worker's, role ``dataloader``
        (a profiler the program makes in ``worker_init_fn`` takes its place)."""
        self._in_worker = True
        self._gpu = False
        self.process_group.turn_off("a DataLoader worker: its process groups are its trainer's")
        self._phases.clear()  # made for the trainer: with gpu=True where it had CUDA
        self._local.reset()  # the forking thread's open phases were the parent's
        profiler = self._profiler
        try:
            profiler.role = DATALOADER_ROLE
            profiler._options.role = DATALOADER_ROLE
            if profiler.identity is not None:
                profiler.identity.role = DATALOADER_ROLE
            # The live file names the role too: what a killed worker leaves must say it.
            live = profiler._live_path
            if live is not None and self._recorder.live:
                from ..runfiles import layout

                self._recorder.live_detach()
                layout.remove(live, root=profiler._paths.root)  # made anew: a live file is never reopened
                profiler._attach_live()
        except Exception as error:  # noqa: BLE001
            self.errors += 1
            self._failed.append(f"dataloader role: {type(error).__name__}: {error}")
