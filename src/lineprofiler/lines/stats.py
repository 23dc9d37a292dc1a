"""What get_stats() returns: plain, frozen, picklable records in integer nanoseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["FunctionStats", "LineStats", "StatsKey"]

#: get_stats() keys, as line_profiler keys them: (filename, first_lineno, qualname).
StatsKey = tuple[str, int, str]


@dataclass(frozen=True)
class LineStats:
    """One source line: how often it started and how long it ran, callees included.

    ``source`` is the line's text without its newline, or None when the source cannot be read
    (REPL, ``exec``, a file changed or gone).
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

    ``time_ns`` is the sum of its lines' times. A recursive function's outer calls include the
    inner ones, so for recursion this sum exceeds the wall time spent in the function.
    """

    filename: str
    first_lineno: int
    qualname: str
    time_ns: int
    lines: dict[int, LineStats] = field(default_factory=dict, hash=False)
    #: How many times the function was called; None where it was not counted.
    calls: int | None = None

    @property
    def key(self) -> StatsKey:
        return (self.filename, self.first_lineno, self.qualname)

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3

    @property
    def hits(self) -> int:
        """Total hits over all lines."""
        return sum(line.hits for line in self.lines.values())
