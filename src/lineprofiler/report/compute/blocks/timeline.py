"""Per-process phase occupancy over time: the TIMELINE block, the lanes of the HTML report and
the slices of the Perfetto export, all from the ``.timeline`` files the sampler thread writes.

A timeline file holds one row per thread per tick: ``(t_ns, tid, phase node id)``. A process's
state at a tick is its main thread's innermost phase, else (the main thread in none) that of its
first other thread in one, else "outside all phases". Consecutive ticks in the same state make a
span, which lasts until the next tick. A tick the sampler missed is marked in the file and
counted here; the span before it is not stretched over the gap past two periods.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ....runfiles import samplefile
from ...model import Lane, Reason, Span, Stall, Timeline, TimelineRole
from ...read.run import Run, Worker
from . import RenderOptions
from .roles import process

#: Columns the TIMELINE block cuts the run into.
COLUMNS = 60
#: A phase whose wait share (1 - CPU / wall) exceeds this counts as waiting in a stall.
WAIT_THRESHOLD = 0.9
#: Stalls shorter than this many sample periods are not named.
MIN_STALL_PERIODS = 2
_SYMBOLS = string.ascii_uppercase + string.ascii_lowercase + string.digits + "#$%&*+=?@^~"


@dataclass
class ProcessTimeline:
    """One process's spans: ``(start unix ns, end unix ns, path or "" for none)``."""

    worker: Worker
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    period_ns: int = 0
    ticks: int = 0
    skipped: int = 0


def _path_table(worker: Worker) -> dict[int, str]:
    table: dict[int, str] = {}
    for phase in worker.document.get("phases") or []:
        node = phase.get("id") if isinstance(phase, dict) else None
        if isinstance(node, int) and isinstance(phase.get("path"), str):
            table[node] = phase["path"]
    return table


def _timeline_file(worker: Worker) -> tuple[Path | None, str | None]:
    samples = worker.document.get("samples")
    info = samples.get("timeline") if isinstance(samples, dict) else None
    if not isinstance(info, dict):
        return None, "the process recorded no timeline (an older profiler, or no sampler)"
    name = info.get("file")
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        reason = info.get("unavailable_reason")
        return None, reason if isinstance(reason, str) else "no timeline rows were written"
    return worker.path.with_name(name), None


def read_process(worker: Worker, path: Path) -> ProcessTimeline:
    """A process's spans from its timeline file (raises SampleFileError)."""
    table = samplefile.read_samples(path)
    cols = table.columns
    if any(c not in cols for c in samplefile.TIMELINE_REQUIRED_COLUMNS):
        raise samplefile.SampleFileError(f"{path}: not a timeline file (columns {', '.join(cols)})")
    timed = all(c in cols for c in samplefile.TIMELINE_COLUMNS)
    names = samplefile.TIMELINE_COLUMNS if timed else samplefile.TIMELINE_REQUIRED_COLUMNS
    columns = [table.column(c) for c in names]
    paths = _path_table(worker)
    period = max(1, table.interval_ns)
    out = ProcessTimeline(worker, period_ns=period)

    def state_of(node: int) -> str:
        return paths.get(node, "(unknown)") if node >= 0 else ""

    # One state per tick: the main thread's phase, else another thread's, else none; with the
    # row it came from (its since/previous fields, in a file that has them).
    ticks: list[tuple[int, str, tuple[int, ...] | None]] = []
    cur_t: int | None = None
    main_row: tuple[int, ...] | None = None
    other_row: tuple[int, ...] | None = None
    gaps: set[int] = set()

    def close() -> None:
        if cur_t is None:
            return
        row = main_row if main_row is not None and main_row[2] >= 0 else other_row or main_row
        ticks.append((cur_t, state_of(row[2]) if row is not None else "", row if timed else None))

    for row in zip(*columns, strict=True):
        t, tid, node = row[0], row[1], row[2]
        if tid == samplefile.TID_SKIPPED:
            out.skipped += node
            gaps.add(len(ticks) + (1 if cur_t is not None and cur_t != t else 0))
            continue
        if t != cur_t:
            close()
            cur_t, main_row, other_row = t, None, None
        if tid == worker.pid:
            main_row = row
        elif node >= 0 and other_row is None:
            other_row = row
    close()
    out.ticks = len(ticks)
    if timed:
        _timed_spans(out, table, ticks, gaps, state_of)
        return out
    for k, (t, state, _) in enumerate(ticks):
        start = table.to_unix_ns(t)
        end = table.to_unix_ns(ticks[k + 1][0]) if k + 1 < len(ticks) else start + period
        if end - start > 2 * period or (k + 1) in gaps:
            end = min(end, start + period)  # a gap is never filled with the state before it
        _append(out.spans, start, end, state)
    return out


def _append(spans: list[tuple[int, int, str]], start: int, end: int, state: str) -> None:
    if end <= start:
        return
    if spans and spans[-1][2] == state and spans[-1][1] == start:
        spans[-1] = (spans[-1][0], end, state)
    else:
        spans.append((start, end, state))


def _timed_spans(
    out: ProcessTimeline,
    table: samplefile.SampleTable,
    ticks: list[tuple[int, str, tuple[int, ...] | None]],
    gaps: set[int],
    state_of: Callable[[int], str],
) -> None:
    """Spans from ticks that know since when their state held and the last phase left before
    it: each tick draws, up to itself, what it knows exactly (its state from ``since``, and the
    last phase left with the time outside phases after it); what lies before that, back to the
    tick before, is the tick before's state, for one period at most. The last tick (the final
    row at close, for a process that closed) ends the timeline: nothing is drawn past it."""
    period = out.period_ns
    drawn_to: int | None = None  # monotonic ns up to which the spans are drawn
    prev_state = ""
    for k, (t, state, row) in enumerate(ticks):
        known: list[tuple[int, int, str]] = []
        if row is not None:
            since, prev_node, prev_since, prev_end = row[3], row[4], row[5], row[6]
            if prev_node >= 0 and 0 < prev_since <= prev_end <= t:
                known.append((prev_since, prev_end, state_of(prev_node)))
                known.append((prev_end, since if 0 < since <= t else prev_end, ""))
            if 0 < since <= t:
                known.append((since, t, state))
        if not known:
            known.append((t, t, state))  # nothing known before the tick itself
        floor = drawn_to if drawn_to is not None else t - period
        first = max(floor, known[0][0])
        if drawn_to is not None and first > drawn_to:
            # Unknown from the tick before to what this one knows: the state the tick before
            # saw, for at most one period, never across a gap the sampler marked.
            fill_to = first if k not in gaps else drawn_to
            fill_to = min(fill_to, drawn_to + period)
            _append(out.spans, table.to_unix_ns(drawn_to), table.to_unix_ns(fill_to), prev_state)
        for a, b, what in known:
            a = max(a, floor)
            if b > a:
                _append(out.spans, table.to_unix_ns(a), table.to_unix_ns(b), what)
        drawn_to = max(t, floor)
        prev_state = state


def read_run(run: Run, options: RenderOptions) -> tuple[list[ProcessTimeline], dict[str, int]]:
    """Every process's timeline (shared by the block and the lanes), and why some have none."""

    def compute() -> tuple[list[ProcessTimeline], dict[str, int]]:
        found: list[ProcessTimeline] = []
        reasons: dict[str, int] = {}
        for worker in run.workers:
            if not worker.has_data:
                continue
            path, reason = _timeline_file(worker)
            if path is None:
                key = reason or "no timeline"
                reasons[key] = reasons.get(key, 0) + 1
                continue
            try:
                found.append(read_process(worker, path))
            except samplefile.SampleFileError as error:
                options.add_caveat(f"{error}; {worker.label} is left out of TIMELINE")
        return found, reasons

    return options.shared("timeline", run, compute)


# -- lanes (HTML, Perfetto) ---------------------------------------------------------------------


def lanes(run: Run, options: RenderOptions) -> list[Lane]:
    """Each process's phase spans (time outside all phases left out), in the run's worker
    order; ``[]`` with ``--no-samples`` or when no process recorded a timeline."""
    if options.no_samples:
        return []
    return [
        Lane(process(p.worker), [Span(path, a, b) for a, b, path in p.spans if path])
        for p in read_run(run, options)[0]
    ]


# -- the TIMELINE block -------------------------------------------------------------------------


def _wait_share(run: Run, role: str, path: str) -> float | None:
    stats = run.roles[role].phases.get(path) if role in run.roles else None
    if stats is None or stats.cpu_wall_ns <= 0:
        return None
    return max(0.0, 1.0 - stats.cpu_ns / stats.cpu_wall_ns)


def _columns(procs: list[ProcessTimeline], start: int, column_ns: float) -> tuple[list[str | None], dict[str, float]]:
    """Per column the state most processes were mostly in; and each state's share of time."""
    votes: list[dict[str, int]] = [{} for _ in range(COLUMNS)]
    time_in: dict[str, float] = {}
    for p in procs:
        per_col: list[dict[str, int]] = [{} for _ in range(COLUMNS)]
        for a, b, state in p.spans:
            time_in[state] = time_in.get(state, 0.0) + (b - a)
            c0 = max(0, int((a - start) // column_ns))
            c1 = min(COLUMNS - 1, int((b - 1 - start) // column_ns))
            for c in range(c0, c1 + 1):
                lo, hi = max(a, start + c * column_ns), min(b, start + (c + 1) * column_ns)
                if hi > lo:
                    per_col[c][state] = per_col[c].get(state, 0) + int(hi - lo)
        for c, held in enumerate(per_col):
            if held:
                state = max(held, key=lambda s: held[s])
                votes[c][state] = votes[c].get(state, 0) + 1
    cols: list[str | None] = [max(v, key=lambda s: (v[s], s != "")) if v else None for v in votes]
    total = sum(time_in.values()) or 1.0
    return cols, {s: t / total for s, t in time_in.items()}


Interval = tuple[int, int, set[str]]


def _stalled(procs: list[ProcessTimeline], waiting: dict[str, set[str]]) -> list[Interval]:
    """Stretches when every process sampled then was outside all phases or in a phase its role
    waits in (``waiting[role]``), between the processes' first and last moment in a phase; with
    the phase paths seen in each."""
    inside = [(a, b) for p in procs for a, b, s in p.spans if s]
    if not inside:
        return []
    lo, hi = min(a for a, _ in inside), max(b for _, b in inside)
    cuts = sorted({t for p in procs for a, b, _ in p.spans for t in (a, b) if lo <= t <= hi} | {lo, hi})
    idx = [0] * len(procs)
    found: list[Interval] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        states: set[str] = set()
        stalled = True
        for k, p in enumerate(procs):
            spans = p.spans
            while idx[k] < len(spans) and spans[idx[k]][1] <= a:
                idx[k] += 1
            if idx[k] < len(spans) and spans[idx[k]][0] <= a:
                state = spans[idx[k]][2]
                states.add(state)
                stalled = stalled and (state == "" or state in waiting.get(p.worker.role, set()))
        stalled = stalled and bool(states)
        if stalled and found and found[-1][1] == a:
            found[-1] = (found[-1][0], b, found[-1][2] | states)
        elif stalled:
            found.append((a, b, set(states)))
    return found


def _overlap(mine: list[Interval], job: list[Interval]) -> list[Interval]:
    """The parts of ``mine`` that fall inside ``job`` (both sorted and disjoint)."""
    out: list[Interval] = []
    i = j = 0
    while i < len(mine) and j < len(job):
        a, b = max(mine[i][0], job[j][0]), min(mine[i][1], job[j][1])
        if b > a:
            out.append((a, b, mine[i][2]))
        if mine[i][1] <= job[j][1]:
            i += 1
        else:
            j += 1
    return out


def _stalls(mine: list[Interval], job: list[Interval], start: int, min_ns: int) -> list[Stall]:
    """A role's stalls: where it waited while the whole job made no progress too. A role that
    waits while another works (a DataLoader worker idle while the trainer computes) is not
    stalled: the job is busy."""
    stalls = [
        Stall(start_ns=a - start, length_ns=b - a, phases=sorted(s))
        for a, b, s in _overlap(mine, job)
        if b - a >= min_ns
    ]
    stalls.sort(key=lambda s: -s.length_ns)
    return stalls


def _unseen(run: Run, role: str, drawn: dict[str, float]) -> dict[str, float]:
    """Phases whose exact self time is a double-digit share of the role's lifetime but whose
    sampled share is under a quarter of that: they ran between samples (a short run, or
    phases shorter than the sample period). The exact totals are the truth; the columns say
    what the samples saw."""
    stats = run.roles.get(role)
    if stats is None or stats.lifetime_ns <= 0:
        return {}
    life = stats.lifetime_ns
    found = {}
    for path, phase in stats.phases.items():
        share = phase.self_ns / life
        if share >= Timeline.UNSEEN_SHARE and drawn.get(path, 0.0) < share / 4:
            found[path] = share
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def timeline_block(run: Run, options: RenderOptions) -> Timeline | None:
    """The TIMELINE block's model; None with ``--no-samples`` or without any timeline."""
    if options.no_samples:
        return None
    procs, reasons = read_run(run, options)
    if not procs or run.end_ns <= run.start_ns:
        return None
    start = run.start_ns
    column_ns = (run.end_ns - start) / COLUMNS
    period = max(p.period_ns for p in procs)
    min_stall = MIN_STALL_PERIODS * period
    names = sorted({p.worker.role for p in procs})
    waiting: dict[str, set[str]] = {}
    for role in names:
        paths = {s for p in procs if p.worker.role == role for _, _, s in p.spans if s}
        waiting[role] = {s for s in paths if (w := _wait_share(run, role, s)) is not None and w > WAIT_THRESHOLD}
    job_stalled = _stalled(procs, waiting)
    roles: list[TimelineRole] = []
    for role in names:
        mine = [p for p in procs if p.worker.role == role]
        cols, shares = _columns(mine, start, column_ns)
        ranked = sorted((s for s in shares if s), key=lambda s: -shares[s])
        legend = {_SYMBOLS[i] if i < len(_SYMBOLS) else "?": path for i, path in enumerate(ranked)}
        unseen = _unseen(run, role, shares)
        symbol = {path: sym for sym, path in legend.items()}
        line = "".join(" " if c is None else Timeline.OUTSIDE if c == "" else symbol[c] for c in cols)
        roles.append(
            TimelineRole(
                role=role,
                processes=len(mine),
                columns=line,
                legend={sym: path for sym, path in legend.items() if sym in line} or legend,
                occupancy=shares,
                stalls=_stalls(_stalled(mine, waiting), job_stalled, start, min_stall),
                skipped_ticks=sum(p.skipped for p in mine),
                ticks=sum(p.ticks for p in mine),
                unseen=unseen,
            )
        )
    hz = 1e9 / period
    return Timeline(
        start_ns=start,
        column_ns=column_ns,
        hz=hz,
        roles=roles,
        wait_threshold=WAIT_THRESHOLD,
        min_stall_ns=min_stall,
        reasons=[Reason(r, n) for r, n in sorted(reasons.items(), key=lambda x: -x[1])],
    )


__all__ = ["COLUMNS", "ProcessTimeline", "lanes", "read_process", "read_run", "timeline_block"]
