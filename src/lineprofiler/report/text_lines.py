"""The text of the LINES block (``report --lines``), printed from its model."""

from __future__ import annotations

from . import format as fmt
from .model import LineRow, LinesBlock, LinesRole

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


def common_folder(rows: list[LineRow]) -> str:
    """The folder (ending in ``/``) every row's shown path lies in, or ``""``."""
    folders = [row.path.rsplit("/", 1)[0] + "/" if "/" in row.path else "" for row in rows]
    if not folders:
        return ""
    common = folders[0]
    for folder in folders[1:]:
        while not folder.startswith(common):
            common = common[:-1].rsplit("/", 1)[0] + "/" if "/" in common[:-1] else ""
    return common


def _location(row: LineRow, folder: str = "") -> str:
    where = f"{row.path[len(folder):]}:{row.line}"
    if row.variant:
        where += f" [source {row.variant}]"
    return fmt.clip_left(fmt.printable(where), LOCATION_WIDTH)


def spread_text(row: LineRow) -> str:
    """``81.7ms–314.7ms``: the least and the most one process spent on the line ("" for one)."""
    if row.min_ns is None or row.max_ns is None:
        return ""
    return f"{fmt.duration(row.min_ns)}\u2013{fmt.duration(row.max_ns)}"


def row_line(row: LineRow, folder: str = "", where: int = LOCATION_WIDTH, function: int = FUNCTION_WIDTH) -> str:
    source = "<source unavailable>" if row.source is None else _clip(row.source.strip(), SOURCE_WIDTH)
    return (
        f"{row.rank:>4} {fmt.duration(row.time_ns):>8} {fmt.percent(row.window_share):>8} {fmt.count(row.hits):>11} "
        f"{fmt.duration(row.per_hit_ns):>8}  {spread_text(row):<17}  {_location(row, folder):<{where}}  "
        f"{_clip(row.function, function):<{function}}  {source}"
    )


def window_text(role: LinesRole) -> str:
    """``entries 100..109 of iteration, 40 profiled in 1.2s``."""
    parts = []
    if role.phase is not None and role.start is not None and role.stop is not None:
        parts.append(f"entries {role.start}..{role.stop - 1} of {fmt.printable(role.phase)}")
    if role.entries is not None:
        parts.append(f"{fmt.count(role.entries)} profiled in {fmt.duration(role.wall_ns)}")
    return ", ".join(parts)


def role_title(role: LinesRole) -> str:
    noun = "process" if role.processes == 1 else "processes"
    head = f"{fmt.printable(role.role.upper())}  ({role.files} of {role.processes} {noun} left line stats"
    window = window_text(role)
    return head + (f"; {window})" if window else ")")


def role_lines(role: LinesRole) -> list[str]:
    lines = [role_title(role)]
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
    lines.extend(role_notes(role))
    return lines


def role_notes(role: LinesRole) -> list[str]:
    """What the role's table does not show: processes without a file, windows cut short."""
    lines = []
    for reason in role.missing:
        noun = "process" if reason.processes == 1 else "processes"
        lines.append(f"  {reason.processes} {noun} left no line stats: {fmt.printable(reason.reason)}")
    if role.partial:
        noun = "window was" if role.partial == 1 else "windows were"
        lines.append(f"  {role.partial} {noun} cut short (the process ended while it was open): fewer entries")
    return lines


def block_notes(block: LinesBlock) -> list[str]:
    if not block.other_attempts:
        return []
    noun = "file" if block.other_attempts == 1 else "files"
    return [f"  {block.other_attempts} line-stats {noun} of other attempts under lines/ not shown"]


def lines_lines(block: LinesBlock | None) -> list[str]:
    """The LINES block; [] when absent."""
    if block is None:
        return []
    lines = ["LINES  (backend=\"lines\" windows; a line's time includes the calls it makes)", fmt.RULE]
    for index, role in enumerate(block.roles):
        if index:
            lines.append("")
        lines.extend(role_lines(role))
    if not block.roles:
        lines.append('no process of this attempt ran a lines window (Profiler(backend="lines", ...))')
    lines.extend(block_notes(block))
    return lines


__all__ = [
    "block_notes",
    "common_folder",
    "lines_lines",
    "role_lines",
    "role_notes",
    "role_title",
    "row_line",
    "spread_text",
    "window_text",
]
