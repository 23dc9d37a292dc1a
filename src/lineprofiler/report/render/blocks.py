"""The report's blocks as they are written: one ordered table that the text and the HTML page
both walk.

:data:`BLOCKS` has one entry per block of :data:`~..compute.build.BLOCKS`, in that order (the
order both outputs print): the block (its computation and what CAVEATS calls it), its text
printer (:mod:`.text`, :mod:`.text_blocks`) and its HTML section (:mod:`.html.page`); ``None``
where that output has no such block (the HTML draws the header at the top of the page and the
lanes instead of the TIMELINE's columns). A block that fails to print costs that block only: it
is named under CAVEATS and the rest is printed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..compute import build
from ..compute.blocks import RenderOptions
from ..model import Report
from ..read.run import Run
from . import cpu_text, text, text_blocks
from .html import cpu as cpu_html
from .html import page
from .html.lines import lines_html
from .html.markup import page as html_page
from .html.story import story_html

Printer = Callable[[Any], list[str]]


@dataclass(frozen=True)
class Section:
    """A block's HTML section: its anchor (and ``id``), its title in the page's contents, and
    what draws it from the whole report (``""``: the block is absent)."""

    anchor: str
    title: str
    draw: Callable[[Report], str]


@dataclass(frozen=True)
class Block:
    """One block of the report, computed and written."""

    block: build.Block
    text: Printer | None
    html: Section | None


# Each HTML section: "" when its block is absent. They look the drawing functions up in
# html/page.py at each call, so that a test can replace one.


def _roles(r: Report) -> str:
    return page.roles_html(r.roles) if r.roles else ""


def _dominant(r: Report) -> str:
    return page.dominant_html(r.dominant) if r.dominant is not None and r.dominant.phases else ""


def _counters(r: Report) -> str:
    return page.counters_html(r.dominant, r.counters)


def _iterations(r: Report) -> str:
    return page.iterations_html(r.iterations) if r.iterations is not None and r.iterations.roles else ""


def _windows(r: Report) -> str:
    return page.windows_html(r.windows) if r.windows else ""


def _lines(r: Report) -> str:
    return lines_html(r.lines) if r.lines is not None else ""


def _io_by_phase(r: Report) -> str:
    return page.io_by_phase_html(r.io_by_phase) if r.io_by_phase is not None and r.io_by_phase.phases else ""


def _io(r: Report) -> str:
    return page.io_html(r.io, r.header) if r.io is not None else ""


def _memory(r: Report) -> str:
    return page.memory_html(r.memory, r.header) if r.memory is not None else ""


def _cpu(r: Report) -> str:
    return cpu_html.cpu_html(r.cpu) if r.cpu is not None else ""


def _gpu(r: Report) -> str:
    return page.gpu_html(r.gpu, r.header) if r.gpu is not None else ""


def _lanes(r: Report) -> str:
    return page.lanes_html(r.lanes, r.header)


def _story(r: Report) -> str:
    # A traced run only: other pages are what they were.
    return story_html(r.story) if r.story is not None else ""


#: Each block's text printer and HTML section, by :class:`~..model.Report` attribute.
_OUTPUTS: dict[str, tuple[Printer | None, Section | None]] = {
    "header": (text.header_lines, None),
    "roles": (text.roles_lines, Section("roles", "Roles", _roles)),
    "dominant": (text.dominant_lines, Section("dominant", "Dominant phases", _dominant)),
    "counters": (text.counters_lines, Section("counters", "Counters", _counters)),
    "iterations": (text.iterations_lines, Section("iterations", "Iterations", _iterations)),
    "windows": (text.windows_lines, Section("windows", "Backend windows", _windows)),
    "lines": (text_blocks.lines_lines, Section("lines", "Lines", _lines)),
    "io_by_phase": (text_blocks.io_by_phase_lines, Section("io-by-phase", "I/O by phase", _io_by_phase)),
    "io": (text_blocks.io_lines, Section("io", "I/O", _io)),
    "memory": (text_blocks.memory_lines, Section("memory", "Memory", _memory)),
    "cpu": (cpu_text.cpu_lines, Section("cpu", "CPU", _cpu)),
    "gpu": (text_blocks.gpu_lines, Section("gpu", "GPU", _gpu)),
    "timeline": (text_blocks.timeline_lines, None),
    "lanes": (None, Section("timeline", "Timeline", _lanes)),
    "story": (text_blocks.story_lines, Section("story", "Story", _story)),
}


def _written(block: build.Block) -> Block:
    text_printer, html_section = _OUTPUTS[block.attribute]
    if (text_printer is None) != (block.printed_as is None):
        raise TypeError(f"the {block.attribute} block's text printer and printed_as disagree")
    return Block(block, text_printer, html_section)


#: Every block, computed and written, in the order both outputs print them: a block with no
#: entry above, or a text printer where the block names none, fails here, at import.
BLOCKS: tuple[Block, ...] = tuple(_written(block) for block in build.BLOCKS)

#: ``(origin, name, Report attribute, printer)`` of every block the text prints, in order.
PRINTERS: tuple[tuple[str, str, str, Printer], ...] = tuple(
    (b.block.origin, b.block.printed_as, b.block.attribute, b.text)
    for b in BLOCKS
    if b.text is not None and b.block.printed_as is not None
)


def render_report(report: Report) -> str:
    """A computed report as text (no trailing newline)."""
    caveats = list(report.caveats)
    chunks: list[list[str]] = []
    for origin, name, attribute, printer in PRINTERS:
        try:
            lines = printer(getattr(report, attribute))
        except Exception as error:
            if os.environ.get("LINEPROFILER_DEBUG"):
                raise
            caveats.append(build.failure_line(origin, name, error))
            continue
        if lines:
            chunks.append(lines)
    tail = text.caveats_lines(caveats)
    if tail:
        chunks.append(tail)
    return "\n\n".join("\n".join(line.rstrip() for line in chunk) for chunk in chunks)


def render(run: Run, options: RenderOptions | None = None) -> str:
    """The whole report of ``run`` as text (no trailing newline)."""
    return render_report(build.build_report(run, options))


def render_html(report: Report) -> str:
    """The whole report as one self-contained HTML page."""
    parts: list[str] = []
    nav: list[tuple[str, str]] = []
    caveats = list(report.caveats)
    for section in (b.html for b in BLOCKS if b.html is not None):
        try:
            html = section.draw(report)
        except Exception as error:  # one section failing costs that section, as in the text
            caveats.append(
                f"the html section {section.anchor} failed and is missing: {error.__class__.__name__}: {error}"
            )
            continue
        if html:
            parts.append(html)
            nav.append((section.anchor, section.title))
    header = report.header
    top = page.header_html(header) if header is not None else "<header><h1>lineprofiler report</h1></header>"
    title = f"lineprofiler report: {header.run}" if header is not None else "lineprofiler report"
    return html_page(title, top + page.alerts_html(report, caveats) + "<!--nav-->" + "".join(parts), nav)
