"""The TIMELINE block as text: per role, the run in 60 columns, each the symbol of the phase
most of the role's processes were in, a legend, and the stalls. Fits in 100 columns."""

from __future__ import annotations

from . import format as fmt
from .model import Stall, Timeline, TimelineRole

#: Stalls named one by one per role; the rest are counted.
STALL_ROWS = 3
_WIDTH = 100
_LABEL = 24


def _wrap(items: list[str], indent: str) -> list[str]:
    lines: list[str] = []
    line = indent
    for item in items:
        if len(line) + len(item) + 2 > _WIDTH and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + "  "
    if line.strip():
        lines.append(line.rstrip())
    return lines


def _stall_text(stall: Stall) -> str:
    phases = ", ".join("outside phases" if p == "" else fmt.printable(p) for p in stall.phases)
    return f"+{fmt.duration(stall.start_ns)} for {fmt.duration(stall.length_ns)} ({phases})"


def _role_lines(role: TimelineRole, timeline: Timeline) -> list[str]:
    label = f"{fmt.printable(role.role)} ({role.processes})"
    label = fmt.clip_left(label, _LABEL - 1).ljust(_LABEL)
    lines = [f"{label}|{role.columns}|"]
    legend = [
        f"{sym} {fmt.clip_left(fmt.printable(path), 28)} {fmt.percent(role.occupancy.get(path, 0.0), 0)}"
        for sym, path in role.legend.items()
    ]
    legend.append(f"{Timeline.OUTSIDE} outside phases {fmt.percent(role.occupancy.get('', 0.0), 0)}")
    lines += _wrap(legend, "  ")
    if role.unseen:
        missed = [f"{fmt.clip_left(fmt.printable(p), 28)} {fmt.percent(s, 0)}" for p, s in role.unseen.items()]
        lines += _wrap(
            ["in the exact totals, under a quarter of it drawn (share of the lifetime):", *missed],
            "  ",
        )
    if role.stalls:
        total = sum(s.length_ns for s in role.stalls)
        head = f"stalls: {len(role.stalls)}, {fmt.duration(total)} in all:"
        shown = [_stall_text(s) + ";" for s in role.stalls[:STALL_ROWS]]
        if len(role.stalls) > STALL_ROWS:
            shown.append(f"and {len(role.stalls) - STALL_ROWS} shorter")
        lines += _wrap([head, *shown], "  ")
    else:
        lines.append("  stalls: none")
    if role.skipped_ticks:
        lines.append(
            f"  the sampler missed {fmt.count(role.skipped_ticks)} of "
            f"{fmt.count(role.ticks + role.skipped_ticks)} ticks (left as gaps)"
        )
    return lines


def timeline_lines(timeline: Timeline | None) -> list[str]:
    if timeline is None or not timeline.roles:
        return []
    head = (
        f"TIMELINE  columns of {fmt.duration(timeline.column_ns)} from the run's start, "
        f"{timeline.hz:g} samples/s; {Timeline.OUTSIDE} outside all phases"
    )
    note = (
        f"  stall: every process of the job outside phases or in a phase waiting > {timeline.wait_threshold:.0%} "
        f"(its run-wide wait), >= {fmt.duration(timeline.min_stall_ns)}"
    )
    lines = [head, note]
    for role in timeline.roles:
        lines += _role_lines(role, timeline)
    for reason in timeline.reasons:
        lines.append(f"  no timeline for {reason.processes} process(es): {fmt.printable(reason.reason)}")
    return lines


__all__ = ["STALL_ROWS", "timeline_lines"]
