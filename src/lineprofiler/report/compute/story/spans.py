"""Each traced worker's spans, read once, one worker at a time, into a small summary.

A run of a thousand processes of 200,000 spans each cannot be held as Python objects: this
reads one file's trace (:func:`~lineprofiler.runfiles.tracesection.read_trace`, as arrays),
keeps what the story needs of it (its links, the start of the wait each ``wait`` link ended, the
arrivals at its collective phases, its first and last moments) and lets the arrays go before the
next file is read. The longest spans, which the lanes draw, are read again only for the processes
drawn (:func:`lane_spans`). Each pass over a ring is a builtin over an array (``max``,
``array.index``, ``compress``): no Python code runs per span.
"""

from __future__ import annotations

import heapq
import operator
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress
from pathlib import Path
from typing import Any, cast

from ....runfiles import tracesection, workerfile
from ...read import parallel
from ...read.run import Run, Worker

#: Traced files per extra process of the pool (each is a ring of up to 200,000 spans to parse).
FILES_PER_JOB = 4
#: Spans kept per worker for drawing (the longest of them).
LANE_SPANS = 400
#: How far back from a wait link its enclosing span is looked for.
_WAIT_LOOKBACK = 256
#: Up to this many threads, each one's first span is found by ``array.index`` (at C speed, from
#: the start); past it, by one pass over the thread column.
_FEW_THREADS = 16


@dataclass(slots=True)  # a run of a thousand processes holds hundreds of thousands
class Link:
    kind: str
    channel: str
    key: str
    t_ns: int
    thread: int
    phase_id: int
    #: For a wait: when the phase it was called in began (None: not found); its blocking part
    #: lies between then and ``t_ns``.
    began_ns: int | None = None
    #: For a wait: the phase that had just closed on its thread when it was called (``with
    #: phase("wait"): q.get()`` then ``wait_on(...)``), inside the phase it was called in; -1: none.
    after_phase_id: int = -1


@dataclass
class WorkerTrace:
    """What the story keeps of one worker's trace. Times are on the worker's own monotonic clock."""

    index: int
    threads: list[str]
    phase_names: dict[int, str]
    kept: int
    recorded: int
    dropped: int
    first_start_ns: int
    last_end_ns: int
    last_thread: int
    last_phase: int
    #: The latest moment it is known to have lived (a killed worker: past its last span).
    stop_ns: int
    clock_pairs: list[tuple[int, int, int]]
    open: list[tuple[int, int, int]]
    links: list[Link]
    #: Per collective (``sync``) phase path, the start of each of its entries, in order.
    arrivals: dict[str, array[int]] = field(default_factory=dict)
    #: Per thread index, the first span start: the earliest a critical path can reach there.
    thread_start_ns: dict[int, int] = field(default_factory=dict)
    #: Records of its trace that could not be placed, left out: per ``(kind, why)``, how many
    #: (:attr:`~lineprofiler.runfiles.tracesection.TraceColumns.left_out`).
    left_out: dict[tuple[str, str], int] = field(default_factory=dict)
    #: Links its link ring dropped (the oldest, once it filled): waits and signals the story cannot match.
    links_dropped: int = 0
    #: Its spans file's CRC-32 when every span in it was found placed: its later readings (the
    #: lanes, the path's phases) need not check them again.
    checked_crc: int | None = None
    #: Its worker, attached where the run is (a summary is made in a pool's process without it).
    worker: Worker = field(default=cast(Worker, None), repr=False)
    #: Its position among the run's workers.
    worker_index: int = -1

    @property
    def host(self) -> str:
        return self.worker.host

    @property
    def killed(self) -> bool:
        return bool(self.open) and self.worker.status not in ("exited",)

    def phase_name(self, phase_id: int) -> str | None:
        if phase_id < 0:
            return None
        return self.phase_names.get(phase_id, f"phase #{phase_id}")

    def thread_name(self, thread: int) -> str:
        return self.threads[thread] if 0 <= thread < len(self.threads) else f"thread {thread}"


def inline_trace(worker: Worker) -> Any:
    """The ``trace`` merge parsed into ``worker``'s document, or None where it left it in the file
    (what a pool's process is given, with the path, to read it by :func:`columns_at`)."""
    trace = worker.document.get("trace")
    return None if tracesection.skipped(trace) else trace


def columns_at(
    path: Path, inline: Any, stop_unix_ns: int, checked_crc: int | None = None
) -> tracesection.TraceColumns | None:
    """A worker's trace as columns: ``inline`` checked, or (None) read from its file at ``path``;
    None when tracing was off. ``stop_unix_ns``: the worker's last sign of life, past which no
    record can lie. Every reading of a worker's trace comes here, so each leaves out the same
    records (``checked_crc``: the summary's, see :attr:`WorkerTrace.checked_crc`). Raises
    WorkerFileError for a trace that cannot be used."""
    if inline is None:
        return tracesection.read_trace(path, stop_unix_ns=stop_unix_ns, checked_crc=checked_crc)
    return tracesection.check_trace(
        inline, path, workerfile.WorkerFileError, stop_unix_ns=stop_unix_ns, checked_crc=checked_crc
    )


def trace_columns(worker: Worker) -> tracesection.TraceColumns | None:
    """One worker's trace as columns (:func:`columns_at`); None when tracing was off."""
    if worker.document.get("trace") is None:
        return None
    return columns_at(worker.path, inline_trace(worker), worker.stop_ns)


def _stop_on_own_clock(stop_unix_ns: int, pairs: list[tuple[int, int, int]], fallback: int) -> int:
    """The worker's last sign of life (a unix time) on its monotonic clock, via its best pair."""
    if not pairs:
        return fallback
    mono, unix, _ = min(pairs, key=lambda pair: pair[2])
    return max(fallback, stop_unix_ns - (unix - mono))


def summarise(phases: list[dict[str, Any]], stop_unix_ns: int, trace: tracesection.TraceColumns) -> WorkerTrace:
    """One worker's summary from its phases, its last sign of life and its trace."""
    start, end, phase, thread, cpu = trace.spans
    names = {p["id"]: p["path"] for p in phases if type(p.get("id")) is int}
    n = len(start)
    threads = [str(t.get("name") or f"thread {t.get('native_id') or t.get('ident')}") for t in trace.threads]
    if n:
        # The innermost of the spans that end last (they nest: the latest start among them).
        last_end = max(end)
        last = end.index(last_end)
        for k in range(last + 1, min(n, last + _WAIT_LOOKBACK)):
            if end[k] == last_end:
                last = k
        last_thread, last_phase = thread[last], phase[last]
        first_start = start[0]
    else:
        # No span: its life on the timeline is its open entries', else its links' (a client that
        # only stamps lifecycles), never its clock's zero.
        times = [o[0] for o in zip(*trace.open, strict=True)] or [link[3] for link in trace.links] or [0]
        last_end, last_thread, last_phase, first_start = max(times), 0, -1, min(times)
    opened = list(zip(*trace.open, strict=True))
    if opened:
        first_start = min(first_start, min(o[0] for o in opened))
        last_end = max(last_end, max(o[0] for o in opened))
    thread_start: dict[int, int] = {}
    if n and len(threads) <= _FEW_THREADS:
        for t in range(len(threads)):
            try:
                thread_start[t] = start[thread.index(t)]  # sorted by start: its first span (at C speed)
            except ValueError:
                pass
    elif n:  # a server's thousands: each thread's first span in one pass (the earliest index wins)
        first_at = dict(zip(reversed(thread), reversed(range(n)), strict=True))
        thread_start = {t: start[k] for t, k in first_at.items()}
    for o_start, _, o_thread in opened:
        thread_start[o_thread] = min(thread_start.get(o_thread, o_start), o_start)
    links = [Link(*link) for link in trace.links]
    for link in links:
        if link.kind == "wait" and link.phase_id >= 0:
            link.began_ns = _began(trace, link)
        if link.kind == "wait":
            link.after_phase_id = _just_closed(trace, link)
    sync_ids = {p["id"]: p["path"] for p in phases if p.get("sync") and type(p.get("id")) is int}
    arrivals: dict[str, array[int]] = {}
    for phase_id, path in sync_ids.items():
        if n and phase_id in phase:
            arrivals[path] = array("q", compress(start, map(phase_id.__eq__, phase)))
    return WorkerTrace(
        index=-1,
        threads=threads,
        phase_names=names,
        kept=n,
        # Spans left out as unplaceable are said apart: "kept of recorded" tells what the ring dropped.
        recorded=max(trace.recorded - sum(k for (kind, _), k in trace.left_out.items() if kind == "span"), n),
        dropped=trace.dropped,
        first_start_ns=first_start,
        last_end_ns=last_end,
        last_thread=last_thread,
        last_phase=last_phase,
        stop_ns=_stop_on_own_clock(stop_unix_ns, trace.clock_pairs, last_end) if opened else last_end,
        clock_pairs=trace.clock_pairs,
        open=opened,
        links=links,
        links_dropped=max(0, trace.links_dropped),
        arrivals=arrivals,
        thread_start_ns=thread_start,
        left_out=trace.left_out,
        checked_crc=trace.checked_crc,
    )


def _began(trace: tracesection.TraceColumns, link: Link) -> int | None:
    """The start of the span of ``link``'s phase, on its thread, that holds ``link.t_ns``: the wait
    was called inside it. Spans are sorted by start, so it lies shortly before."""
    start, end, phase, thread, _ = trace.spans
    k = bisect_right(start, link.t_ns) - 1
    low = max(-1, k - _WAIT_LOOKBACK)
    while k > low:
        if phase[k] == link.phase_id and thread[k] == link.thread and end[k] >= link.t_ns:
            return start[k]
        k -= 1
    for o_start, o_phase, o_thread in zip(*trace.open, strict=True):
        if o_phase == link.phase_id and o_thread == link.thread and o_start <= link.t_ns:
            return o_start
    return None


def _just_closed(trace: tracesection.TraceColumns, link: Link) -> int:
    """The phase of the span that ended last, at or before ``link.t_ns``, on ``link``'s thread and
    inside the entry the link was made in: the wait it tells about, when the blocking get had
    its own phase. -1 when there is none."""
    start, end, phase, thread, _ = trace.spans
    floor = link.began_ns if link.began_ns is not None else -1
    best, best_end = -1, -1
    k = bisect_right(start, link.t_ns) - 1
    low = max(-1, k - _WAIT_LOOKBACK)
    while k > low and start[k] >= floor:
        if thread[k] == link.thread and best_end < end[k] <= link.t_ns and phase[k] != link.phase_id:
            best, best_end = phase[k], end[k]
        k -= 1
    return best


#: What a pool's process is given per worker: its path, its trace when merge parsed it (a small
#: file read whole), its phases and its last sign of life.
_Task = tuple[Path, Any, list[dict[str, Any]], int]


def _summarise_file(task: _Task) -> WorkerTrace | str | None:
    """One worker's summary, the one line saying why its trace cannot be used, or None (no trace)."""
    path, inline, phases, stop_unix_ns = task
    try:
        trace = columns_at(path, inline, stop_unix_ns)
    except workerfile.WorkerFileError as error:
        return str(error)
    return None if trace is None else summarise(phases, stop_unix_ns, trace)


def gather(run: Run, notes: list[str]) -> list[WorkerTrace]:
    """The summary of every worker with a trace, in the run's order; a trace that cannot be read
    is named in ``notes``. The files are read in a pool where the run is large enough."""
    positions = {id(w): n for n, w in enumerate(run.workers)}
    workers = [w for w in run.workers if w.document.get("trace") is not None]
    tasks: list[_Task] = []
    for worker in workers:
        tasks.append((worker.path, inline_trace(worker), worker.document["phases"], worker.stop_ns))
    jobs = parallel.jobs_for(len(tasks), len(tasks), FILES_PER_JOB)
    traced: list[WorkerTrace] = []
    for worker, result in zip(workers, parallel.ordered_map(_summarise_file, tasks, jobs), strict=True):
        if isinstance(result, str):
            notes.append(f"the trace of {worker.label} is left out: {result}")
        elif result is not None:
            result.index, result.worker, result.worker_index = len(traced), worker, positions[id(worker)]
            traced.append(result)
    return traced


def longest(trace: tracesection.TraceColumns, count: int = LANE_SPANS) -> list[tuple[int, int, int, int, int]]:
    """``(start, end, phase_id, thread, cpu)`` of the ``count`` longest spans (of equal ones, the
    latest), in start order: what a lane draws of a process."""
    start, end, phase, thread, cpu = trace.spans
    n = len(start)
    chosen: Iterable[int] = range(n)
    if n > count:
        # At C speed: the count-th longest duration, then the spans of at least that long (the
        # latest of them where ties make more).
        durations = list(map(operator.sub, end, start))
        floor = heapq.nlargest(count, durations)[-1]
        chosen = list(compress(range(n), map(floor.__le__, durations)))[-count:]
    return [(start[k], end[k], phase[k], thread[k], cpu[k]) for k in chosen]


def _longest_of_file(task: tuple[Path, Any, int, int | None]) -> list[tuple[int, int, int, int, int]] | None:
    """One worker's longest spans; None when its trace cannot be read (the story said why)."""
    try:
        trace = columns_at(*task)
    except workerfile.WorkerFileError:
        return None
    return None if trace is None else longest(trace)


def lane_spans(traces: Sequence[WorkerTrace]) -> list[list[tuple[int, int, int, int, int]] | None]:
    """The longest spans of each of ``traces``, their files read again (in a pool where there
    are enough): only the outputs that draw lanes ask, and only for the processes they draw."""
    tasks = [(t.worker.path, inline_trace(t.worker), t.worker.stop_ns, t.checked_crc) for t in traces]
    jobs = parallel.jobs_for(len(tasks), len(tasks), FILES_PER_JOB)
    return list(parallel.ordered_map(_longest_of_file, tasks, jobs))


def has_trace(run: Run) -> bool:
    """Whether any worker recorded a trace (without reading one)."""
    return any(w.document.get("trace") is not None for w in run.workers)


def spans_of(worker: Worker) -> Iterator[tuple[Any, ...]]:
    """Every kept span of one worker, read again: ``(start, end, phase_id, thread, cpu)``."""
    trace = trace_columns(worker)
    if trace is None:
        return
    yield from zip(*trace.spans, strict=True)
