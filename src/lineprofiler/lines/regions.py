"""Named regions of a LineProfiler: ``with profiler.region("select"):``.

A region is a state of the thread that enters it: while it is the innermost region open on a
thread, every project line that starts on that thread (in the functions it calls too, and in a
generator resumed there) is recorded in the region's own table as well as in the totals.
Another thread is not in it; a generator resumed on this thread outside the region is not
either. Nested regions do not add up: a line belongs to the innermost one (0.10.0 billed it to
every open region; the first nesting recorded in a process warns once that it reads otherwise).

The tracer keeps the current region as a number per thread and picks the region's table when a
line starts, so a region costs no Python code per line, and nothing at all where none is used.
Here the names get their numbers, and each thread keeps the stack of regions it entered.

Distinct names are capped, as the accounting layer caps phase paths: each region costs a table
per code object it runs, so a name made per request (``f"request {id}"``) would grow without
bound (200,000 names took 635 MB to collect). A profiler keeps :data:`MAX_REGIONS` names; a name
first entered past the cap records into the one region :data:`OVERFLOW` instead, whose entries
say how many entries the cap took, and the tables say so.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import CodeType, TracebackType
from typing import Protocol

from ..runfiles.linesfile import MAX_REGIONS, REGIONS_OVERFLOW
from .sourcefile import SourceStamps
from .stats import FunctionStats, StatsKey, stats_from_records

__all__ = ["MAX_REGIONS", "OVERFLOW", "RegionBook", "RegionScope"]

#: The region that names past the cap record into (the name the accounting layer's overflow
#: node has); a region a program names so is that one.
OVERFLOW = REGIONS_OVERFLOW


class RegionTracer(Protocol):
    """What regions need of the C tracer."""

    @property
    def started(self) -> bool: ...

    def set_region(self, region: int, /) -> int: ...

    def collect_regions(self) -> list[tuple[int, CodeType, int, list[tuple[int, int, int, int]]]]: ...


class RegionBook:
    """The regions of one profiler: their numbers, how often each was entered while recording,
    and each thread's stack of open ones."""

    def __init__(self, tracer: RegionTracer, stamps: SourceStamps | None = None, max_names: int = MAX_REGIONS) -> None:
        self._tracer = tracer
        self._stamps = stamps
        #: How many distinct names get a region of their own; later names record into OVERFLOW.
        self.max_names = max_names
        self._overflow: RegionScope | None = None
        self._numbers: dict[str, int] = {}
        self._names: list[str] = [""]  # number -> name; 0 is "no region"
        self._scopes: dict[str, RegionScope] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        #: Entries per region while recording, in the order first entered.
        self.entries: dict[str, int] = {}

    def scope(self, name: str) -> RegionScope:
        """The one context manager of region ``name``, made on first use; past the cap of
        distinct names (and for the name OVERFLOW), the overflow region's, which keeps nothing
        of the name."""
        scope = self._scopes.get(name)
        if scope is not None:
            return scope
        if not isinstance(name, str) or not name:
            raise TypeError(f"a region's name must be a non-empty str, not {name!r}")
        with self._lock:
            scope = self._scopes.get(name)
            if scope is None:
                if name == OVERFLOW or len(self._scopes) >= self.max_names:
                    return self._overflow_scope()
                scope = self._scopes[name] = self._new_scope(name)
        return scope

    def _new_scope(self, name: str) -> RegionScope:
        number = len(self._names)
        self._names.append(name)
        self._numbers[name] = number
        return RegionScope(self, name, number)

    def _overflow_scope(self) -> RegionScope:
        if self._overflow is None:
            self._overflow = self._new_scope(OVERFLOW)
        return self._overflow

    @property
    def overflowed(self) -> int:
        """Entries, while recording, of names past the cap (into the OVERFLOW region)."""
        return self.entries.get(OVERFLOW, 0)

    def stack(self) -> list[int]:
        """This thread's stack of the regions it is in, innermost last (made on first use)."""
        stack: list[int] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def enter(self, name: str, number: int) -> None:
        outer = self._tracer.set_region(number)
        self.stack().append(outer)
        if self._tracer.started:
            self.entries[name] = self.entries.get(name, 0) + 1
            if 0 < outer < len(self._names) and outer != number:
                _warn_nested_once(self._names[outer], name)

    def leave(self) -> None:
        stack = self.stack()
        if stack:  # else left on another thread than it was entered on: nothing of it is here
            self._tracer.set_region(stack.pop())

    def clear(self) -> None:
        """Forget the entries counted (the tracer forgets the lines); open regions stay open."""
        self.entries.clear()

    def stats(self) -> dict[str, dict[StatsKey, FunctionStats]]:
        """Per region that recorded a line, in the order regions were first named: what
        get_stats() gives, for what ran while it was the innermost open region."""
        per_number: dict[int, list[tuple[CodeType, int, Sequence[tuple[int, int, int, int]]]]] = {}
        for number, code, calls, lines in self._tracer.collect_regions():
            per_number.setdefault(number, []).append((code, calls, lines))
        return {
            self._names[number]: stats_from_records(records, self._stamps)
            for number, records in sorted(per_number.items())
            if 0 < number < len(self._names)
        }


_nested_warned = False


def _warn_nested_once(outer: str, inner: str) -> None:
    """The first nesting a process records: 0.10.0 billed a line to every open region, so its
    outer region's table read differently there."""
    global _nested_warned  # noqa: PLW0603 - once per process
    if _nested_warned:
        return
    _nested_warned = True
    import warnings

    try:
        warnings.warn(
            f"region {inner!r} opened inside region {outer!r}: a line is billed to the innermost region "
            f"of its thread only, so {outer!r}'s table leaves out what runs in {inner!r} (0.10.0 billed it "
            f"to every open region): add the inner region's table to the outer's for 0.10.0's reading",
            RuntimeWarning,
            stacklevel=4,
        )
    except Exception:  # noqa: BLE001 - under -W error a warning raises; a region never raises into its code
        pass


class RegionScope:
    """The context manager ``LineProfiler.region(name)`` returns: one per name, reused on every
    entry, on any thread, nested or not. Safe to leave in code that runs unprofiled: entering
    costs two calls into C and records nothing unless the profiler records."""

    __slots__ = ("_book", "_name", "_number")

    def __init__(self, book: RegionBook, name: str, number: int) -> None:
        self._book = book
        self._name = name
        self._number = number

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<lineprofiler region {self._name!r}>"

    def __enter__(self) -> RegionScope:
        self._book.enter(self._name, self._number)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._book.leave()
