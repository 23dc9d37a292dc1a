"""What the critical path's running segments were doing: each segment's time split by phase.

The walk (:mod:`.critical_path`) knows where a segment ends and the phase its signal was sent in;
the spans say what the thread did before that. For each process on the path (the
:data:`MAX_PROCESSES` holding most of it), its spans are read again and each segment's time is
given to the innermost phase open at each moment (a phase's overlap with the segment less its
children's); time in no span is "no phase". A segment is then named after the phase that holds
most of it, and the path's shares are summed from these splits.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...runfiles import tracesection, workerfile
from .. import parallel
from .model import CriticalPath, HostClock, PathShare, Segment
from .spans import FILES_PER_JOB, WorkerTrace

#: Processes whose segments are split by phase (the rest keep the phase their link names).
MAX_PROCESSES = 32

#: One file's work: its path, its trace when held inline, its phase paths by id, and its running
#: segments as ``(thread index, start, end)`` on its own clock, sorted and disjoint per thread.
_Task = tuple[Path, Any, dict[int, str], list[tuple[int, int, int]]]


def _split_file(task: _Task) -> list[dict[str | None, int]] | None:
    """Per segment, its nanoseconds per innermost phase (None: in no span); None when unreadable."""
    path, inline, names, segments = task
    try:
        if inline is None:
            trace = tracesection.read_trace(path)
        else:
            trace = tracesection.check_trace(inline, path, workerfile.WorkerFileError)
    except workerfile.WorkerFileError:
        return None
    if trace is None:
        return None
    by_thread: dict[int, list[int]] = defaultdict(list)
    for n, (thread, _, _) in enumerate(segments):
        by_thread[thread].append(n)
    starts = {t: [segments[n][1] for n in ns] for t, ns in by_thread.items()}
    overlap: list[dict[int, int]] = [defaultdict(int) for _ in segments]
    start, end, phase, thread_of, _ = trace.spans
    opened = list(zip(*trace.open, strict=True))
    last = max([e for _, _, e in segments], default=0)
    rows = list(zip(start, end, phase, thread_of, strict=True))
    rows.extend((s, last, p, t) for s, p, t in opened)
    for s, e, p, t in rows:
        mine = by_thread.get(t)
        if mine is None:
            continue
        k = max(0, bisect_right(starts[t], s) - 1)
        while k < len(mine):
            _, a, b = segments[mine[k]]
            if a >= e:
                break
            if b > s:
                overlap[mine[k]][p] += min(b, e) - max(a, s)
            k += 1
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
        out.append(own)
    return out


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
        inline = trace.worker.document.get("trace")
        segments = sorted(running[process], key=lambda s: (s.thread, s.start_ns))
        running[process] = segments
        tasks.append(
            (
                trace.worker.path,
                None if tracesection.skipped(inline) else inline,
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
