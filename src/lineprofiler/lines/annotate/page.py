"""The annotated source page: every profiled file's source with each line's numbers in the
margin, heat-coloured by time, after a table of the functions and the slowest lines.

The numbers are formatted as the text tables print them (:func:`~..render.format_ns`, hits with
thousands separators), so a line reads the same in ``print_stats`` and here. Self time and call
counts show "-" where they were not measured, never 0. Every text that came from the profile
(file names, qualnames, source) is shown through :func:`printable` and HTML-escaped: a
``<script>`` in a comment is text. The page is bounded (:class:`Limits`): the files that do not
fit are listed by name with their totals, and the page says so.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from ... import __version__
from ..._terminal import printable
from ..render import _display_path, format_ns
from ..stats import FunctionStats, LineStats, StatsKey
from .assets import CSS, JS
from .sources import FileText, file_text

__all__ = ["ExtraColumn", "Limits", "annotated_body", "page_html", "render_annotated", "write_annotated"]

#: Lines shown before a function's first line and after its last recorded one, in a file too
#: long to show whole.
CONTEXT = 2
UNAVAILABLE = "<source unavailable>"
SEPARATOR = " \u00b7 "
#: A source row's height on screen, for the estimated height of a file not yet laid out.
ROW_PX = 18


@dataclass(frozen=True)
class Limits:
    """How much one page holds. A file is shown whole up to ``whole_file_lines`` lines, else
    only its profiled functions (with a few lines around each); files are taken slowest first
    while they fit in ``files`` and ``lines`` (source rows over all files); a source line
    longer than ``line_chars`` is cut; the function table lists the slowest ``functions``."""

    files: int = 100
    lines: int = 20_000
    functions: int = 1_000
    line_chars: int = 400
    whole_file_lines: int = 3_000
    slowest_lines: int = 20


@dataclass(frozen=True)
class ExtraColumn:
    """A column after the margin's numbers, for a page that knows more of each line than its
    stats (the sampled lines' share of their phase): its head, and for a (function, line) its
    text and the value it sorts by, or None (an empty cell)."""

    head: str
    cell: Callable[[FunctionStats, LineStats], tuple[str, float] | None]

    def html(self, f: FunctionStats, line: LineStats) -> str:
        value = self.cell(f, line)
        return '<td data-v=""></td>' if value is None else f'<td data-v="{value[1]}">{escape(value[0])}</td>'


@dataclass
class _File:
    name: str
    shown_name: str
    functions: list[tuple[int, FunctionStats]]
    #: lineno -> (function index, line), outer functions first.
    per_line: dict[int, list[tuple[int, LineStats]]] = field(default_factory=dict)

    @property
    def time_ns(self) -> int:
        return sum(f.time_ns for _, f in self.functions)

    @property
    def hits(self) -> int:
        return sum(f.hits for _, f in self.functions)


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _duration(ns: int | None) -> str:
    return "-" if ns is None else format_ns(ns)


def _per_hit(line: LineStats) -> str:
    return format_ns(line.time_ns / line.hits) if line.hits else "-"


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole if whole > 0 else 0.0:.1f}"


def _heat(ns: int, top: int) -> int:
    """0 for no time, else 1 to 10 by the share of ``top``."""
    if ns <= 0 or top <= 0:
        return 0
    return max(1, min(10, math.ceil(10 * ns / top)))


#: What the shading measures: a line's self time (where the time goes) or its time with the calls
#: it makes (where the time is spent from: the callers, main() first, darkest).
SHADES = ("self", "inclusive")


def _line_shade_ns(line: LineStats, shade: str) -> int:
    """The time a line is shaded by; its time where self time was not measured."""
    if shade == "self" and line.self_ns is not None:
        return line.self_ns
    return line.time_ns


def _self_ns(f: FunctionStats) -> int | None:
    """A function's self time: the sum of its lines', when every line has one."""
    values = [line.self_ns for line in f.lines.values()]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def _text(raw: str) -> str:
    return escape(printable(raw))


def _source_cell(text: str | None, limit: int) -> str:
    if text is None:
        return f'<td class="src na">{escape(UNAVAILABLE)}</td>'
    shown = printable(text.expandtabs())
    if len(shown) > limit:
        cut = f'<span class="cut">\u2026 {len(shown) - limit:,} more characters</span>'
        return f'<td class="src">{escape(shown[:limit])}{cut}</td>'
    return f'<td class="src">{escape(shown)}</td>'


def _numbers(f: FunctionStats, line: LineStats, extra: ExtraColumn | None) -> str:
    return (
        f'<td data-v="{line.hits}">{line.hits:,}</td><td data-v="{line.time_ns}">{format_ns(line.time_ns)}</td>'
        f"<td>{_duration(line.self_ns)}</td><td>{_per_hit(line)}</td><td>{_share(line.time_ns, f.time_ns)}</td>"
        f"{'' if extra is None else extra.html(f, line)}"
    )


class _Page:
    def __init__(
        self,
        stats: Mapping[StatsKey, FunctionStats],
        root: Path | None,
        hashes: Mapping[str, str | None],
        limits: Limits,
        shade: str,
        prefix: str = "",
        extra: ExtraColumn | None = None,
    ) -> None:
        self.limits = limits
        self.shade = shade
        #: Put before every id of the page, so that several pages' bodies can share one document.
        self.prefix = prefix
        self.extra = extra
        self.hashes = hashes
        self.functions = sorted(stats.values(), key=lambda f: (-f.time_ns, f.filename, f.first_lineno, f.qualname))
        self.top_line_ns = max((self._line_heat_ns(ln) for f in self.functions for ln in f.lines.values()), default=0)
        files: dict[str, _File] = {}
        for index, f in enumerate(self.functions):
            entry = files.get(f.filename)
            if entry is None:
                entry = files[f.filename] = _File(f.filename, _display_path(f.filename, root), [])
            entry.functions.append((index, f))
        for entry in files.values():
            for index, f in sorted(entry.functions, key=lambda item: (item[1].first_lineno, item[0])):
                for lineno, line in f.lines.items():
                    entry.per_line.setdefault(lineno, []).append((index, line))
        self.files = sorted(files.values(), key=lambda e: (-e.time_ns, e.name))
        self.by_name = files
        #: Function index -> the anchor of its first shown row, for the files shown.
        self.anchor: dict[int, str] = {}
        self.shown: list[tuple[int, _File, FileText, list[int]]] = []
        self.left_out: list[_File] = []
        self._choose()

    def _line_heat_ns(self, line: LineStats) -> int:
        return _line_shade_ns(line, self.shade)

    def _line_heat(self, line: LineStats) -> int:
        return _heat(self._line_heat_ns(line), self.top_line_ns)

    def _function_heat_ns(self, f: FunctionStats) -> int:
        own = _self_ns(f) if self.shade == "self" else None
        return f.time_ns if own is None else own

    # -- what fits

    def _rows(self, entry: _File, text: FileText, whole: bool) -> list[int]:
        """The line numbers shown: the whole file, or each function's lines with a little
        around them (a file on disk), or the recorded lines (a file known only by them)."""
        if not text.whole:
            return sorted(set(entry.per_line) | set(text.lines))
        if whole:
            return list(range(1, text.last + 1))
        wanted: set[int] = set()
        for _, f in entry.functions:
            last = max(f.lines, default=f.first_lineno)
            wanted.update(range(max(1, f.first_lineno - CONTEXT), min(text.last, last + CONTEXT) + 1))
        wanted.update(n for n in entry.per_line if n <= text.last)
        return sorted(wanted)

    def _choose(self) -> None:
        budget = self.limits.lines
        for entry in self.files:
            if len(self.shown) >= self.limits.files or budget <= 0:  # full: no file read for nothing
                self.left_out.append(entry)
                continue
            recorded = {
                n: next((ln.source for _, ln in lines if ln.source is not None), None)
                for n, lines in entry.per_line.items()
            }
            changed = any(f.source_changed for _, f in entry.functions)
            text = file_text(entry.name, self.hashes.get(entry.name), recorded, changed)
            rows = self._rows(entry, text, whole=text.last <= self.limits.whole_file_lines)
            if len(rows) > budget and text.whole and len(rows) == text.last:
                rows = self._rows(entry, text, whole=False)
            if len(rows) > budget:
                self.left_out.append(entry)
                continue
            budget -= len(rows)
            number = len(self.shown)
            shown_rows = set(rows)
            for index, f in entry.functions:
                first = next((n for n in sorted(f.lines) if n in shown_rows), None)
                if f.first_lineno in shown_rows:
                    first = f.first_lineno
                if first is not None:
                    self.anchor[index] = f"{self.prefix}L{number}-{first}"
            self.shown.append((number, entry, text, rows))

    # -- the parts

    def function_table(self) -> str:
        limit = self.limits.functions
        top = max((self._function_heat_ns(f) for f in self.functions), default=0)
        rows = []
        for index, f in enumerate(self.functions[:limit]):
            anchor = self.anchor.get(index)
            name = _text(f.qualname)
            link = f'<a href="#{anchor}">{name}</a>' if anchor else name
            where = escape(self._shown_name(f.filename)) + f":{f.first_lineno}"
            own = _self_ns(f)
            calls_v = "" if f.calls is None else f.calls
            own_v = "" if own is None else own
            rows.append(
                f'<tr data-f="{index}" class="h{_heat(self._function_heat_ns(f), top)}"><td class="name">{link}</td>'
                f'<td class="name">{where}</td><td data-v="{calls_v}">{_count(f.calls)}</td>'
                f'<td data-v="{f.hits}">{f.hits:,}</td><td data-v="{f.time_ns}">{format_ns(f.time_ns)}</td>'
                f'<td data-v="{own_v}">{_duration(own)}</td>'
                f'<td data-v="{len(f.lines)}">{len(f.lines):,}</td></tr>'
            )
        note = ""
        if len(self.functions) > limit:
            rest = self.functions[limit:]
            note = (
                f'<p class="note left-out">{len(rest):,} more functions not listed (the {limit:,} slowest are); '
                f"their time: {format_ns(sum(f.time_ns for f in rest))}.</p>"
            )
        head = "".join(
            f"<th data-sort>{c}</th>" for c in ("Function", "Where", "Calls", "Hits", "Total time", "Self", "Lines")
        )
        return (
            f'<section id="{self.prefix}functions"><h2>Functions</h2>'
            '<p class="note">Slowest first. Total time is the sum of the function\'s lines (callees included); '
            "self time leaves out the calls its lines make. \u201c-\u201d: not measured.</p>"
            f'<div class="wide"><table data-block="functions"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>{note}</section>"
        )

    def _shown_name(self, filename: str) -> str:
        entry = self.by_name.get(filename)
        return entry.shown_name if entry is not None else printable(filename)

    def slowest_lines(self) -> str:
        entries = [(index, f, ln) for index, f in enumerate(self.functions) for ln in f.lines.values()]
        entries.sort(key=lambda e: (-e[2].time_ns, e[1].filename, e[2].lineno))
        rows = []
        number_of = {entry.name: number for number, entry, _, _ in self.shown}
        for index, f, ln in entries[: self.limits.slowest_lines]:
            where = escape(self._shown_name(f.filename)) + f":{ln.lineno}"
            number = number_of.get(f.filename)
            if number is not None:
                where = f'<a href="#{self.prefix}L{number}-{ln.lineno}">{where}</a>'
            source = None if ln.source is None else ln.source.strip()
            rows.append(
                f'<tr data-f="{index}" data-l="{ln.lineno}" class="h{self._line_heat(ln)}">'
                f'<td data-v="{ln.time_ns}">{format_ns(ln.time_ns)}</td><td data-v="{ln.hits}">{ln.hits:,}</td>'
                f'<td data-v="{ln.time_ns / ln.hits if ln.hits else ""}">{_per_hit(ln)}</td>'
                f'<td class="name">{where}</td><td class="name">{_text(f.qualname)}</td>'
                f"{'' if self.extra is None else self.extra.html(f, ln)}"
                f"{_source_cell(source, self.limits.line_chars)}</tr>"
            )
        heads = ("Time", "Hits", "Per hit", "Where", "Function", *self._extra_head(), "Source")
        head = "".join(f"<th data-sort>{c}</th>" for c in heads)
        return (
            f'<section id="{self.prefix}slowest"><h2>Slowest lines</h2>'
            f'<div class="wide"><table data-block="slowest"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div></section>"
        )

    def _extra_head(self) -> tuple[str, ...]:
        return () if self.extra is None else (escape(self.extra.head),)

    def file_section(self, number: int, entry: _File, text: FileText, rows: list[int]) -> str:
        limit = self.limits.line_chars
        p = self.prefix
        columns = 8 if self.extra is not None else 7
        out = []
        previous = 0
        missing = "not shown" if text.whole else "not recorded"
        for lineno in rows:
            if lineno > previous + 1:
                gap = f"lines {previous + 1}\u2013{lineno - 1}" if lineno - 1 > previous + 1 else f"line {lineno - 1}"
                out.append(f'<tr class="gap"><td colspan="{columns}">\u22ee {gap} {missing}</td></tr>')
            previous = lineno
            recorded = entry.per_line.get(lineno)
            source = _source_cell(text.lines.get(lineno), limit)
            if not recorded:
                out.append(
                    f'<tr id="{p}L{number}-{lineno}" class="u"><td>{lineno}</td>'
                    f"{'<td></td>' * (columns - 2)}{source}</tr>"
                )
                continue
            first_index, first_line = recorded[0]
            f = self.functions[first_index]
            out.append(
                f'<tr id="{p}L{number}-{lineno}" data-f="{first_index}" data-l="{lineno}" '
                f'class="h{self._line_heat(first_line)}"><td>{lineno}</td>'
                f"{_numbers(f, first_line, self.extra)}{source}</tr>"
            )
            for index, line in recorded[1:]:
                other = self.functions[index]
                out.append(
                    f'<tr data-f="{index}" data-l="{lineno}" class="also h{self._line_heat(line)}">'
                    f"<td></td>{_numbers(other, line, self.extra)}"
                    f'<td class="src in">\u21b3 in {_text(other.qualname)}</td></tr>'
                )
        if text.whole and previous < text.last:
            out.append(
                f'<tr class="gap"><td colspan="{columns}">'
                f"\u22ee lines {previous + 1}\u2013{text.last} not shown</td></tr>"
            )
        if text.whole:
            origin = "the file on disk, the same source that ran"
            if len(rows) < text.last:
                origin += f"; {len(rows):,} of its {text.last:,} lines (its profiled functions) shown"
        else:
            origin = f"only the recorded lines: {text.reason or 'the file on disk is not the source that ran'}"
        functions = ", ".join(
            f'<a href="#{self.anchor[i]}">{_text(f.qualname)}</a>' for i, f in entry.functions if i in self.anchor
        )
        heads = ("Line", "Hits", "Time", "Self", "Per hit", "% func", *self._extra_head(), "Source")
        head = "".join(f"<th>{c}</th>" for c in heads)
        return (
            f'<section class="file" id="{p}file{number}" data-file="{escape(printable(entry.name), quote=True)}" '
            f'style="contain-intrinsic-size:auto {ROW_PX * (len(out) + 2) + 60}px">'
            f"<h2>{escape(entry.shown_name)}</h2>"
            f'<p class="note">{len(entry.functions):,} function{"s" if len(entry.functions) != 1 else ""} '
            f"({functions}), their totals added {format_ns(entry.time_ns)} (a nested function's time is in both), "
            f"{entry.hits:,} hits. Source: {origin}.</p>"
            f'<div class="wide"><table class="code" data-block="source"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(out)}</tbody></table></div></section>"
        )

    def left_out_section(self) -> str:
        if not self.left_out:
            return ""
        lim = self.limits
        rows = "".join(
            f'<tr data-file="{escape(printable(e.name), quote=True)}"><td class="name">{escape(e.shown_name)}</td>'
            f'<td data-v="{len(e.functions)}">{len(e.functions):,}</td><td data-v="{e.hits}">{e.hits:,}</td>'
            f'<td data-v="{e.time_ns}">{format_ns(e.time_ns)}</td></tr>'
            for e in self.left_out
        )
        head = "".join(f"<th data-sort>{c}</th>" for c in ("File", "Functions", "Hits", "Time"))
        return (
            f'<section id="{self.prefix}left-out"><h2>Files not shown</h2>'
            f'<p class="note left-out">{len(self.left_out):,} of {len(self.files):,} files are not shown: a page holds '
            f"at most {lim.files:,} files and {lim.lines:,} source lines, taken slowest file first. "
            "Their functions are in the table above; their totals:</p>"
            f'<div class="wide"><table data-block="left-out"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div></section>"
        )


_SHADING_NOTE = {
    "self": "the line's self time (its time less the calls it makes) against the largest of the page, so the "
    "lines where the time goes are darkest.",
    "inclusive": "the line's time, calls included, against the slowest line of the page, so the callers are "
    "darkest.",
}


def render_annotated(
    stats: Mapping[StatsKey, FunctionStats],
    *,
    title: str = "lineprofiler",
    root: Path | None = None,
    hashes: Mapping[str, str | None] | None = None,
    wall_ns: int | None = None,
    preamble: str | None = None,
    limits: Limits | None = None,
    shade: str = "self",
) -> str:
    """The whole page for ``stats`` (what ``get_stats()`` returns). ``root``: file names are
    shown relative to it; ``hashes``: the source sha256 per file the stats were recorded with
    (a saved profile's), which the file on disk must match to be shown; ``wall_ns``: how long
    the profiler was enabled; ``preamble``: text shown first, as it is (``view``'s lines on the
    processes read); ``shade``: "self" (the default: the hot lines darkest) or "inclusive" (a
    line's time with its calls: the callers darkest)."""
    body = annotated_body(
        stats, root=root, hashes=hashes, wall_ns=wall_ns, preamble=preamble, limits=limits, shade=shade
    )
    return page_html(title, f"<h1>{_text(title)}</h1>{body}")


def annotated_body(
    stats: Mapping[StatsKey, FunctionStats],
    *,
    root: Path | None = None,
    hashes: Mapping[str, str | None] | None = None,
    wall_ns: int | None = None,
    preamble: str | None = None,
    limits: Limits | None = None,
    shade: str = "self",
    prefix: str = "",
    extra: ExtraColumn | None = None,
) -> str:
    """The page's body below its title (:func:`render_annotated`'s options), for a page that
    holds several: ``prefix`` goes before each of its ids, ``extra`` adds a column."""
    if shade not in SHADES:
        raise ValueError(f"shade must be one of {', '.join(map(repr, SHADES))}, not {shade!r}")
    page = _Page(stats, root, hashes or {}, limits or Limits(), shade, prefix, extra)
    facts = [
        f"{len(page.functions):,} function{'s' if len(page.functions) != 1 else ''}",
        f"{len(page.files):,} file{'s' if len(page.files) != 1 else ''}",
        f"{sum(len(f.lines) for f in page.functions):,} lines recorded",
    ]
    if wall_ns is not None and wall_ns > 0:
        facts.append(f"profiler enabled for {format_ns(wall_ns)}")
    parts = [f'<p class="sub">{escape(SEPARATOR.join(facts))}</p>']
    if preamble:
        parts.append(f'<pre class="text">{_text(preamble.rstrip())}</pre>')
    if not page.functions:
        parts.append('<p class="note">No line timings recorded.</p>')
        return "".join(parts)
    parts.append(
        '<p class="note">A line\'s time runs from its start to the next line of its frame, so it includes the '
        f"calls it makes. Shading: {_SHADING_NOTE[shade]} Greyed lines did not run (or are not code).</p>"
    )
    nav = [f'<a href="#{prefix}functions">Functions</a>', f'<a href="#{prefix}slowest">Slowest lines</a>']
    nav += [f'<a href="#{prefix}file{n}">{escape(e.shown_name)}</a>' for n, e, _, _ in page.shown[:12]]
    if len(page.shown) > 12:
        nav.append(f"<span>and {len(page.shown) - 12:,} more files</span>")
    if page.left_out:
        nav.append(f'<a href="#{prefix}left-out">Files not shown</a>')
    parts.append(f"<nav>{''.join(nav)}</nav>")
    if page.left_out:
        parts.append(
            f'<p class="note left-out">Bounded: {len(page.shown):,} of {len(page.files):,} files shown, '
            f'the others listed <a href="#{prefix}left-out">by name with their totals</a>.</p>'
        )
    parts.append(page.function_table())
    parts.append(page.slowest_lines())
    parts.extend(page.file_section(*shown) for shown in page.shown)
    parts.append(page.left_out_section())
    return "".join(parts)


def page_html(title: str, body: str, *, css: str = "", js: str = "") -> str:
    """A whole self-contained page around ``body``: the annotated page's style and script, and
    ``css`` and ``js`` after them."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{CSS}{css}</style></head><body><main>{body}"
        f"<footer>Written by lineprofiler {escape(__version__)}. Numbers are formatted as "
        "<code>print_stats()</code> prints them.</footer></main><script>"
        f"{JS}{js}</script></body></html>\n"
    )


def write_annotated(
    path: str | os.PathLike[str],
    stats: Mapping[StatsKey, FunctionStats],
    *,
    parents: bool = False,
    **options: Any,
) -> Path:
    """Write :func:`render_annotated`'s page to ``path`` through the report's one way out
    (:func:`lineprofiler.report.render.write`: whole, or into a FIFO or a device) and return
    the path; with ``parents``, missing folders above it are made. OSError when it cannot be
    written (a folder that does not exist, a directory at ``path``)."""
    from ...report.render import write

    if os.path.isdir(os.path.abspath(os.fspath(path))):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
    write(path, render_annotated(stats, **options), "html", parents=parents)
    return Path(os.fspath(path))
