"""The :class:`~.model.Story` of a run: its traces read (:mod:`.spans`), its links matched, its
clocks aligned (:mod:`.clocks`), then its critical path, step skew and findings."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ....runfiles import tracesection
from ... import format as fmt
from ...read.merge import ReportError
from ...read.run import Run
from ..cpu_use import RunCpu, from_files
from .attribution import attribute
from .clocks import Match, estimate
from .critical_path import critical_path
from .findings import findings
from .lifecycles import lifecycles
from .model import Arrow, HostClock, LaneSpan, Story, StoryLane, TracedProcess
from .skew import skew
from .spans import Link, WorkerTrace, gather, has_trace, lane_spans

#: Matched links the outputs draw (the critical path's first); the rest are counted.
MAX_ARROWS = 5000
#: Processes whose lanes the HTML draws (the critical path's first, then the longest-lived).
MAX_LANES = 64


def match_links(traces: Sequence[WorkerTrace]) -> tuple[list[Match], int]:
    """Each wait matched to the signal of its channel and key, and how many waits had none.

    With several signals of one key, the latest one of the same host that came before the wait
    (one clock: comparable); else the first."""
    signals: dict[tuple[str, str], list[tuple[WorkerTrace, Link]]] = defaultdict(list)
    for trace in traces:
        for link in trace.links:
            if link.kind == "signal":
                signals[(link.channel, link.key)].append((trace, link))
    matches: list[Match] = []
    unmatched = 0
    for trace in traces:
        for link in trace.links:
            if link.kind != "wait":
                continue
            candidates = signals.get((link.channel, link.key))
            if not candidates:
                unmatched += 1
                continue
            chosen = candidates[0]
            if len(candidates) > 1:
                before = [c for c in candidates if c[0].host == trace.host and c[1].t_ns <= link.t_ns]
                if before:
                    chosen = max(before, key=lambda c: c[1].t_ns)
            matches.append((chosen[0], chosen[1], trace, link))
    return matches, unmatched


def _process(trace: WorkerTrace, clocks: dict[str, HostClock]) -> TracedProcess:
    offset = clocks[trace.host].offset_ns
    worker = trace.worker
    return TracedProcess(
        index=trace.index,
        worker=trace.worker_index,
        role=worker.role,
        host=worker.host,
        pid=worker.pid,
        rank=worker.rank,
        label=worker.label,
        spans_kept=trace.kept,
        spans_recorded=trace.recorded,
        links=len(trace.links),
        open_entries=len(trace.open),
        start_ns=trace.first_start_ns + offset,
        end_ns=trace.stop_ns + offset,
        killed=trace.killed,
        offset_ns=offset,
    )


def _lane(trace: WorkerTrace, offset: int, longest: list[tuple[int, int, int, int, int]] | None) -> StoryLane:
    drawn = longest or []
    spans = [
        LaneSpan(s + offset, e + offset, trace.phase_name(p) or "", th, None if c < 0 else c)
        for s, e, p, th, c in drawn
    ]
    spans.extend(
        LaneSpan(s + offset, trace.stop_ns + offset, trace.phase_name(p) or "", th, None, open=True)
        for s, p, th in trace.open
    )
    return StoryLane(trace.index, list(trace.threads), spans, trace.kept - len(drawn))


def _lanes(chosen: Sequence[WorkerTrace], clocks: dict[str, HostClock]) -> list[StoryLane]:
    ordered = sorted(chosen, key=lambda t: t.index)
    return [
        _lane(t, clocks[t.host].offset_ns, longest) for t, longest in zip(ordered, lane_spans(ordered), strict=True)
    ]


def _timeline_unix(traces: Sequence[WorkerTrace], clocks: dict[str, HostClock]) -> int | None:
    """``unix - monotonic`` of the reference host's most certain clock pair."""
    pairs = [pair for t in traces if clocks[t.host].source == "reference" for pair in t.clock_pairs]
    if not pairs:
        return None
    mono, unix, _ = min(pairs, key=lambda pair: pair[2])
    return unix - mono


def _left_out_note(traces: Sequence[WorkerTrace]) -> str:
    """One line for the records of ``traces`` that could not be placed (each trace's rest stands)."""
    total: dict[tuple[str, str], int] = defaultdict(int)
    for trace in traces:
        for key, n in trace.left_out.items():
            total[key] += n
    who = ", ".join(t.worker.label for t in traces[:5]) + (f" and {len(traces) - 5} more" if len(traces) > 5 else "")
    return (
        f"{fmt.count(sum(total.values()))} record(s) of the trace of {who} could not be placed and are left out "
        f"({tracesection.left_out_text(total)}); the rest of the trace is reported"
    )


def story(run: Run, cpu: RunCpu | None = None) -> tuple[Story | None, list[str]]:
    """The story, or None when no worker has a trace; and the CAVEATS lines it adds. ``cpu``:
    each process's CPU parts (default: read from the files as the findings ask)."""
    if not has_trace(run):
        return None, []
    notes: list[str] = []
    traces = gather(run, notes)
    if not traces:
        return None, notes
    matches, unmatched = match_links(traces)
    clocks = estimate(traces, matches)
    # The traced length: from the first moment any trace holds (a span, an open entry, a link) to
    # the last; a trace of none of them (tracing on, nothing recorded) has no moment to add.
    timed = [t for t in traces if t.kept or t.open or t.links] or list(traces)
    start = min(t.first_start_ns + clocks[t.host].offset_ns for t in timed)
    end = max(t.stop_ns + clocks[t.host].offset_ns for t in timed)
    run_ns = max(0, end - start)
    kept = sum(t.kept for t in traces)
    # No span, no path: a run that only stamped links and lifecycles has nothing it ran.
    path, used = critical_path(traces, matches, clocks, run_ns) if kept else (None, set())
    if path is not None:
        attribute(path, traces, clocks, run_ns)
    arrows = []
    backwards = late_signals = 0
    for signaller, signal, waiter, wait in matches:
        sent = signal.t_ns + clocks[signaller.host].offset_ns
        ended = wait.t_ns + clocks[waiter.host].offset_ns
        if ended < sent and signaller.host == waiter.host:
            late_signals += 1  # one clock: the item was taken before signal() was called
        elif ended < sent:
            backwards += 1
        arrows.append(
            Arrow(
                signal.channel,
                signal.key,
                signaller.index,
                signal.thread,
                sent,
                waiter.index,
                wait.thread,
                ended,
                id(signal) in used,
                ended < sent,
            )
        )
    arrows.sort(key=lambda a: (not a.on_path, a.from_ns))
    left_out = max(0, len(arrows) - MAX_ARROWS)
    del arrows[MAX_ARROWS:]
    skews = skew(traces, clocks)
    recorded = sum(t.recorded for t in traces)
    for clock in clocks.values():
        if clock.disagreement:
            notes.append(clock.disagreement)
    if backwards:
        notes.append(
            f"{fmt.count(backwards)} link(s) end before their signal on the run's timeline: the clocks disagree "
            "there (or a key was signalled twice); those arrows are marked 'clocks disagree', and the critical "
            "path does not follow them"
        )
    if late_signals:
        notes.append(
            f"{fmt.count(late_signals)} link(s) end before their signal on one host's clock: the consumer had the "
            "item before the producer called signal() (call it just before the put or send); those arrows are "
            "drawn backwards, and the critical path does not follow them"
        )
    if unmatched:
        notes.append(f"{fmt.count(unmatched)} wait(s) have no signal of their channel and key in the traced files")
    if kept < recorded:
        dropping = sum(1 for t in traces if t.kept < t.recorded)
        notes.append(
            f"the story has {fmt.count(kept)} of {fmt.count(recorded)} spans kept (the oldest dropped, in "
            f"{dropping} process(es) whose ring filled): the critical path and the findings cover the spans kept"
        )
    links_dropped = sum(t.links_dropped for t in traces)
    if links_dropped:
        dropping = sum(1 for t in traces if t.links_dropped)
        notes.append(
            f"{fmt.count(links_dropped)} link(s) were dropped (the oldest, in {dropping} process(es) whose link ring "
            "filled): waits on them are unmatched, and the critical path does not follow them"
        )
    untraced = len(run.workers) - len(traces)
    if untraced:
        notes.append(f"{untraced} process(es) recorded no trace: the story leaves them out")
    unplaced = [t for t in traces if t.left_out]
    if unplaced:
        notes.append(_left_out_note(unplaced))
    if path is not None and path.unknown_before is not None:
        gone = traces[path.unknown_before]
        notes.append(
            f"the critical path begins {fmt.duration(path.start_ns - start)} into the traced run, where it waited on "
            f"a signal {gone.worker.label} sent before its oldest kept span (its ring dropped the older spans): what "
            "set the run's length before that is not in the files"
        )
    on_path = {s.process for s in path.segments} if path is not None else set()
    chosen = sorted(traces, key=lambda t: (t.index not in on_path, -(t.stop_ns - t.first_start_ns)))[:MAX_LANES]
    result = Story(
        run_start_ns=start,
        run_end_ns=end,
        processes=[_process(t, clocks) for t in traces],
        hosts=list(clocks.values()),
        spans_kept=kept,
        spans_recorded=recorded,
        path=path,
        findings=findings(traces, path, skews, run_ns, cpu if cpu is not None else from_files(run)),
        skew=skews,
        arrows=arrows,
        arrows_left_out=left_out,
        notes=notes,
        timeline_unix_ns=_timeline_unix(traces, clocks),
        lifecycles=lifecycles(traces, clocks),
    )
    result.lanes_from(lambda: _lanes(chosen, clocks))
    return result, notes


def run_story(run: Run) -> tuple[Story, list[str]]:
    """The story of ``run`` and its CAVEATS (the run's, then the story's own notes). Raises
    ReportError (one line: the first reason, and how many more) when no worker has a usable
    trace: a thousand workers could each give one."""
    result, notes = story(run)
    if result is None:
        reason = f": {notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else "") if notes else ""
        raise ReportError(f"no worker of this run recorded a usable trace (Profiler(trace=True)){reason}")
    return result, list(run.caveats) + [n for n in notes if n not in run.caveats]
