"""The text of the LINES block (``report --lines``), printed from its model."""

from __future__ import annotations

from . import format as fmt
from .model import LineRow, LinesBlock, LinesRole

# The LINES block's sentences, which the HTML page prints too, are worded in .wording.
from .wording import common_folder, lines_block_notes, lines_role_notes, lines_role_title, spread_text, window_text

#: Widths past which a location, a function name or a source line is clipped.
LOCATION_WIDTH = 40
FUNCTION_WIDTH = 24
SOURCE_WIDTH = 60


def _head(where: int, function: int) -> str:
    return (
        f"{'#':>4} {'Time':>8} {'% window':>8} {'Hits':>11} {'Per hit':>8}  {'Per process':<17}  "
        f"{'Line':<{where}}  {'Function':<{function}}  Source"
    )


def _clip(text: str, width: int) -> str:
    text = fmt.printable(text)
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _location(row: LineRow, folder: str = "") -> str:
    where = f"{row.path[len(folder):]}:{row.line}"
    if row.variant:
        where += f" [source {row.variant}]"
    return fmt.clip_left(fmt.printable(where), LOCATION_WIDTH)


def row_line(row: LineRow, folder: str = "", where: int = LOCATION_WIDTH, function: int = FUNCTION_WIDTH) -> str:
    source = "<source unavailable>" if row.source is None else _clip(row.source.strip(), SOURCE_WIDTH)
    return (
        f"{row.rank:>4} {fmt.duration(row.time_ns):>8} {fmt.percent(row.window_share):>8} {fmt.count(row.hits):>11} "
        f"{fmt.duration(row.per_hit_ns):>8}  {spread_text(row):<17}  {_location(row, folder):<{where}}  "
        f"{_clip(row.function, function):<{function}}  {source}"
    )


def role_title(role: LinesRole) -> str:
    noun = "process" if role.processes == 1 else "processes"
    head = f"{fmt.printable(role.role.upper())}  ({role.files} of {role.processes} {noun} left line stats"
    window = window_text(role)
    return head + (f"; {window})" if window else ")")


def role_lines(role: LinesRole) -> list[str]:
    lines = [lines_role_title(role)]
    folder = common_folder(role.rows)
    if role.project:
        within = f"   files in {fmt.printable(folder)}" if folder else ""
        lines.append(f"  project {fmt.printable(role.project)}{within}")
    if role.rows:
        shown = f"top {len(role.rows)} of {fmt.count(role.lines)} lines by time"
        lines.append(f"  {shown}, hits and time summed over the role's processes")
        where = max(len("Line"), *(len(_location(row, folder)) for row in role.rows))
        function = min(FUNCTION_WIDTH, max(len("Function"), *(len(fmt.printable(row.function)) for row in role.rows)))
        lines.append(_head(where, function))
        lines.extend(row_line(row, folder, where, function) for row in role.rows)
    elif role.files:
        lines.append("  no line of the project ran inside the windows")
    lines.extend(lines_role_notes(role))
    return lines


def lines_lines(block: LinesBlock | None) -> list[str]:
    """The LINES block; [] when absent."""
    if block is None:
        return []
    title = "LINES  (backend=\"lines\" windows; a line's time includes the calls it makes, a recursive function's once)"
    lines = [title, fmt.RULE]
    for index, role in enumerate(block.roles):
        if index:
            lines.append("")
        lines.extend(role_lines(role))
    if not block.roles:
        lines.append('no process of this attempt ran a lines window (Profiler(backend="lines", ...))')
    lines.extend(lines_block_notes(block))
    return lines


__all__ = ["lines_lines", "role_lines", "row_line"]
