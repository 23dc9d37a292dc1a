"""The critical path: the chain of spans and links that set the run's length.

Start at the moment the run's last process stopped, on the thread that ended last, and walk back
in time. At each ``wait`` link of that thread whose signal came after the wait began (the thread
was blocked on it), jump along the link to the signalling thread, at the moment of the signal;
a wait whose item was signalled before it began did not block, and the walk goes past it. Where
no such wait is left, the path begins at that thread's first span.

The walk never leaves what the rings kept: a process's first kept span (or open entry) is the
earliest it can be on the path. A wait that ended before it is not looked at, and a wait whose
signal came before the signalling process's first kept span (its ring dropped what it was doing
then, though its link ring may still hold the signal) ends the walk: the path then begins at that
wait's end, and :attr:`~.model.CriticalPath.unknown_before` names the process whose spans are gone.
So the path lies within the run, and no share of it exceeds the run. Each piece is a
:class:`~.model.Segment`: a thread running up to the point the path left it (named after the phase
the link or the last span was recorded in), or the wake-up latency between a signal and the end
of its wait.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence

from .clocks import Match
from .model import CriticalPath, HostClock, PathShare, Segment
from .spans import Link, WorkerTrace


def _index_waits(
    traces: Sequence[WorkerTrace], matches: Sequence[Match], clocks: dict[str, HostClock]
) -> dict[tuple[int, int], tuple[list[int], list[Match]]]:
    """Per (process, thread), its matched waits sorted by when they ended on the timeline."""
    by_thread: dict[tuple[int, int], list[tuple[int, int, Match]]] = defaultdict(list)
    for n, match in enumerate(matches):
        waiter, wait = match[2], match[3]
        by_thread[(waiter.index, wait.thread)].append((wait.t_ns + clocks[waiter.host].offset_ns, n, match))
    out = {}
    for key, rows in by_thread.items():
        rows.sort(key=lambda row: (row[0], row[1]))
        out[key] = ([row[0] for row in rows], [row[2] for row in rows])
    return out


def _last_phase(trace: WorkerTrace, thread: int) -> int:
    """The phase a stopped process was last in: its innermost open entry, else its last span's."""
    opened = [o for o in trace.open if o[2] == thread]
    if opened:
        return max(opened)[1]
    return trace.last_phase


def critical_path(
    traces: Sequence[WorkerTrace], matches: Sequence[Match], clocks: dict[str, HostClock], run_ns: int
) -> tuple[CriticalPath | None, set[int]]:
    """The path, and the ``id`` of each link (signal) it jumped along."""
    if not traces:
        return None, set()

    def on_timeline(trace: WorkerTrace, t_ns: int) -> int:
        return t_ns + clocks[trace.host].offset_ns

    def floor(trace: WorkerTrace) -> int | None:
        """Its first kept moment on the timeline; None when it kept no span and no open entry."""
        return on_timeline(trace, trace.first_start_ns) if trace.kept or trace.open else None

    last = max(traces, key=lambda t: (on_timeline(t, t.stop_ns), -t.index))
    thread = last.last_thread
    if last.open:
        thread = max(last.open)[2]
    end = on_timeline(last, last.stop_ns)
    waits = _index_waits(traces, matches, clocks)
    segments: list[Segment] = []
    used: set[int] = set()
    unknown_before: int | None = None
    trace, now, phase_id = last, end, _last_phase(last, thread)
    for _ in range(len(matches) + 1):
        times, rows = waits.get((trace.index, thread), ([], []))
        k = bisect_right(times, now) - 1
        low = floor(trace)
        jump: tuple[WorkerTrace, Link, Link] | None = None
        while k >= 0 and low is not None and times[k] >= low:
            signaller, signal, _, wait = rows[k]
            sent = on_timeline(signaller, signal.t_ns)
            began = None if wait.began_ns is None else on_timeline(trace, wait.began_ns)
            blocked = began is None or sent > began
            if blocked and sent < now and id(signal) not in used and sent <= times[k]:
                jump = (signaller, signal, wait)
                break
            k -= 1
        if jump is not None:
            signaller_floor = floor(jump[0])
            if signaller_floor is None or on_timeline(jump[0], jump[1].t_ns) < signaller_floor:
                # It waited on what its signaller did before the signaller's oldest kept span:
                # the path before this wait's end is not in the files.
                if times[k] < now:
                    segments.append(_segment("run", trace, thread, times[k], now, phase_id))
                unknown_before = jump[0].index
                break
        if jump is None:
            first = on_timeline(trace, trace.thread_start_ns.get(thread, trace.first_start_ns))
            segments.append(_segment("run", trace, thread, min(first, now), now, phase_id))
            break
        signaller, signal, wait = jump
        used.add(id(signal))
        ended, sent = times[k], on_timeline(signaller, signal.t_ns)
        if ended < now:
            segments.append(_segment("run", trace, thread, ended, now, phase_id))
        segments.append(_segment("wake", trace, thread, sent, ended, wait.phase_id, wait))
        trace, thread, now, phase_id = signaller, signal.thread, sent, signal.phase_id
    segments.reverse()
    start = segments[0].start_ns if segments else end
    totals: dict[tuple[int, str | None], int] = defaultdict(int)
    for segment in segments:
        totals[(segment.process, segment.phase)] += segment.duration_ns
    shares = sorted(
        (PathShare(process, phase, ns, ns / run_ns if run_ns > 0 else 0.0) for (process, phase), ns in totals.items()),
        key=lambda share: (-share.duration_ns, share.process, share.phase or ""),
    )
    jumps = sum(1 for s in segments if s.kind == "wake")
    return CriticalPath(start, end, segments, shares, jumps, unknown_before), used


def _segment(
    kind: str, trace: WorkerTrace, thread: int, start: int, end: int, phase_id: int, link: Link | None = None
) -> Segment:
    return Segment(
        kind=kind,
        process=trace.index,
        thread=trace.thread_name(thread),
        start_ns=start,
        end_ns=end,
        phase=trace.phase_name(phase_id),
        channel=None if link is None else link.channel,
        key=None if link is None else link.key,
    )
