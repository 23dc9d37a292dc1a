"""0.10.0's in-process reads of a profiler: ``merged_tree()``, ``deltas()``, ``on_snapshot()`` and
``io_counters()``, taken from the live recorder (no file is read).

A tree is 0.10.0's shape: a dict from a phase path (a tuple of names, ``()`` for the root) to
:class:`PhaseStats`. Threads are already one tree in the recorder. A fork child's recorder starts
empty, so a child's reads start again too (its cursors are reset, not its parent's numbers
subtracted). Callbacks registered with ``on_snapshot`` run on the snapshot thread after each
periodic write; one that raises is named in a one-time warning and unregistered, never raised
into the program.
"""

from __future__ import annotations

import os
import threading
import time
from typing import NamedTuple

from . import _phases

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    PhasePath = tuple[str, ...]
    PhaseTree = dict[PhasePath, "PhaseStats"]
    SnapshotCallback = Callable[["Snapshot"], object]

#: The ``io=True`` byte counters of a phase, as the recorder names them.
IO_FIELDS = ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes")


class Histogram:
    """A phase's durations as sparse log buckets (0.10.0's ``stats.hist``); differences of two
    cumulative ones are the interval's, so quantiles survive :func:`Reads.deltas`."""

    __slots__ = ("counts", "max_ns", "min_ns")

    def __init__(self, counts: dict[int, int], min_ns: int | None = None, max_ns: int | None = None) -> None:
        self.counts = counts
        self.min_ns = min_ns  # exact bounds clamp a quantile; an interval's are unknown
        self.max_ns = max_ns

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def quantile(self, q: float) -> float:
        """The ``q``-quantile (0..1) in ns; 0.0 when empty, as 0.10.0 returned."""
        from ..runfiles.histogram import quantile  # not at import: only a reader of quantiles needs it

        value = quantile(self.counts, q, min_ns=self.min_ns, max_ns=self.max_ns)
        return 0.0 if value is None else value

    def difference(self, earlier: Histogram) -> Histogram:
        counts = {k: n - earlier.counts.get(k, 0) for k, n in self.counts.items()}
        return Histogram({k: n for k, n in counts.items() if n > 0})


class PhaseStats:
    """One phase's numbers: completed entries (``calls``) and their ``wall_ns``, ``self_ns``,
    ``cpu_ns``; ``open_ns``, the time so far of the entries still open; ``counters`` by name;
    ``io_bytes`` (an ``io=True`` phase's byte counters, else None).

    ``wait_ns`` is wall time off the CPU and pairs with ``wall_ns``, never ``self_ns`` (as in
    0.10.0); it is 0 where the CPU time was not measured (``cpu_missing`` entries)."""

    __slots__ = ("calls", "counters", "cpu_missing", "cpu_ns", "hist", "io_bytes", "open_ns", "self_ns", "wall_ns")

    def __init__(
        self,
        calls: int = 0,
        wall_ns: int = 0,
        self_ns: int = 0,
        cpu_ns: int = 0,
        *,
        cpu_missing: int = 0,
        open_ns: int = 0,
        hist: Histogram | None = None,
        counters: dict[str, int] | None = None,
        io_bytes: dict[str, int] | None = None,
    ) -> None:
        self.calls = calls
        self.wall_ns = wall_ns
        self.self_ns = self_ns
        self.cpu_ns = cpu_ns
        self.cpu_missing = cpu_missing
        self.open_ns = open_ns
        self.hist = hist if hist is not None else Histogram({})
        self.counters = counters if counters is not None else {}
        self.io_bytes = io_bytes

    @property
    def wait_ns(self) -> int:
        return 0 if self.cpu_missing else max(0, self.wall_ns - self.cpu_ns)

    @property
    def child_wall_ns(self) -> int:
        return max(0, self.wall_ns - self.self_ns)

    def difference(self, earlier: PhaseStats) -> PhaseStats:
        """What was recorded between ``earlier`` (a previous reading of this phase) and this one."""
        io = None
        if self.io_bytes is not None:
            before = earlier.io_bytes or {}
            io = {k: v - before.get(k, 0) for k, v in self.io_bytes.items()}
        return PhaseStats(
            self.calls - earlier.calls,
            self.wall_ns - earlier.wall_ns,
            self.self_ns - earlier.self_ns,
            self.cpu_ns - earlier.cpu_ns,
            cpu_missing=self.cpu_missing - earlier.cpu_missing,
            open_ns=self.open_ns - earlier.open_ns,
            hist=self.hist.difference(earlier.hist),
            counters={k: n - earlier.counters.get(k, 0) for k, n in self.counters.items()},
            io_bytes=io,
        )

    def did_work(self, *, open_counts: bool) -> bool:
        """Whether an interval's stats hold anything; ``open_counts``: time in entries still open
        counts (0.10.0's ``deltas()`` left such a phase out, its ``wall_ns`` being 0)."""
        return bool(self.calls or self.wall_ns or (open_counts and self.open_ns) or any(self.counters.values()))

    def __repr__(self) -> str:
        fields = ("calls", "wall_ns", "self_ns", "cpu_ns", "open_ns", "counters")
        return "PhaseStats(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in fields) + ")"


class Snapshot(dict):  # type: ignore[type-arg,unused-ignore]  # of PhasePath to PhaseStats
    """What an ``on_snapshot`` callback receives: the cumulative tree (0.10.0's argument), with
    ``interval``, the tree of what was recorded since the previous snapshot (phases that did
    nothing left out; a phase whose only entry is still open is in, with ``calls`` 0 and its
    time in ``open_ns``), ``interval_s``, how long that was, and ``elapsed_s`` since the profiler
    started in this process."""

    interval: PhaseTree
    interval_s: float
    elapsed_s: float


class IoSnapshot(NamedTuple):
    """This process's cumulative I/O (0.10.0's ``io_counters()``): disk bytes and the bytes of
    read/write calls (page-cached reads move no disk bytes). ``available`` is False where the
    platform has none to read (then all are 0)."""

    read_bytes: int = 0
    write_bytes: int = 0
    read_chars: int = 0
    write_chars: int = 0
    available: bool = True

    def is_empty(self) -> bool:
        return not (self.read_bytes or self.write_bytes or self.read_chars or self.write_chars)


def tree_of(document: dict[str, Any]) -> PhaseTree:
    """The recorder's ``snapshot()`` as 0.10.0's tree."""
    tree: PhaseTree = {}
    for node in document["phases"]:
        io = node.get("io_bytes")
        tree[_path(node["path"])] = PhaseStats(  # a phase with no entry closed yet has None for some
            node["entries"] or 0,
            node["wall_ns"] or 0,
            node["self_ns"] or 0,
            node["cpu_ns"] or 0,
            cpu_missing=node["cpu_missing"] or 0,
            open_ns=node.get("open_ns") or 0,
            hist=Histogram(dict(node["hist"]), node["min_ns"] or None, node["max_ns"] or None),
            io_bytes=None if io is None else {k: io[k] for k in IO_FIELDS},
        )
    for counter in document["counters"]:
        stats = tree.setdefault(_path(counter["phase"]), PhaseStats())
        stats.counters[counter["name"]] = counter["total"]
    return tree


def _path(text: str) -> PhasePath:
    return tuple(text.split("/")) if text else ()


def changes(current: PhaseTree, baseline: PhaseTree, *, open_counts: bool) -> PhaseTree:
    """Per phase, what ``current`` adds to ``baseline``; phases that did nothing are left out."""
    out: PhaseTree = {}
    for path, stats in current.items():
        before = baseline.get(path)
        delta = stats if before is None else stats.difference(before)
        if delta.did_work(open_counts=open_counts):
            out[path] = delta
    return out


class Reads:
    """One profiler's reads and callbacks (see :func:`reads_of`)."""

    def __init__(self, profiler: Any) -> None:
        self._profiler = profiler
        self._callbacks: list[SnapshotCallback] = []
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()  # fresh in a child: the old one may have been copied held
        self._delta_baseline: PhaseTree = {}
        self._tick_baseline: PhaseTree = {}
        self._tick_ns = time.monotonic_ns()

    def _own_process(self) -> None:
        if os.getpid() != self._pid:
            self._reset()  # a fork child: its recorder started empty

    def merged_tree(self) -> PhaseTree:
        """Every thread's phases of this process, cumulative."""
        recorder = getattr(self._profiler, "recorder", None)
        return {} if recorder is None else tree_of(recorder.snapshot())

    def deltas(self) -> PhaseTree:
        """What was recorded since the previous call (everything, the first time); its own cursor,
        apart from ``on_snapshot``'s."""
        self._own_process()
        current = self.merged_tree()
        with self._lock:
            baseline, self._delta_baseline = self._delta_baseline, current
        return changes(current, baseline, open_counts=False)

    def on_snapshot(self, callback: SnapshotCallback) -> SnapshotCallback:
        """Call ``callback(snapshot)`` after each periodic write; returns it (a decorator)."""
        if not callable(callback):
            raise TypeError(f"on_snapshot() takes a callable, got {type(callback).__name__}")
        self._callbacks.append(callback)
        writer = getattr(self._profiler, "_snapshots", None)  # none on a disabled profiler
        if writer is not None:
            writer.after_periodic = self.fire
        return callback

    def fire(self) -> None:
        """On the snapshot thread: the interval's numbers to every callback. Never raises (the
        thread would end, and the periodic snapshots with it)."""
        if not self._callbacks:
            return
        try:
            snapshot = self._next_snapshot()
        except Exception as error:  # noqa: BLE001 - a bug here must not stop the snapshots
            self._record_error(f"on_snapshot: {type(error).__name__}: {error}")
            return
        for callback in list(self._callbacks):
            try:
                callback(snapshot)
            except BaseException as error:  # noqa: BLE001 - an exporter's failure never reaches the program
                self._drop(callback, error)

    def _record_error(self, line: str) -> None:
        record = getattr(self._profiler, "_record_error", None)  # into the worker file's errors
        if record is not None:
            record(line)

    def _next_snapshot(self) -> Snapshot:
        self._own_process()
        current = self.merged_tree()
        now = time.monotonic_ns()
        snapshot = Snapshot(current)
        snapshot.interval = changes(current, self._tick_baseline, open_counts=True)
        snapshot.interval_s = (now - self._tick_ns) / 1e9
        start = getattr(self._profiler, "_start_mono_ns", None)
        snapshot.elapsed_s = (now - start) / 1e9 if start is not None else snapshot.interval_s
        self._tick_baseline, self._tick_ns = current, now
        return snapshot

    def _drop(self, callback: SnapshotCallback, error: BaseException) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)
        name = getattr(callback, "__qualname__", None) or repr(callback)
        try:
            import warnings

            warnings.warn(
                f"lineprofiler: on_snapshot callback {name} raised {type(error).__name__}: {error}; "
                "it is unregistered and will not be called again",
                RuntimeWarning,
                stacklevel=1,
            )
        except Exception:  # noqa: BLE001 - under -W error a warning raises; the thread goes on
            pass

    @staticmethod
    def io_counters() -> IoSnapshot:
        """This process's cumulative I/O counters (all 0 and ``available=False`` where none)."""
        io = _phases.read_io()
        if io is None:
            return IoSnapshot(available=False)
        return IoSnapshot(io["read_bytes"], io["write_bytes"], io["rchar"], io["wchar"])


def reads_of(profiler: Any) -> Reads:
    """The profiler's :class:`Reads`, made at its first use (a profiler that never reads pays nothing)."""
    reads = profiler.__dict__.get("_reads")
    if reads is None:
        reads = profiler.__dict__.setdefault("_reads", Reads(profiler))
    return reads
