"""What get_stats() returns: plain, frozen, picklable records in integer nanoseconds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, NamedTuple

from .sourcefile import SourceStamps, source_lines

__all__ = ["FileText", "FunctionStats", "LineStats", "StatsKey", "rows_from_records", "stats_from_records"]

class StatsKey(NamedTuple):
    """A get_stats() key: ``(filename, qualname, first_lineno)``, the order of 0.10.0's
    ``(filename, function_name, first_line)``, so ``for (_, name, _), stats in get_stats().items()``
    still reads the name. Read it by attribute (``key.qualname``) rather than by position."""

    filename: str
    qualname: str
    first_lineno: int

    @classmethod
    def of(cls, code: CodeType) -> StatsKey:
        """The key of the function a code object is."""
        return cls(code.co_filename, code.co_qualname, code.co_firstlineno)


@dataclass(frozen=True)
class LineStats:
    """One source line: how often it started and how long it ran, callees included.

    ``source`` is the line's text without its newline, or None when the source cannot be read
    (REPL, ``exec``, a file gone, or changed since the run: see ``FunctionStats.source_changed``).
    """

    lineno: int
    hits: int
    time_ns: int
    source: str | None = None
    #: Time not spent in the calls made from this line; None where it was not measured.
    self_ns: int | None = None

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3

    @property
    def per_hit_us(self) -> float:
        """Mean microseconds per hit (0.0 for a line that only carries time, never a hit)."""
        return self.time_ns / 1e3 / self.hits if self.hits else 0.0


@dataclass(frozen=True)
class FunctionStats:
    """One function (code object) of the project and its lines.

    ``time_ns`` is the sum of its lines' times: the time the function was on the stack. While it
    runs inside an activation of itself, the inner activation's time is its own lines' only (the
    outer line that led to it is paused), so recursion is counted once, as cProfile's cumulative
    time, and never exceeds the wall time of the outermost call.
    """

    filename: str
    first_lineno: int
    qualname: str
    time_ns: int
    lines: dict[int, LineStats] = field(default_factory=dict, hash=False)
    #: How many times the function was called; None where it was not counted.
    calls: int | None = None
    #: True when its file changed after the profiler first ran code from it: the file no longer
    #: holds the code that ran, so its lines carry no text (``source`` is None).
    source_changed: bool = False

    @property
    def key(self) -> StatsKey:
        return StatsKey(self.filename, self.qualname, self.first_lineno)

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3

    @property
    def hits(self) -> int:
        """Total hits over all lines (a line hit many times per call counts each time: see
        ``calls`` for how often the function ran)."""
        return sum(line.hits for line in self.lines.values())

    @property
    def self_ns(self) -> int | None:
        """The function's own time: its lines' self times added up; None when any is unknown."""
        total = 0
        for line in self.lines.values():
            if line.self_ns is None:
                return None
            total += line.self_ns
        return total

    @property
    def is_module(self) -> bool:
        """Whether this is a module's top level (``<module>``), which holds its imports."""
        return self.qualname == "<module>"


#: What the tracer's collect() gives per code object: (code, calls, [(line, hits, ns, self_ns)]).
TracerRecord = tuple[CodeType, int, Sequence[tuple[int, int, int, int]]]


#: A file's lines as the stats show them: (changed since recording, its lines or None).
FileText = tuple[bool, list[str] | None]


def _file_text(filename: str, stamps: SourceStamps | None, texts: dict[str, FileText]) -> FileText:
    """``filename``'s lines, read once per ``texts`` (with a bound, :func:`~.sourcefile.source_lines`),
    none from a file ``stamps`` says changed since it was recorded."""
    known = texts.get(filename)
    if known is None:
        changed = stamps is not None and stamps.changed(filename)
        known = texts[filename] = (changed, None if changed else source_lines(filename))
    return known


def stats_from_records(
    records: Iterable[TracerRecord], stamps: SourceStamps | None = None
) -> dict[StatsKey, FunctionStats]:
    """get_stats() from the tracer's records: code objects that share a key (a function defined
    again, a module re-run) added together, source lines read with a bound
    (:func:`~.sourcefile.source_lines`), except from a file ``stamps`` says changed since."""
    merged: dict[StatsKey, tuple[list[int], dict[int, list[int]]]] = {}
    for code, calls, lines in records:
        key = StatsKey.of(code)
        count, acc = merged.setdefault(key, ([0], {}))
        count[0] += calls
        for lineno, hits, ns, self_ns in lines:
            slot = acc.setdefault(lineno, [0, 0, 0])
            slot[0] += hits
            slot[1] += ns
            slot[2] += self_ns
    out: dict[StatsKey, FunctionStats] = {}
    texts: dict[str, FileText] = {}
    for key, (count, acc) in merged.items():
        changed, text = _file_text(key.filename, stamps, texts)
        lines_out = {
            lineno: LineStats(lineno, hits, ns, _source_line(text, lineno), self_ns)
            for lineno, (hits, ns, self_ns) in sorted(acc.items())
        }
        total = sum(ln.time_ns for ln in lines_out.values())
        out[key] = FunctionStats(
            key.filename, key.first_lineno, key.qualname, total, lines_out, count[0], source_changed=changed
        )
    return out


def rows_from_records(
    records: Iterable[TracerRecord],
    stamps: SourceStamps | None = None,
    texts: dict[str, FileText] | None = None,
) -> list[list[Any]]:
    """The lines of :func:`stats_from_records` as plain rows, ``[file, function, line, hits,
    time_ns, self_ns, source]``, one per (file, function, line), without a FunctionStats or a
    LineStats made: the sampled windows' section (thousands of lines, built every few seconds)
    is three times faster so. ``texts``: the files' lines as :func:`stats_from_records` reads
    them, kept by the caller across calls (each file is then read once); filled here."""
    if texts is None:
        texts = {}
    rows: dict[tuple[str, str, int], list[Any]] = {}
    for code, _calls, lines in records:
        filename, qualname = code.co_filename, code.co_qualname
        text = _file_text(filename, stamps, texts)[1]
        for lineno, hits, ns, self_ns in lines:
            row = rows.get((filename, qualname, lineno))
            if row is None:
                rows[(filename, qualname, lineno)] = [
                    filename, qualname, lineno, hits, ns, self_ns, _source_line(text, lineno),
                ]  # fmt: skip
            else:  # a function defined again, a module re-run: added together
                row[3] += hits
                row[4] += ns
                row[5] += self_ns
    return list(rows.values())


def _source_line(text: list[str] | None, lineno: int) -> str | None:
    if text is None or not 0 < lineno <= len(text):
        return None
    return text[lineno - 1].rstrip("\r\n")
