"""The text of the sampled lines (``Profiler(line_sampling=...)``), printed inside LINES: per
role, how much of the run the windows covered, then per phase its top lines by self time with
each line's estimated share of the phase and that estimate's 95 % interval."""

from __future__ import annotations

from .. import format as fmt
from ..model_sampled_lines import SampledLinesBlock, SampledPhase, SampledRole

#: Widths past which a location, a function name or a source line is clipped.
LOCATION_WIDTH = 40
FUNCTION_WIDTH = 24
SOURCE_WIDTH = 60

PLUS_MINUS = "\u00b1"
TITLE = "SAMPLED LINES  (line_sampling: exact lines in short windows spread over the run)"
NOTE = (
    "  Share: a line's self time over its phase's inside the windows, \u00b1 the 95 % interval from the"
    " phase's windows"
)


def _clip(text: str, width: int) -> str:
    text = fmt.printable(text)
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def coverage_text(role: SampledRole) -> str:
    """``sampled: N windows covering X of Y s (Z %)``."""
    share = role.sampled_ns / role.wall_ns if role.wall_ns else None
    return (
        f"sampled: {fmt.count(role.windows)} windows covering {fmt.duration(role.sampled_ns)} of "
        f"{fmt.duration(role.wall_ns)} ({fmt.percent(share)})"
    )


def _phase_lines(phase: SampledPhase) -> list[str]:
    head = (
        f"  phase {fmt.printable(phase.path)}  ({fmt.percent(phase.share)} of the sampled time, "
        f"{fmt.count(phase.windows)} windows, {fmt.count(phase.lines)} lines)"
    )
    out = [head]
    if not phase.rows:
        return out
    where = max(len("Line"), *(len(fmt.clip_left(f"{r.path}:{r.line}", LOCATION_WIDTH)) for r in phase.rows))
    function = min(FUNCTION_WIDTH, max(len("Function"), *(len(fmt.printable(r.function)) for r in phase.rows)))
    out.append(
        f"  {'#':>3} {'Share':>7} {PLUS_MINUS:>6} {'Self':>8} {'Time':>8} {'Hits':>11}  {'Line':<{where}}  "
        f"{'Function':<{function}}  Source"
    )
    for row in phase.rows:
        source = "<source unavailable>" if row.source is None else _clip(row.source.strip(), SOURCE_WIDTH)
        location = fmt.clip_left(fmt.printable(f"{row.path}:{row.line}"), LOCATION_WIDTH)
        out.append(
            f"  {row.rank:>3} {fmt.percent(row.share):>7} {fmt.percent(row.error):>6} {fmt.duration(row.self_ns):>8} "
            f"{fmt.duration(row.time_ns):>8} {fmt.count(row.hits):>11}  {location:<{where}}  "
            f"{_clip(row.function, function):<{function}}  {source}"
        )
    return out


def role_lines(role: SampledRole) -> list[str]:
    noun = "process" if role.processes == 1 else "processes"
    copies = "its live copy" if role.live_copies == 1 else "their live copies"
    live = f"; {role.live_copies} from {copies}, killed or running" if role.live_copies else ""
    lines = [
        f"{fmt.printable(role.role.upper())}  ({role.processes} {noun} sampled at {fmt.percent(role.fraction)}{live})"
    ]
    lines.append(f"  {coverage_text(role)}")
    if role.skipped:
        lines.append(f"  {fmt.count(role.skipped)} windows skipped: the program's own line profiler was recording")
    if role.project:
        lines.append(f"  project {fmt.printable(role.project)}")
    for phase in role.phases:
        lines.extend(_phase_lines(phase))
    if not role.phases:
        lines.append("  no line of the project ran inside the windows")
    if role.hidden_phases:
        lines.append(f"  {fmt.count(role.hidden_phases)} more phases, each under 1 % of the sampled time, not shown")
    lines.extend(f"  sampling stopped: {fmt.printable(error)}" for error in role.errors)
    return lines


def sampled_lines_lines(block: SampledLinesBlock | None) -> list[str]:
    """The sampled lines inside LINES; [] when no worker sampled."""
    if block is None:
        return []
    lines = [TITLE, fmt.RULE]
    for index, role in enumerate(block.roles):
        if index:
            lines.append("")
        lines.extend(role_lines(role))
    if block.roles:
        lines.append(NOTE)
    return lines
