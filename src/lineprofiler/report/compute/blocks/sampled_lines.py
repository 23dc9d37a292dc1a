"""The sampled lines of ``report --lines``: each role's ``Profiler(line_sampling=...)`` sections
(the worker files' ``line_sampling``), merged by role and by phase.

Per role: the windows, the time they covered and the processes' wall time, added up. Per phase
path: the windows in which it ran a line and the self time of its lines, added up; per line
(file, function, line) its hits, time and self time, added up. A line's share of its phase is
its self time over the phase's (self times add up to the phase's time, so shares add up to 1).

The error: each window is one look at the phase; a line's share of the phase within one window
is a number between 0 and 1 whose mean is the share p, so its variance is at most p(1 - p), and
the mean over n windows has a standard error of at most sqrt(p(1 - p) / n). The report gives
twice that, a 95 % interval whatever the program does inside a window (a loop that runs many
times per window varies less, so the interval is wide for it, never narrow). It assumes the
windows are independent looks, which the jittered gaps are there to make true.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from ....runfiles import layout
from ....runfiles.linesampling import LineSamplingError, SampledProcess, parse_section
from ... import format as fmt
from ...model_sampled_lines import SampledLineRow, SampledLinesBlock, SampledPhase, SampledRole
from ...read.run import Run, Worker
from ...read.sampled_live_copy import LIVE
from . import RenderOptions

#: Phases shown per role, the most sampled first; one under this share of the role's sampled
#: time is left out too.
MAX_PHASES = 8
MIN_PHASE_SHARE = 0.01
#: The annotated page's phases per role (one chosen at a time there, so small ones too).
PAGE_MAX_PHASES = 32
NO_PHASE = "(no phase)"
OTHER_PHASES = "(other phases)"


def interval(share: float, windows: int) -> float:
    """Half-width of the 95 % interval of a share estimated from ``windows`` windows."""
    if windows <= 0:
        return 1.0
    p = min(max(share, 0.0), 1.0)
    return 2.0 * math.sqrt(p * (1.0 - p) / windows)


def _shown(file: str, project: str | None) -> str:
    if project:
        prefix = project.rstrip(os.sep) + os.sep
        if file.startswith(prefix):
            return file[len(prefix) :]
    return file


class _Line:
    __slots__ = ("hits", "time_ns", "self_ns", "source")

    def __init__(self) -> None:
        self.hits = self.time_ns = self.self_ns = 0
        self.source: str | None = None


class _Phase:
    __slots__ = ("windows", "time_ns", "lines")

    def __init__(self) -> None:
        self.windows = 0
        self.time_ns = 0
        self.lines: dict[tuple[str, str, int], _Line] = {}  # by (file, function, line)


def _phase_name(path: str | None, other: bool) -> str:
    if other:
        return OTHER_PHASES
    return NO_PHASE if path is None else path


def _role(
    name: str, processes: Sequence[SampledProcess], top: int | None, max_phases: int, min_share: float, live: int
) -> SampledRole:
    phases: dict[str, _Phase] = {}
    for process in processes:
        for part in process.phases:
            into = phases.setdefault(_phase_name(part.path, part.other), _Phase())
            into.windows += part.windows
            into.time_ns += part.time_ns
            for seen in part.lines:
                slot = into.lines.setdefault((seen.file, seen.function, seen.line), _Line())
                slot.hits += seen.hits
                slot.time_ns += seen.time_ns
                slot.self_ns += seen.self_ns
                if slot.source is None:
                    slot.source = seen.source
    folders = {p.project for p in processes}
    project = folders.pop() if len(folders) == 1 else None
    total_ns = sum(p.time_ns for p in phases.values())
    ordered = sorted(phases.items(), key=lambda kv: (-kv[1].time_ns, kv[0]))
    shown = [
        (path, phase)
        for path, phase in ordered[:max_phases]
        if total_ns and phase.time_ns / total_ns >= min_share
    ]
    out = []
    for path, phase in shown:
        lines = sorted(phase.lines.items(), key=lambda kv: (-kv[1].self_ns, -kv[1].time_ns, kv[0]))
        rows = []
        for rank, ((file, function, lineno), line) in enumerate(lines[:top] if top is not None else lines, 1):
            share = line.self_ns / phase.time_ns if phase.time_ns else 0.0
            rows.append(
                SampledLineRow(
                    rank=rank, file=file, path=_shown(file, project), line=lineno, function=function,
                    source=line.source, hits=line.hits, time_ns=line.time_ns, self_ns=line.self_ns,
                    share=share, error=interval(share, phase.windows),
                )
            )  # fmt: skip
        out.append(
            SampledPhase(
                path=path, windows=phase.windows, time_ns=phase.time_ns,
                share=phase.time_ns / total_ns if total_ns else 0.0, lines=len(phase.lines), rows=rows,
            )
        )  # fmt: skip
    return SampledRole(
        role=name,
        processes=len(processes),
        fraction=processes[0].fraction,
        windows=sum(p.windows for p in processes),
        skipped=sum(p.skipped for p in processes),
        sampled_ns=sum(p.sampled_ns for p in processes),
        wall_ns=sum(p.wall_ns for p in processes),
        project=project,
        phases=out,
        hidden_phases=len(ordered) - len(shown),
        errors=sorted({p.error for p in processes if p.error}),
        live_copies=live,
    )


def _say_live_copy(worker: Worker, options: RenderOptions) -> None:
    """The CAVEATS line of a process whose lines come from their live copy, or whose live copy
    could not be used."""
    source = worker.sampled_lines_from
    name = fmt.printable(layout.sampled_lines_path(worker.path).name)
    if source == LIVE:
        options.add_caveat(
            f"sampled lines of {worker.label}: from its live copy {name}, newer than its last snapshot "
            "(killed before its final snapshot, or still running): every window up to its last copy"
        )
    elif source.startswith("json: "):
        options.add_caveat(f"sampled lines of {worker.label}: from its last snapshot ({source[6:]})")


def sampled_lines_block(run: Run, options: RenderOptions, *, every_line: bool = False) -> SampledLinesBlock | None:
    """The sampled lines of the attempt's workers by role; None when no worker sampled.
    ``every_line``: every recorded line of up to :data:`PAGE_MAX_PHASES` phases however small
    (the annotated page's), not the top ``lines_top`` of the :data:`MAX_PHASES` biggest."""
    by_role: dict[str, list[SampledProcess]] = {}
    live: dict[str, int] = {}
    unreadable: list[str] = []
    workers: list[Worker] = list(run.workers)
    for worker in workers:
        _say_live_copy(worker, options)
        raw = worker.document.get("line_sampling")
        if raw is None:
            continue
        try:
            by_role.setdefault(worker.role, []).append(parse_section(raw))
        except LineSamplingError as error:
            unreadable.append(f"{worker.path}: {error}")
            continue
        live[worker.role] = live.get(worker.role, 0) + (worker.sampled_lines_from == LIVE)
    for line in unreadable:
        options.add_caveat(f"sampled lines not shown: {line}")
    if not by_role and not unreadable:
        return None
    order = list(run.roles)
    top, max_phases, min_share = (
        (None, PAGE_MAX_PHASES, 0.0) if every_line else (options.lines_top, MAX_PHASES, MIN_PHASE_SHARE)
    )
    roles = [
        _role(name, by_role[name], top, max_phases, min_share, live.get(name, 0))
        for name in sorted(by_role, key=lambda r: (order.index(r) if r in order else len(order), r))
    ]
    return SampledLinesBlock(roles=roles, unreadable=unreadable)


__all__ = ["MAX_PHASES", "NO_PHASE", "PAGE_MAX_PHASES", "OTHER_PHASES", "interval", "sampled_lines_block"]
