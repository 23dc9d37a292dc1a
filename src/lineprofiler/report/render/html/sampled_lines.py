"""The HTML of the sampled lines (``Profiler(line_sampling=...)``) inside the Lines section: per
role the coverage sentence, then a table per phase, folded (``<details>``) so that a reader opens
the phases they want. The numbers and sentences are the text's (:mod:`..text_sampled_lines`);
each table carries ``data-block="sampled-lines"``, the role in ``data-role`` and the phase in
``data-phase``."""

from __future__ import annotations

from html import escape

from ... import format as fmt
from ...model_sampled_lines import SampledLineRow, SampledLinesBlock, SampledPhase, SampledRole
from ..text_sampled_lines import NOTE, coverage_text
from .markup import para, table, td

COLUMNS = ("#", "share", "\u00b1 (95 %)", "self", "time", "hits", "line", "function", "source")


def _row(row: SampledLineRow) -> str:
    source = "<source unavailable>" if row.source is None else row.source.strip()
    return (
        f'<tr data-file="{escape(row.file, quote=True)}" data-line="{row.line}">{td(str(row.rank), row.rank)}'
        f"{td(fmt.percent(row.share), row.share)}{td(fmt.percent(row.error), row.error)}"
        f"{td(fmt.duration(row.self_ns), row.self_ns)}{td(fmt.duration(row.time_ns), row.time_ns)}"
        f"{td(fmt.count(row.hits), row.hits)}{td(fmt.printable(f'{row.path}:{row.line}'), cls='name')}"
        f"{td(fmt.printable(row.function), cls='name')}"
        f'<td class="name src"><code>{escape(fmt.printable(source))}</code></td></tr>'
    )


def _phase(role: SampledRole, phase: SampledPhase, first: bool) -> str:
    summary = (
        f"{fmt.printable(phase.path)}: {fmt.percent(phase.share)} of the sampled time, "
        f"{fmt.count(phase.windows)} windows, {fmt.count(phase.lines)} lines"
    )
    tab = table("sampled-lines", COLUMNS, (_row(row) for row in phase.rows)).replace(
        "<table ",
        f'<table data-role="{escape(role.role, quote=True)}" data-phase="{escape(phase.path, quote=True)}" ',
        1,
    )
    opened = " open" if first else ""
    return f'<details{opened}><summary>{escape(summary)}</summary><div class="wide">{tab}</div></details>'


def sampled_lines_html(block: SampledLinesBlock | None) -> str:
    if block is None:
        return ""
    out = "<h3>Sampled lines</h3>" + para("line_sampling: exact lines in short windows spread over the run")
    for role in block.roles:
        noun = "process" if role.processes == 1 else "processes"
        title = f"{fmt.printable(role.role)} ({role.processes} {noun} sampled at {fmt.percent(role.fraction)})"
        out += f'<h3 data-role="{escape(role.role, quote=True)}">{escape(title)}</h3>' + para(coverage_text(role))
        out += "".join(_phase(role, phase, index == 0) for index, phase in enumerate(role.phases))
        out += "".join(para(f"sampling stopped: {fmt.printable(error)}") for error in role.errors)
    return out + (para(NOTE.strip()) if block.roles else "")


__all__ = ["sampled_lines_html"]
