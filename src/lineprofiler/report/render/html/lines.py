"""The HTML of the LINES block (``report --lines --html``): one table per role with heat bars.

The numbers and sentences are the text's (:mod:`..text_blocks` prints the same model; both take
the sentences from :mod:`..wording`): a row per line, its time shaded in proportion to the
role's slowest line, the per-process spread beside it. Cells carry their unformatted values in
``data-v``; the table carries ``data-block="lines"`` and the role in ``data-role``.
"""

from __future__ import annotations

from html import escape

from ... import format as fmt
from ... import wording
from ...model import LineRow, LinesBlock, LinesRole
from .markup import para, section, table, td
from .sampled_lines import sampled_lines_html

COLUMNS = ("#", "time", "% window", "hits", "per hit", "per process (min\u2013max)", "line", "function", "source")


def _heat(row: LineRow, top_ns: int) -> str:
    """The time cell, shaded from the left by the line's share of the role's slowest line."""
    share = row.time_ns / top_ns if top_ns > 0 else 0.0
    width = f"{max(0.0, min(1.0, share)) * 100:.1f}%"
    style = f"background:linear-gradient(90deg,#f6b59b {width},transparent {width})"
    return (
        f'<td class="heat" style="{style}" data-v="{row.time_ns}" data-share="{share:.4f}">'
        f"{escape(fmt.duration(row.time_ns))}</td>"
    )


def row_html(row: LineRow, top_ns: int, folder: str) -> str:
    where = f"{row.path[len(folder):]}:{row.line}" + (f" [source {row.variant}]" if row.variant else "")
    source = "<source unavailable>" if row.source is None else row.source.strip()
    spread = wording.spread_text(row)
    low = "" if row.min_ns is None else row.min_ns
    return (
        f'<tr data-file="{escape(row.file, quote=True)}" data-line="{row.line}">{td(str(row.rank), row.rank)}'
        f"{_heat(row, top_ns)}{td(fmt.percent(row.window_share), row.window_share)}"
        f"{td(fmt.count(row.hits), row.hits)}{td(fmt.duration(row.per_hit_ns), row.per_hit_ns)}"
        f"{td(spread, low)}{td(fmt.printable(where), cls='name')}{td(fmt.printable(row.function), cls='name')}"
        f'<td class="name src"><code>{escape(fmt.printable(source))}</code></td></tr>'
    )


def role_html(role: LinesRole) -> str:
    title = f'<h3 data-role="{escape(role.role, quote=True)}">{escape(wording.lines_role_title(role))}</h3>'
    folder = wording.common_folder(role.rows)
    about = ""
    if role.project:
        where = f"; files in {fmt.printable(folder)}" if folder else ""
        about = para(f"project {fmt.printable(role.project)}{where}")
    body = ""
    if role.rows:
        top_ns = max(row.time_ns for row in role.rows)
        about += para(f"top {len(role.rows)} of {fmt.count(role.lines)} lines by time, hits and time summed over "
                      "the role's processes")
        tab = table("lines", COLUMNS, (row_html(row, top_ns, folder) for row in role.rows)).replace(
            "<table ", f'<table data-role="{escape(role.role, quote=True)}" ', 1
        )
        body = f'<div class="wide">{tab}</div>'
    notes = "".join(para(line.strip()) for line in wording.lines_role_notes(role))
    return title + about + body + notes


def lines_html(block: LinesBlock) -> str:
    intro = para('backend="lines" windows; a line\'s time includes the calls it makes, a recursive function\'s once')
    roles = "".join(role_html(role) for role in block.roles)
    if not roles and block.sampled is None:
        roles = para("no process of this attempt ran a lines window")
    notes = "".join(para(line.strip()) for line in wording.lines_block_notes(block))
    return section("lines", "Lines", intro + roles + notes + sampled_lines_html(block.sampled))


__all__ = ["lines_html", "role_html", "row_html"]
