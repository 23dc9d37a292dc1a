"""What the critical path's running segments were doing: each segment's time split by phase.

The walk (:mod:`.critical_path`) knows where a segment ends and the phase its signal was sent in;
the spans say what the thread did before that. For each process on the path (the
:data:`MAX_PROCESSES` holding most of it), its spans are read again and each segment's time is
given to the innermost phase open at each moment (a phase's overlap with the segment less its
children's); time in no span is "no phase". A segment is then named after the phase that holds
most of it, and the path's shares are summed from these splits.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from itertools import compress, repeat
from pathlib import Path
from typing import Any

from ....runfiles import workerfile
from ...read import parallel
from .model import CriticalPath, HostClock, PathShare, Segment
from .spans import FILES_PER_JOB, WorkerTrace, columns_at, inline_trace

#: Processes whose segments are split by phase (the rest keep the phase their link names).
MAX_PROCESSES = 32
_FAR = 1 << 62

#: One file's work: its path, its trace when held inline, its last sign of life, the CRC-32 of its
#: spans file when found placed (:attr:`~.spans.WorkerTrace.checked_crc`), its phase paths by
#: id, and its running segments as ``(thread index, start, end)`` on its own clock, sorted and
#: disjoint per thread.
_Task = tuple[Path, Any, int, int | None, dict[int, str], list[tuple[int, int, int]]]


def _split_file(task: _Task) -> list[dict[str | None, int]] | None:
    """Per segment, its nanoseconds per innermost phase (None: in no span); None when unreadable."""
    path, inline, stop_unix_ns, checked_crc, names, segments = task
    try:
        trace = columns_at(path, inline, stop_unix_ns, checked_crc)
    except workerfile.WorkerFileError:
        return None
    if trace is None:
        return None
    opened = list(zip(*trace.open, strict=True))
    overlap = overlaps(trace.spans[:4], opened, segments)
    out: list[dict[str | None, int]] = []
    for n, (_, a, b) in enumerate(segments):
        by_path = {names.get(p, f"phase #{p}"): ns for p, ns in overlap[n].items()}
        own: dict[str | None, int] = {}
        for name, ns in by_path.items():
            children = sum(v for other, v in by_path.items() if other.rsplit("/", 1)[0] == name and other != name)
            if ns - children > 0:
                own[name] = ns - children
        covered = sum(ns for name, ns in by_path.items() if "/" not in name)
        if b - a - covered > 0:
            own[None] = b - a - covered
        out.append(_within(own, b - a))
    return out


def _within(own: dict[str | None, int], length: int) -> dict[str | None, int]:
    """``own`` scaled down to sum to at most ``length``: spans of one thread nest, but a file's
    spans that overlap without nesting would give a segment more phase time than it lasted."""
    total = sum(own.values())
    if total <= length:
        return own
    return {name: ns * length // total for name, ns in own.items()}


def overlaps(
    spans: list[Any], opened: list[tuple[int, int, int]], segments: list[tuple[int, int, int]]
) -> list[dict[int, int]]:
    """Per segment ``(thread, start, end)``, the nanoseconds of it each phase id's spans cover.

    ``spans`` are the columns ``start, end, phase_id, thread`` sorted by start; ``opened`` the
    entries still open, ``(start, phase_id, thread)``, which run to the last segment's end. Per
    thread the segments are sorted and disjoint. Each span's first segment is found by a
    ``bisect`` mapped over the column; the spans that lie inside it (nearly all) are summed per
    phase with ``compress`` over each segment's run of them, and only those that cross a
    segment's edge, and the open entries, take the walk: no Python code per span."""
    start, end, phase, thread = spans
    overlap: list[dict[int, int]] = [defaultdict(int) for _ in segments]
    last = max([b for _, _, b in segments], default=0)
    by_thread: dict[int, list[int]] = defaultdict(list)
    for n, (t, _, _) in enumerate(segments):
        by_thread[t].append(n)
    threads = set(thread) if start else set()
    for t, mine in by_thread.items():
        seg_a, seg_b = [segments[n][1] for n in mine], [segments[n][2] for n in mine]
        s_t: Sequence[int]
        e_t: Sequence[int]
        p_t: Sequence[int]
        if threads == {t}:  # the columns as they are: every span is this thread's
            s_t, e_t, p_t = start, end, phase
        elif t in threads:
            take = list(compress(range(len(thread)), map(t.__eq__, thread)))
            s_t, e_t, p_t = ([c[k] for k in take] for c in (start, end, phase))
        else:
            s_t = e_t = p_t = ()
        # i: the first segment that ends after the span starts (never decreasing: the spans are
        # sorted by start); inside: the span lies within it.
        first = list(map(bisect_right, repeat(seg_b), s_t))
        a_of = list(map((seg_a + [_FAR]).__getitem__, first))
        b_of = map((seg_b + [-_FAR]).__getitem__, first)
        inside = list(map(operator.and_, map(operator.le, a_of, s_t), map(operator.ge, b_of, e_t)))
        within = list(map(operator.mul, map(operator.sub, e_t, s_t), inside))  # 0 where not inside
        for i, n in enumerate(mine):  # each segment's spans are one run: summed per phase
            lo, hi = bisect_left(first, i), bisect_left(first, i + 1)
            phases, lengths = p_t[lo:hi], within[lo:hi]
            for p in set(phases):
                overlap[n][p] += sum(compress(lengths, map(p.__eq__, phases)))
        reaching = map(operator.lt, a_of, e_t)  # a segment starts before the span ends
        crossing = compress(range(len(s_t)), map(operator.and_, map(operator.not_, inside), reaching))
        rows = [(first[k], s_t[k], e_t[k], p_t[k]) for k in crossing]
        rows.extend(
            (bisect_right(seg_b, o_start), o_start, max(o_start, last), o_phase)
            for o_start, o_phase, o_thread in opened
            if o_thread == t
        )
        for i, s, e, p in rows:  # across a segment's edge (or still open): the general walk
            while i < len(mine) and seg_a[i] < e:
                overlap[mine[i]][p] += min(seg_b[i], e) - max(seg_a[i], s)
                i += 1
    return overlap


def attribute(path: CriticalPath, traces: Sequence[WorkerTrace], clocks: dict[str, HostClock], run_ns: int) -> None:
    """Name ``path``'s running segments after their main phase and re-sum its shares by phase."""
    running: dict[int, list[Segment]] = defaultdict(list)
    for segment in path.segments:
        if segment.kind == "run" and segment.duration_ns > 0:
            running[segment.process].append(segment)
    chosen = sorted(running, key=lambda p: -sum(s.duration_ns for s in running[p]))[:MAX_PROCESSES]
    tasks: list[_Task] = []
    for process in chosen:
        trace = traces[process]
        offset = clocks[trace.host].offset_ns
        segments = sorted(running[process], key=lambda s: (s.thread, s.start_ns))
        running[process] = segments
        tasks.append(
            (
                trace.worker.path,
                inline_trace(trace.worker),
                trace.worker.stop_ns,
                trace.checked_crc,
                trace.phase_names,
                [(_thread_index(trace, s.thread), s.start_ns - offset, s.end_ns - offset) for s in segments],
            )
        )
    splits: dict[int, dict[str | None, int]] = {}
    jobs = parallel.jobs_for(len(tasks), len(tasks), FILES_PER_JOB)
    for process, result in zip(chosen, parallel.ordered_map(_split_file, tasks, jobs), strict=True):
        if result is None:
            continue
        for segment, own in zip(running[process], result, strict=True):
            if own:
                segment.phase = max(own.items(), key=lambda kv: (kv[1], kv[0] or ""))[0]
                splits[id(segment)] = own
    totals: dict[tuple[int, str | None], int] = defaultdict(int)
    for segment in path.segments:
        for phase, ns in splits.get(id(segment), {segment.phase: segment.duration_ns}).items():
            totals[(segment.process, phase)] += ns
    path.shares = sorted(
        (
            PathShare(process, phase, ns, ns / run_ns if run_ns > 0 else 0.0)
            for (process, phase), ns in totals.items()
            if ns > 0
        ),
        key=lambda share: (-share.duration_ns, share.process, share.phase or ""),
    )


def _thread_index(trace: WorkerTrace, name: str) -> int:
    try:
        return trace.threads.index(name)
    except ValueError:
        return 0
