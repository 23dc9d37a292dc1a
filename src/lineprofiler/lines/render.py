"""The two text tables: per function (print_stats) and the top lines overall (print_global_top_stats).

Both work on the FunctionStats that get_stats() returns, so they run on unpickled stats too.
``Time`` is a line's time with its callees, ``Self`` without the project's functions it called
("-" where it was not measured: files written before lineprofiler measured it). A function's
header gives its calls. Sorted by time, self time or hits, the tables of modules' top levels
(``<module>``, mostly imports) come after every function's.
File names, qualnames and source lines are shown through :func:`printable` (a source line
with a raw escape or carriage return would otherwise act on the terminal), and the columns
are sized on that escaped text.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from .._terminal import printable
from ..report.format import table_duration
from ..runfiles.linesrecords import REGIONS_OVERFLOW as OVERFLOW_REGION
from .stats import FunctionStats, LineStats, StatsKey

__all__ = [
    "HINT_API",
    "HINT_CLI",
    "HINT_MAGIC",
    "PrintedProfile",
    "SORT_KEYS",
    "check_options",
    "format_ns",
    "render_global",
    "render_nothing",
    "render_regions",
    "render_report",
    "render_stats",
    "top_functions",
]

SORT_KEYS: tuple[str, ...] = ("time", "self", "hits", "line")
UNAVAILABLE = "<source unavailable>"
#: A line of a file that changed after its code ran: its text now is not the code that ran.
CHANGED = "<source changed since the run>"


def check_options(sort_by: object, min_time_us: object, top_n: object, top_name: str) -> None:
    """ValueError/TypeError for a bad argument, naming it and what it accepts."""
    if not isinstance(sort_by, str) or sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {', '.join(map(repr, SORT_KEYS))}; got {sort_by!r}")
    if isinstance(min_time_us, bool) or not isinstance(min_time_us, (int, float)):
        raise TypeError(f"min_time_us must be a number of microseconds, not {type(min_time_us).__name__}")
    if math.isnan(min_time_us) or min_time_us < 0:
        raise ValueError(f"min_time_us must be >= 0; got {min_time_us!r}")
    if top_n is not None:
        if isinstance(top_n, bool) or not isinstance(top_n, int):
            raise TypeError(f"{top_name} must be an int or None, not {type(top_n).__name__}")
        if top_n < 1:
            raise ValueError(f"{top_name} must be >= 1 or None; got {top_n!r}")


#: A line table's duration (``156.80 us``), formatted where the report's units are.
format_ns = table_duration


def _display_path(filename: str, root: Path | None) -> str:
    """``filename`` relative to ``root`` when it lies below it, escaped for the terminal."""
    if root is not None:
        try:
            real = os.path.realpath(filename)
            if real.startswith(str(root) + os.sep):
                return printable(os.path.relpath(real, root))
        except (OSError, ValueError):
            pass
    return printable(filename)


def _source_text(source: str | None, changed: bool = False) -> str:
    """A source line for a table cell: tabs as spaces (indentation stays readable), the rest
    escaped; the reason there is none when there is none."""
    if source is None:
        return CHANGED if changed else UNAVAILABLE
    return printable(source.expandtabs())


def _known(ns: int | None) -> int:
    """A self time for sorting: an unknown one sorts after every known one."""
    return -1 if ns is None else ns


def _line_order(sort_by: str):
    if sort_by == "time":
        return lambda ln: (-ln.time_ns, ln.lineno)
    if sort_by == "self":
        return lambda ln: (-_known(ln.self_ns), -ln.time_ns, ln.lineno)
    if sort_by == "hits":
        return lambda ln: (-ln.hits, ln.lineno)
    return lambda ln: ln.lineno


def _func_order(sort_by: str):
    """Functions in ``sort_by`` order; ranked by a measure, modules' top levels come last."""
    if sort_by == "time":
        return lambda f: (f.is_module, -f.time_ns, f.filename, f.first_lineno, f.qualname)
    if sort_by == "self":
        return lambda f: (f.is_module, -_known(f.self_ns), -f.time_ns, f.filename, f.first_lineno, f.qualname)
    if sort_by == "hits":
        return lambda f: (f.is_module, -f.hits, f.filename, f.first_lineno, f.qualname)
    return lambda f: (f.filename, f.first_lineno, f.qualname)


def _global_order(sort_by: str):
    if sort_by == "time":
        return lambda r: (-r[1].time_ns, r[0].filename, r[1].lineno)
    if sort_by == "self":
        return lambda r: (-_known(r[1].self_ns), -r[1].time_ns, r[0].filename, r[1].lineno)
    if sort_by == "hits":
        return lambda r: (-r[1].hits, r[0].filename, r[1].lineno)
    return lambda r: (r[0].filename, r[1].lineno, r[0].qualname)


#: The tables' last line: what Time and Self hold, and the one rule that keeps Time within the
#: run however deep a function recurses.
RECURSION_RULE = (
    "Time includes what a line called (a recursive function's nested calls counted once, as cProfile's "
    "cumulative time); Self does not."
)


def _self_text(ns: int | None) -> str:
    return "-" if ns is None else format_ns(ns)


def _calls_text(f: FunctionStats) -> str:
    return "-" if f.calls is None else f"{f.calls:,}"


def render_stats(
    stats: Mapping[StatsKey, FunctionStats],
    *,
    min_time_us: float = 0,
    top_n_lines: int | None = None,
    sort_by: str = "time",
    root: Path | None = None,
) -> str:
    """One table per function whose total time is at least ``min_time_us``.

    Functions are ordered by ``sort_by`` (total time, self time, total hits, or file and line;
    ``<module>`` tables last but for ``line``), and so are the lines inside each table;
    ``top_n_lines`` keeps the first N lines of that order.
    """
    check_options(sort_by, min_time_us, top_n_lines, "top_n_lines")
    min_ns = min_time_us * 1e3
    funcs = sorted((f for f in stats.values() if f.time_ns >= min_ns), key=_func_order(sort_by))
    if not funcs:
        if stats:
            return f"No function took at least {min_time_us:g} us ({len(stats)} recorded).\n"
        return "No line timings recorded.\n"
    out: list[str] = []
    for f in funcs:
        lines = sorted(f.lines.values(), key=_line_order(sort_by))
        shown = lines if top_n_lines is None else lines[:top_n_lines]
        out.append(f"Function: {printable(f.qualname)} at {_display_path(f.filename, root)}:{f.first_lineno}")
        note = "" if len(shown) == len(lines) else f"   (top {len(shown)} of {len(lines)} lines by {sort_by})"
        out.append(
            f"Total time: {format_ns(f.time_ns)}   Self: {_self_text(f.self_ns)}   Calls: {_calls_text(f)}{note}"
        )
        if f.source_changed:
            out.append("! Its file changed since the run: lines are numbered as in the code that ran; no text shown.")
        out.append("")
        header = f"{'Line':>6}  {'Hits':>12}  {'Time':>11}  {'Self':>11}  {'Per hit':>10}  {'% func':>6}  Source"
        out.append(header)
        out.append("-" * len(header))
        for ln in shown:
            share = 100.0 * ln.time_ns / f.time_ns if f.time_ns > 0 else 0.0
            per_hit = format_ns(ln.time_ns / ln.hits) if ln.hits else "-"
            src = _source_text(ln.source, f.source_changed)
            out.append(
                f"{ln.lineno:>6}  {ln.hits:>12,}  {format_ns(ln.time_ns):>11}  {_self_text(ln.self_ns):>11}  "
                f"{per_hit:>10}  {share:>6.1f}  {src}"
            )
        out.append("")
    out.append(RECURSION_RULE)
    return "\n".join(out) + "\n"


def render_global(
    stats: Mapping[StatsKey, FunctionStats],
    *,
    top_n: int | None = 20,
    min_time_us: float = 0,
    sort_by: str = "time",
    root: Path | None = None,
    total_ns: int | None = None,
) -> str:
    """The lines of all functions in one list, ordered by ``sort_by``, first ``top_n`` kept.

    ``% wall`` is a line's time over ``total_ns``, the wall time the profiler was enabled; lines
    of different threads overlap, so the column can add up to more than 100.
    """
    check_options(sort_by, min_time_us, top_n, "top_n")
    min_ns = min_time_us * 1e3
    rows: list[tuple[FunctionStats, LineStats]] = [
        (f, ln) for f in stats.values() for ln in f.lines.values() if ln.time_ns >= min_ns
    ]
    n_all = sum(len(f.lines) for f in stats.values())
    rows.sort(key=_global_order(sort_by))
    if not rows:
        if n_all:
            return f"No line took at least {min_time_us:g} us ({n_all} recorded).\n"
        return "No line timings recorded.\n"
    shown = rows if top_n is None else rows[:top_n]
    out = [f"Top {len(shown)} of {n_all} lines by {sort_by} ({len(stats)} functions)"]
    locs = [f"{_display_path(f.filename, root)}:{ln.lineno}" for f, ln in shown]
    loc_w = min(max(len("Location"), *(len(s) for s in locs)), 60)
    names = [printable(f.qualname) for f, _ in shown]
    fn_w = min(max(len("Function"), *(len(name) for name in names)), 40)
    wall = total_ns is not None and total_ns > 0
    header = f"{'#':>4}  {'Time':>11}  {'Self':>11}  {'Hits':>12}  {'Per hit':>10}  "
    header += f"{'% wall':>6}  " if wall else ""
    header += f"{'Location':<{loc_w}}  {'Function':<{fn_w}}  Source"
    out.append(header)
    out.append("-" * len(header))
    for i, ((f, ln), loc, name) in enumerate(zip(shown, locs, names, strict=True), 1):
        per_hit = format_ns(ln.time_ns / ln.hits) if ln.hits else "-"
        src = _source_text(None if ln.source is None else ln.source.strip(), f.source_changed)
        row = f"{i:>4}  {format_ns(ln.time_ns):>11}  {_self_text(ln.self_ns):>11}  {ln.hits:>12,}  {per_hit:>10}  "
        if wall:
            assert total_ns is not None
            row += f"{100.0 * ln.time_ns / total_ns:>6.1f}  "
        row += f"{loc:<{loc_w}}  {name:<{fn_w}}  {src}"
        out.append(row)
    out += ["", RECURSION_RULE]
    return "\n".join(out) + "\n"


def own_time(functions: Mapping[StatsKey, FunctionStats]) -> int | None:
    """The time the lines of ``functions`` took, none counted twice: their self times added
    up; None when one is unknown."""
    total = 0
    for f in functions.values():
        ns = f.self_ns
        if ns is None:
            return None
        total += ns
    return total


def render_regions(
    regions: Mapping[str, Mapping[StatsKey, FunctionStats]],
    entries: Mapping[str, int],
    *,
    top_n: int | None = 10,
    min_time_us: float = 0,
    root: Path | None = None,
    total_ns: int | None = None,
    max_regions: int | None = None,
    overflowed: int = 0,
) -> str:
    """One table per region, the region that took the most time first: its time (the self
    times of its lines: what ran while it was the innermost open region), its share of
    ``total_ns`` (all the project's recorded time), its entries, and its top ``top_n`` lines.
    ``overflowed``: entries of region names past the cap of ``max_regions`` distinct names,
    said first."""
    check_options("time", min_time_us, top_n, "top_n")
    cap = _regions_cap_note(max_regions, overflowed)
    if not regions:
        return cap + "No regions recorded.\n"
    order = sorted(regions, key=lambda name: (-_known(own_time(regions[name])), name))
    out: list[str] = [cap] if cap else []
    for name in order:
        functions = regions[name]
        own = own_time(functions)
        head = f"Region: {printable(name)}   Time: {_self_text(own)}"
        if own is not None and total_ns:
            head += f" ({100.0 * own / total_ns:.1f} % of the profiled time)"
        count = entries.get(name)
        if count:
            head += f"   Entries: {count:,}"
            if own is not None:
                head += f"   Per entry: {format_ns(own / count)}"
        out.append(head)
        out.append(render_global(functions, top_n=top_n, min_time_us=min_time_us, root=root))
    out.append(
        "A line belongs to the innermost region open on its thread; a region's time leaves out its inner regions'.\n"
    )
    return "\n".join(out)


def _regions_cap_note(max_regions: int | None, overflowed: int) -> str:
    if overflowed <= 0:
        return ""
    cap = f" of {max_regions:,} distinct names" if max_regions else ""
    return (
        f"! Region names past the cap{cap} per process were not kept: their {overflowed:,} entries "
        f"are in the region {OVERFLOW_REGION}.\n"
    )


#: How to widen what is profiled, in the words of each front end.
HINT_API = "project_folder= (the folder that holds it) or include= globs"
HINT_CLI = "--project DIR (the folder that holds it) or --include GLOB"
HINT_MAGIC = "-p DIR (the folder that holds it) or -i GLOB"


def render_nothing(
    folder: str | os.PathLike[str],
    codes_outside: int | None,
    outside_files: list[str],
    *,
    hint: str = HINT_API,
) -> str:
    """What to say when a profiler was on but no line of the project ran: which folder was
    traced, how much code ran outside it, and what to pass (``hint``) to profile that code."""
    out = ["No line timings recorded: no code of the project folder ran while the profiler was on."]
    out.append(f"  Project folder traced: {printable(os.fspath(folder))}")
    if codes_outside:
        out.append(f"  Code objects that ran outside it: {codes_outside:,}")
    if outside_files:
        shown = ", ".join(printable(name) for name in outside_files[:3])
        more = f" and {len(outside_files) - 3:,} more" if len(outside_files) > 3 else ""
        out.append(f"  Files outside it that ran (the standard library and installed packages left out): {shown}{more}")
    out.append(f"  To profile other code, pass {hint}")
    out.append("  (a glob without / matches a path component, with / a path; '<string>' matches exec'd strings).")
    return "\n".join(out) + "\n"


def top_functions(
    stats: Mapping[StatsKey, FunctionStats], n: int | None, sort_by: str
) -> dict[StatsKey, FunctionStats]:
    """The first ``n`` functions in ``sort_by`` order (all when ``n`` is None)."""
    if n is None or n >= len(stats):
        return dict(stats)
    order = _func_order(sort_by)
    keep = sorted(stats.values(), key=order)[:n]
    return {f.key: f for f in keep}


def render_report(
    stats: Mapping[StatsKey, FunctionStats],
    *,
    functions: int | None = 10,
    top_n: int | None = 20,
    min_time_us: float = 0,
    sort_by: str = "time",
    root: Path | None = None,
    total_ns: int | None = None,
) -> str:
    """What ``lineprofiler run``, ``view`` and the notebook magic print: the tables of the first
    ``functions`` functions (None: all, 0: none), then the top ``top_n`` lines over all of them."""
    check_options(sort_by, min_time_us, top_n, "top_n")
    min_ns = min_time_us * 1e3
    parts = []
    if functions != 0:
        kept = {k: f for k, f in stats.items() if f.time_ns >= min_ns}
        chosen = top_functions(kept, functions, sort_by)
        if chosen or not stats:
            parts.append(render_stats(chosen, min_time_us=min_time_us, sort_by=sort_by, root=root))
        if len(kept) > len(chosen) and chosen:
            parts.append(f"({len(chosen)} of {len(kept)} functions shown)\n\n")
    if stats or not parts:
        parts.append(
            render_global(stats, top_n=top_n, min_time_us=min_time_us, sort_by=sort_by, root=root, total_ns=total_ns)
        )
    return "".join(parts)


# -- what a profile prints and draws ----------------------------------------------------------------


class PrintedProfile:
    """The printing and the page of a profile, written once for :class:`~lineprofiler.LineProfiler`
    and :class:`~lineprofiler.lines.saved.SavedProfile` (as cProfile's go through pstats). A
    profile gives its stats, its regions and the few things in which the two differ: the folder
    names are shown relative to, what to say when nothing was recorded, the wall time its
    percentages and page use, and the source hashes its page checks files against."""

    # -- what a profile gives ----------------------------------------------------------------

    def get_stats(self) -> dict[StatsKey, FunctionStats]:
        raise NotImplementedError

    def region_stats(self) -> dict[str, dict[StatsKey, FunctionStats]]:
        raise NotImplementedError

    def region_entries(self) -> dict[str, int]:
        raise NotImplementedError

    @property
    def max_regions(self) -> int:
        raise NotImplementedError

    @property
    def regions_overflowed(self) -> int:
        raise NotImplementedError

    def _shown_folder(self) -> Path | None:
        """The folder file names are shown relative to."""
        raise NotImplementedError

    def _nothing_text(self, stats: Mapping[StatsKey, FunctionStats]) -> str | None:
        """What to print instead of the tables when nothing was recorded; None otherwise."""
        raise NotImplementedError

    def _shown_wall_ns(self) -> int | None:
        """The wall time ``% wall`` and the page's facts use; None: not shown."""
        raise NotImplementedError

    def _source_hashes(self) -> Mapping[str, str | None] | None:
        """The sha256 per file the stats were recorded with (None: read the files as they are)."""
        return None

    # -- printing ----------------------------------------------------------------------------

    def print_stats(
        self,
        min_time_us: float = 0,
        top_n_lines: int | None = None,
        sort_by: str = "time",
        file: IO[str] | None = None,
    ) -> None:
        """Per function (total time at least ``min_time_us``): file, qualname, total time, and a
        table of line, hits, time, time per hit, % of the function and source. ``sort_by`` is
        ``'time'``, ``'hits'`` or ``'line'`` and orders functions and lines; ``top_n_lines``
        keeps that many lines per function. When the profiler ran but recorded nothing, says
        which folder it traced and what ran outside it."""
        check_options(sort_by, min_time_us, top_n_lines, "top_n_lines")
        stats = self.get_stats()
        text = self._nothing_text(stats) or render_stats(
            stats, min_time_us=min_time_us, top_n_lines=top_n_lines, sort_by=sort_by, root=self._shown_folder()
        )
        (file if file is not None else sys.stdout).write(text)

    def print_global_top_stats(
        self,
        top_n: int | None = 20,
        min_time_us: float = 0,
        sort_by: str = "time",
        file: IO[str] | None = None,
    ) -> None:
        """The top ``top_n`` lines over all functions (each at least ``min_time_us``), as
        ``file:line function``, ordered by ``sort_by`` (``'time'``, ``'hits'`` or ``'line'``);
        ``% wall`` is shown for one process only (the wall times of processes overlap)."""
        check_options(sort_by, min_time_us, top_n, "top_n")
        stats = self.get_stats()
        text = self._nothing_text(stats) or render_global(
            stats,
            top_n=top_n,
            min_time_us=min_time_us,
            sort_by=sort_by,
            root=self._shown_folder(),
            total_ns=self._shown_wall_ns(),
        )
        (file if file is not None else sys.stdout).write(text)

    def print_regions(self, top_n: int = 10, min_time_us: float = 0.0, stream: IO[str] | None = None) -> None:
        """Per region, the region that took the most time first: its time, its share of the
        profiled time, its entries, and its ``top_n`` slowest lines."""
        check_options("time", min_time_us, top_n, "top_n")
        text = render_regions(
            self.region_stats(),
            self.region_entries(),
            top_n=top_n,
            min_time_us=min_time_us,
            root=self._shown_folder(),
            total_ns=own_time(self.get_stats()),
            max_regions=self.max_regions,
            overflowed=self.regions_overflowed,
        )
        (stream if stream is not None else sys.stdout).write(text)

    def to_html(self, path: str | os.PathLike[str], title: str = "lineprofiler", *, shade: str = "self") -> Path:
        """Write one self-contained HTML page (nothing fetched from the network) of every
        profiled file's source, each line's hits, time, self time and time per hit in the
        margin, heat-coloured by self time (``shade="inclusive"``: by time, calls included),
        after a table of the functions; returns its path. A saved profile's file sources are
        taken from disk only when their sha256 is the one the files recorded. Missing folders
        above it are made (as 0.10.0 did); OSError when it cannot be written."""
        from .annotate import write_annotated

        hashes = self._source_hashes()
        options = {"hashes": hashes} if hashes is not None else {}
        stats, folder, wall = self.get_stats(), self._shown_folder(), self._shown_wall_ns()
        return write_annotated(
            path, stats, parents=True, title=title, root=folder, wall_ns=wall, shade=shade, **options
        )
