"""GPU time per phase without synchronising: ``phase(name, gpu=True)``.

The recorder calls :meth:`PhaseGpuTimer.enter` and :meth:`PhaseGpuTimer.exit` with the phase's
name around each entry of a ``gpu=True`` phase (``Recorder.set_gpu``): each records one event
of a pair on the current stream. A pair is read back later, by :meth:`PhaseGpuTimer.drain`,
only once ``query()`` says both events are complete; nothing here waits for the device. The
drain runs at each snapshot (from the snapshot thread) and at the final one; a pair still
pending then is counted at the next snapshot, and one pending at the end is said to be, not
counted. Pairs come from a pool of at most :data:`POOL_PAIRS`: an entry that finds none free
is counted as dropped, so a program that outruns its GPU by minutes costs bounded memory.

The events come from an :class:`EventSource`: ``torch.cuda.Event(enable_timing=True)`` where
the program runs CUDA through torch, or a test's fake. torch is never imported here: the
first ``gpu=True`` entry after the program imported torch decides. Until then, and where CUDA
is absent, the document says why there is no GPU time (``unavailable_reason``), never 0.

What :mod:`.auto_torch` (or any other code that enters phases) calls: nothing more than
``recorder.phase(name, gpu=True)``; the hooks do the rest.
"""

from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class Event(Protocol):
        def record(self) -> None: ...
        def query(self) -> bool: ...
        def elapsed_time(self, end: Any, /) -> float: ...

    _Open = tuple[str, str, list[Any] | None]  # an open entry: name, path, its pair (None: not timed)

    class EventSource(Protocol):
        #: What the document names as the events' origin ("torch.cuda.Event").
        name: str

        def new_event(self) -> Event: ...


__all__ = ["NEVER_ENTERED", "POOL_PAIRS", "PhaseGpuTimer", "TorchCudaEvents", "built_with_cuda"]

#: The most event pairs alive at once: in flight (recorded, not yet complete) or free for reuse.
POOL_PAIRS = 1024
NEVER_ENTERED = "no phase(..., gpu=True) was entered in this process"
NO_TORCH = "torch is not imported in this process: no CUDA work to time"
NO_DEVICE = "no CUDA device: this torch is built without CUDA"
NOT_INITIALISED = "no CUDA device in use: CUDA is not initialised in this process (no kernel was queued yet)"
_ERROR_CHARS = 300


class TorchCudaEvents:
    """``torch.cuda.Event(enable_timing=True)``: recorded on the current stream of the current device."""

    name = "torch.cuda.Event"

    def __init__(self, torch: Any) -> None:
        self._event = torch.cuda.Event

    def new_event(self) -> Any:
        return self._event(enable_timing=True)


def built_with_cuda(torch: Any) -> bool:
    """Whether this torch may have CUDA: False only where it says it was built without (never
    ``is_available()``, which starts the driver); a torch without the call is decided by
    ``is_initialized()`` alone, at the entries."""
    try:
        return bool(torch.cuda._is_compiled())
    except Exception:  # noqa: BLE001 - a torch without the call
        return True


def torch_source(torch: Any) -> tuple[EventSource | None, str, bool]:
    """The events of the program's ``torch`` module (None: not imported), or None with why and
    whether that is final."""
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        return None, NO_TORCH, False
    if not built_with_cuda(torch):
        return None, NO_DEVICE, True
    # Never torch.cuda.is_available(): it initialises the driver, which breaks CUDA in processes
    # forked later. Before CUDA is initialised no kernel can be queued, and recording an event
    # would create a context the program may never want (a forked DataLoader worker cannot).
    if not cuda.is_initialized():
        return None, NOT_INITIALISED, False
    return TorchCudaEvents(torch), "", True


class _Stacks(threading.local):
    """Per thread: the open gpu=True entries, innermost last: (name, path, pair or None)."""

    def __init__(self) -> None:
        self.open: list[_Open] = []


class PhaseGpuTimer:
    """A profiler attachment: the hooks of ``Recorder.set_gpu`` and ``document["gpu"]["phase_time"]``.

    ``current_path()`` gives the path of the phase open in this thread (the recorder's), so
    that each pair is counted under the path of the phase it timed. ``source``: the events to
    use (a test's fake); None looks for the program's torch at each entry until it decides.
    """

    def __init__(
        self, current_path: Callable[[], str | None], source: EventSource | None = None, pool_pairs: int = POOL_PAIRS
    ) -> None:
        self._current_path = current_path
        self._given = source
        self.pool_pairs = pool_pairs
        self._reset()

    def _reset(self) -> None:
        # Reentrant: a signal's final snapshot may drain in the main thread while it holds the lock.
        self._lock = threading.RLock()
        self._stacks = _Stacks()
        self._source: EventSource | None = self._given
        self._settled = self._given is not None
        self.unavailable_reason = NEVER_ENTERED if self._given is None else ""
        self._free: list[list[Any]] = []
        self._pending: list[tuple[str, list[Any]]] = []
        self._created = 0  # pairs alive: free, open or pending
        self._stats: dict[str, list[int]] = {}  # path -> [gpu_ns, pairs, dropped]
        self.errors = 0
        self.last_error: str | None = None
        self._ended = False

    # ---- the recorder's hooks: never raise (a failure is counted and the phase goes on)

    def enter(self, name: str) -> None:
        opened = self._stacks.open
        source = self._source if self._settled else self._settle()
        if source is None or self._ended:
            opened.append((name, "", None))
            return
        pair = None
        try:
            path = self._current_path()
            path = f"{path}/{name}" if path else name
            pair = self._take_pair(source, path)
            if pair is not None:
                pair[0].record()
        except Exception as error:  # noqa: BLE001 - a guest never raises into its host
            self._fail(error, pair)
            opened.append((name, "", None))
            return
        opened.append((name, path, pair))

    def exit(self, name: str) -> None:
        opened = self._stacks.open
        if opened and opened[-1][0] == name:
            _name, path, pair = opened.pop()
        else:
            found = self._unwind(opened, name)
            if found is None:
                return  # entered before the hooks were set, or in another thread
            path, pair = found
        if pair is None:
            return  # not timed: no CUDA yet, or the pool was full at entry
        try:
            pair[1].record()
        except Exception as error:  # noqa: BLE001 - as enter()
            self._fail(error, pair)
            return
        with self._lock:
            self._pending.append((path, pair))

    def _unwind(self, opened: list[_Open], name: str) -> tuple[str, list[Any] | None] | None:
        """The innermost open entry named ``name``, taken off with the entries above it: those
        never got their exit (the core dropped the frame, or the recorder was reset meanwhile)
        and are given up, not left open."""
        for at in range(len(opened) - 1, -1, -1):
            if opened[at][0] == name:
                break
        else:
            return None
        _name, path, pair = opened[at]
        for _above, _path, lost in opened[at + 1 :]:
            if lost is not None:
                self._give_up(lost)
        del opened[at:]
        return path, pair

    def use_source(self, source: EventSource) -> None:
        """Time with ``source``'s events from the next entry on, not torch's (a test's fake)."""
        self._given = self._source = source
        self._settled = True

    def _settle(self) -> EventSource | None:
        source, reason, final = torch_source(sys.modules.get("torch"))
        if source is not None or final:
            self._source, self._settled = source, True
        self.unavailable_reason = reason
        return source

    def _take_pair(self, source: EventSource, path: str) -> list[Any] | None:
        with self._lock:
            if self._free:
                return self._free.pop()
            if self._created >= self.pool_pairs:
                self._stat(path)[2] += 1
                return None
            self._created += 1
        try:
            return [source.new_event(), source.new_event()]
        except BaseException:
            with self._lock:
                self._created -= 1
            raise

    def _stat(self, path: str) -> list[int]:
        stat = self._stats.get(path)
        if stat is None:
            stat = self._stats[path] = [0, 0, 0]
        return stat

    def _fail(self, error: BaseException, pair: list[Any] | None = None) -> None:
        with self._lock:
            self.errors += 1
            self.last_error = f"{type(error).__name__}: {error}"[:_ERROR_CHARS]
        if pair is not None:
            self._give_up(pair)  # not reused: its events may be broken

    def _give_up(self, pair: list[Any]) -> None:
        with self._lock:
            self._created -= 1

    # ---- reading back: from the snapshot thread, never waiting

    def drain(self) -> None:
        """Add the time of every pair whose events are complete; leave the others pending."""
        with self._lock:
            pending, self._pending = self._pending, []
        still: list[tuple[str, list[Any]]] = []
        done: list[tuple[str, int, list[Any]]] = []
        for path, pair in pending:
            try:
                ended, started = pair[1].query(), pair[0].query()  # both asked: each is cheap
                if not (ended and started):
                    still.append((path, pair))
                    continue
                ms = pair[0].elapsed_time(pair[1])
            except Exception as error:  # noqa: BLE001 - the program's run goes on without this pair
                self._fail(error, pair)
                continue
            done.append((path, max(0, round(ms * 1_000_000)), pair))
        with self._lock:
            self._pending = still + self._pending  # entries that ended meanwhile stay after these
            for path, ns, pair in done:
                stat = self._stat(path)
                stat[0] += ns
                stat[1] += 1
                self._free.append(pair)

    def document(self) -> dict[str, Any]:
        """``document["gpu"]["phase_time"]`` (docs/gpu.md describes every key)."""
        with self._lock:
            pending: dict[str, int] = {}
            for path, _pair in self._pending:
                pending[path] = pending.get(path, 0) + 1
            paths = sorted(set(self._stats) | set(pending))
            rows = []
            for path in paths:
                gpu_ns, pairs, dropped = self._stats.get(path, (0, 0, 0))
                waiting = pending.get(path, 0)
                rows.append({"path": path, "gpu_ns": gpu_ns, "pairs": pairs, "dropped": dropped, "pending": waiting})
            measured = self._source is not None
            return {
                "available": measured,
                "unavailable_reason": None if measured else self.unavailable_reason,
                "source": self._source.name if measured else None,  # type: ignore[union-attr]
                "pool_pairs": self.pool_pairs,
                "ended": self._ended,
                "errors": self.errors,
                "last_error": self.last_error,
                "phases": rows,
            }

    # ---- the attachment protocol

    def contribute(self, document: dict[str, Any]) -> None:
        self.drain()
        gpu = document.get("gpu")
        if not isinstance(gpu, dict):
            gpu = document["gpu"] = {}
        gpu["phase_time"] = self.document()

    def stop(self) -> None:
        """Before the final snapshot: no new pairs; those still pending then are said to be."""
        self._ended = True

    def after_fork_child(self) -> None:
        # The parent's events belong to its CUDA context, which a forked child cannot use: they
        # are kept alive, never touched (destroying one would call into that context), and the
        # child starts with an empty pool and no times of its own.
        orphans = [pair for _path, pair in self._pending] + self._free
        self._reset()
        self._orphans = orphans

    def close(self) -> None:
        self._ended = True
