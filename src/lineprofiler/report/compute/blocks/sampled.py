"""The sampled reduction: each sample file reduced on its own to a small summary.

Sample files are reduced one worker at a time into fixed-size aggregates (totals, a timeline
grid, a few bins of RSS), so memory is one worker's rows plus the grid, however many workers
the run has. :func:`summarise_sample_file` reduces one file to a :class:`FileSummary` (in a
pool's process or this one, see :mod:`...read.parallel`); :mod:`.resources` folds the summaries, in
worker order, into the run's. Work is per run of valid rows and per grid slot, not per row:
a day of one worker's rows at 1 Hz takes tens of milliseconds. This module reads files only; it
imports no C module.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import compress
from operator import add
from pathlib import Path

from ....runfiles.samplefile import (
    IO_FIELDS,
    PHASE_SINCE_COLUMN,
    PSS_COLUMN,
    IntervalCounts,
    SampleFileError,
    SampleTable,
    classify,
    negative_runs,
    read_samples,
)
from ...model import Series
from ...read import parallel
from .. import series

MEMORY_BINS = 24
_MAX_SLOTS = 4096  # timeline slots: bounds the per-worker work and the peak's resolution
#: The least a process's samples must span for a trend, after its warm-up: ten seconds of ten
#: rows or more (a minute left every process of a run shorter than a minute at n/a).
MIN_TREND_NS = 10 * 10**9
MIN_TREND_ROWS = 10
#: The first part of a process's sampled span that is its warm-up (imports, caches, allocator
#: pools, a DataLoader's prefetch): left out of its trend, so memory that grows and then stays
#: flat is not extrapolated into a leak.
WARMUP_SHARE = 1 / 3


@dataclass
class WorkerIo:
    """What one worker's sample file contributes. ``totals``/``own``/``no_phase`` are per
    /proc/self/io field over the valid intervals, net of the profiler's own I/O."""

    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(IO_FIELDS, 0))
    own: dict[str, int] = field(default_factory=lambda: dict.fromkeys(IO_FIELDS, 0))
    no_phase: dict[str, int] = field(default_factory=lambda: dict.fromkeys(IO_FIELDS, 0))
    counts: IntervalCounts = field(default_factory=IntervalCounts)
    io_rows: int = 0  # rows whose counters were read


class _Runs:
    """The rows of a sample file cut into runs joined by valid intervals: [starts[r], ends[r]].

    Counters are cumulative, so the bytes over a run are a difference of its end values; the
    bytes up to any row are a prefix over runs. No per-row arithmetic is ever needed."""

    def __init__(self, n: int, breaks: list[int]) -> None:
        cuts = [b for b in breaks if 0 < b < n]
        self.starts = [0, *cuts]
        self.ends = [b - 1 for b in cuts] + [n - 1]


class _Cumulative:
    """Bytes of one counter over the valid intervals ending at rows 1..k, net of ``own``."""

    def __init__(self, runs: _Runs, col: memoryview, own: memoryview | None) -> None:
        self._runs = runs
        self._col, self._own = col, own
        self._offsets: list[int] = []
        self._base: list[int | None] = []
        total = 0
        for a, b in zip(runs.starts, runs.ends, strict=True):
            self._offsets.append(total)
            if b > a:
                base = self._raw(a)
                self._base.append(base)
                total += self._raw(b) - base
            else:
                self._base.append(None)  # a lone row (an unreadable one, say): nothing moves
        self.total = total

    def _raw(self, k: int) -> int:
        return self._col[k] - self._own[k] if self._own is not None else self._col[k]

    def at(self, k: int) -> int:
        if k <= 0:
            return 0
        r = bisect_right(self._runs.starts, k) - 1
        base = self._base[r]
        return self._offsets[r] if base is None else self._offsets[r] + self._raw(k) - base

    def at_many(self, rows: list[int]) -> list[int]:
        """``[at(k) for k in rows]``, with the one-run case (a file with no dropped interval)
        as a single comprehension."""
        col, own = self._col, self._own
        out: list[int] = []
        lo = 0
        starts, ends = self._runs.starts, self._runs.ends
        # rows is sorted: the rows inside each run are one slice of it.
        for _a, b, offset, base in zip(starts, ends, self._offsets, self._base, strict=True):
            hi = bisect_right(rows, b, lo)
            block = rows[lo:hi]
            if base is None:
                out += [offset if k > 0 else 0 for k in block]
            elif own is None:
                out += [offset + col[k] - base if k > 0 else 0 for k in block]
            else:
                out += [offset + col[k] - own[k] - base if k > 0 else 0 for k in block]
            lo = hi
        return out


def reduce_io(table: SampleTable, grid: "Timeline | None" = None) -> WorkerIo:
    """Totals of one sample file over its valid intervals (never across a failed read, a reaped
    child or a restart), the part of them that began under no phase, and (into ``grid``) when
    they moved. Work is per run of valid rows and per grid slot, not per row."""
    out = WorkerIo()
    n = table.rows
    if n == 0:
        return out
    signs = table.byte_of("rchar", 7)
    breaks, out.counts = classify(signs, table.byte_of("flags", 0))
    out.io_rows = n - sum(b - a for a, b in negative_runs(signs))
    runs = _Runs(n, breaks)
    cumulative = {}
    for name in IO_FIELDS:
        col, own = table.view(name), table.view("own_" + name)
        net = cumulative[name] = _Cumulative(runs, col, own)
        out.totals[name] = net.total
        out.own[name] = _Cumulative(runs, own, None).total
    # Intervals spent under no phase: the bytes up to each interval run's end less those up
    # to its start, every boundary looked up in one pass.
    unphased = _unphased_intervals(table)
    if unphased:
        starts = [a for a, _ in unphased]
        ends = [b for _, b in unphased]
        for name in IO_FIELDS:
            net = cumulative[name]
            out.no_phase[name] += sum(net.at_many(ends)) - sum(net.at_many(starts))
    if grid is not None:
        grid.add(table, cumulative)
    return out


def _unphased_intervals(table: SampleTable) -> list[tuple[int, int]]:
    """Runs of intervals spent with no phase open, as ``(first row, last row)`` of each run.

    With ``phase_since_ns`` (when the row's phase was set; 0: no phase ever was), an interval
    counts only when it lay wholly outside phases: its end row is under no phase, set no later
    than its start row. An interval in which a phase was entered, or entered and left, is not
    claimed. Files written before that column existed are read as they were: an interval
    under no phase at its start counts, a sample period's guess."""
    if PHASE_SINCE_COLUMN not in table.columns:
        return [(a, b) for a, b in negative_runs(table.byte_of("phase", 7)[:-1])]
    t, since = table.view("t_ns"), table.view(PHASE_SINCE_COLUMN)
    found: list[tuple[int, int]] = []
    for a, b in negative_runs(table.byte_of("phase", 7)):
        # Rows a .. b-1 are under no phase. Usually one `since` holds for the whole run (no
        # phase was entered in it): one check, not one per row.
        if b - a < 2:
            continue
        first = since[a]
        if (first == 0 or first <= t[a]) and since[a + 1 : b].tobytes() == since[a : a + 1].tobytes() * (b - a - 1):
            found.append((a, b - 1))
            continue
        run_start = None
        for r in range(a, b - 1):
            ok = since[r + 1] == 0 or since[r + 1] <= t[r]
            if ok and run_start is None:
                run_start = r
            elif not ok and run_start is not None:
                found.append((run_start, r))
                run_start = None
        if run_start is not None:
            found.append((run_start, b - 1))
    return found


def _first_rows(t: memoryview, targets: list[int]) -> list[int]:
    """``[bisect_left(t, x) for x in targets]`` for sorted row times ``t``. Rows come once per
    sampling interval, so each answer is guessed from the rows' mean spacing and checked against
    its neighbours (two reads, no list of the column); a guess that misses (a gap where the
    sampler was stopped) is bisected."""
    n = len(t)
    if n < 2 or t[n - 1] <= t[0]:
        return [bisect_left(t, x) for x in targets]
    t0 = t[0]
    scale = (n - 1) / (t[n - 1] - t0)
    out = []
    for x in targets:
        g = int((x - t0) * scale + 0.999)
        if 0 < g < n and t[g - 1] < x <= t[g]:
            out.append(g)
        elif 1 < g <= n and t[g - 2] < x <= t[g - 1]:
            out.append(g - 1)
        else:
            out.append(bisect_left(t, x))
    return out


class Timeline:
    """A fixed grid over the run's wall-clock span, holding bytes per layer summed over
    workers: one slot per sampling interval, or coarser past ``_MAX_SLOTS`` slots (a 12-hour
    run at 1 Hz gets 10.5-second slots). An interval's bytes land in the slot of its end."""

    LAYERS = ("disk_read", "cache_read", "write")
    FIELDS = ("read_bytes", "rchar", "write_bytes", "cancelled_write_bytes")  # what LAYERS need

    def __init__(self, start_ns: int, end_ns: int, slot_ns: int) -> None:
        span = max(1, end_ns - start_ns)
        slot_ns = max(slot_ns, 1, -(-span // _MAX_SLOTS))
        self.start_ns = start_ns
        self.slot_ns = slot_ns
        self.n = max(1, -(-span // slot_ns))
        # A run shorter than one interval has one slot of its own length, and its rates are per
        # second of that, not of a whole interval. (A longer run's last slot keeps the full
        # length: the intervals that end in it began in the slot before.)
        self.last_slot_ns = span if self.n == 1 else slot_ns
        self.layers = {name: array("d", bytes(8 * self.n)) for name in self.LAYERS}

    def add(self, table: SampleTable, cumulative: dict[str, _Cumulative]) -> None:
        t = table.view("t_ns")
        to_mono = table.monotonic_ref_ns - table.unix_ref_ns
        slot_ns, last = self.slot_ns, self.n - 1
        first_slot = min(last, max(0, (table.to_unix_ns(t[0]) - self.start_ns) // slot_ns))
        last_slot = min(last, max(0, (table.to_unix_ns(t[-1]) - self.start_ns) // slot_ns))
        # Rows [idx[j], idx[j+1]) end their intervals in slot first_slot + j; rows before the
        # run's start or after its end go to the first or last slot.
        idx = [0]
        idx += _first_rows(t, [self.start_ns + j * slot_ns + to_mono for j in range(first_slot + 1, last_slot + 1)])
        idx.append(len(t))
        before = [i - 1 for i in idx]
        at = {name: cumulative[name].at_many(before) for name in self.FIELDS}
        read, chars = at["read_bytes"], at["rchar"]
        written, cancelled = at["write_bytes"], at["cancelled_write_bytes"]
        disk, cache, write = self.layers["disk_read"], self.layers["cache_read"], self.layers["write"]
        for j in range(len(idx) - 1):
            slot = first_slot + j
            r = read[j + 1] - read[j]
            c = chars[j + 1] - chars[j] - r
            w = written[j + 1] - written[j] - (cancelled[j + 1] - cancelled[j])
            if r > 0:
                disk[slot] += r
            if c > 0:
                cache[slot] += c
            if w > 0:
                write[slot] += w

    def bins(self, layer: str, width: int) -> list[float]:
        """Mean bytes per slot in each of ``width`` bins; with fewer slots than bins, each bin
        shows the slot under it."""
        grid = self.layers[layer]
        if self.n < width:
            return [grid[(2 * i + 1) * self.n // (2 * width)] for i in range(width)]
        edges = [self.n * i // width for i in range(width + 1)]
        return [sum(grid[a:b]) / (b - a) for a, b in zip(edges, edges[1:], strict=False)]

    def _slot_s(self, j: int) -> float:
        return (self.last_slot_ns if j == self.n - 1 else self.slot_ns) / 1e9

    def active_seconds(self, layer: str) -> float:
        grid = self.layers[layer]
        full = len(grid) - grid.count(0.0) - (grid[-1] != 0.0)
        return full * self.slot_ns / 1e9 + (self._slot_s(self.n - 1) if grid[-1] != 0.0 else 0.0)

    def peak_rate(self, layer: str) -> float:
        grid = self.layers[layer]
        if not grid:
            return 0.0
        return max(max(grid[:-1], default=0.0) / (self.slot_ns / 1e9), grid[-1] / self._slot_s(self.n - 1))


@dataclass
class WorkerMemory:
    peak: int = -1
    peak_t_unix: int = 0
    #: The RSS trend past the warm-up (:func:`rss_trend`); None when too few rows remain.
    slope_bytes_per_s: float | None = None
    rows: int = 0
    #: RSS over the run's span in chart columns (min and max per column), when a span is given.
    rss: Series | None = None


def measured(table: SampleTable, name: str) -> tuple[array, array]:
    """(t_ns, values) of the rows where column ``name`` was measured (not -1)."""
    t, values = table.column("t_ns"), table.column(name)
    if negative_runs(table.byte_of(name, 7)):  # rows that could not be read: a C-speed scan
        keep = [v >= 0 for v in values]
        t, values = array("q", compress(t, keep)), array("q", compress(values, keep))
    return t, values


#: Bins of the rows past the warm-up whose means the trend is fitted to.
TREND_BINS = 256


def slope_per_s(t: array, values: array) -> float | None:
    """The least-squares slope of ``values`` over ``t`` (ns), per second, fitted to the means of
    up to :data:`TREND_BINS` equal spans of ``t`` weighted by their rows: the line through every
    row to a part in 10^4 or better (what it leaves out is the spread within a bin, 1/65,536 of
    the whole span's), at C-speed sums instead of a float per row. With no more rows than bins,
    each bin holds one row and the fit is over every row. None when ``t`` does not vary."""
    k = min(TREND_BINS, len(t))
    origin, span = t[0], t[-1] - t[0]
    edges = [origin + span * i // k for i in range(k + 1)]
    edges[-1] += 1
    points = [((t[a] + t[a + c - 1]) / 2 - origin, c, mean) for a, c, mean in _bin_means(t, values, edges) if c]
    w = sum(c for _, c, _ in points)
    mx = sum(x * c for x, c, _ in points) / w
    my = sum(y * c for _, c, y in points) / w
    sxx = sum(c * (x - mx) ** 2 for x, c, _ in points)
    if sxx <= 0:
        return None
    return sum(c * (x - mx) * (y - my) for x, c, y in points) / sxx * 1e9


def rss_trend(table: SampleTable) -> float | None:
    """The least-squares slope of RSS over time, bytes per second, fitted over the measured rows
    past the warm-up (the first :data:`WARMUP_SHARE` of the sampled span); None when those are
    fewer than MIN_TREND_ROWS rows or span less than MIN_TREND_NS."""
    t, rss = measured(table, "rss_bytes")
    return _trend(t, rss)


def _trend(t: array, rss: array) -> float | None:
    if not rss:
        return None
    first = bisect_left(t, t[0] + int((t[-1] - t[0]) * WARMUP_SHARE))
    t, rss = t[first:], rss[first:]
    if len(rss) < MIN_TREND_ROWS or t[-1] - t[0] < MIN_TREND_NS:
        return None
    return slope_per_s(t, rss)


def _bin_means(t: array, values: array, edges: list[int]) -> list[tuple[int, int, float]]:
    """(first row, row count, mean value) per [edges[j], edges[j+1]) of ``t``."""
    idx = [bisect_left(t, e) for e in edges]
    idx[-1] = len(t)
    return [(a, b - a, sum(values[a:b]) / (b - a) if b > a else 0.0) for a, b in zip(idx, idx[1:], strict=False)]


def add_level_bins(table: SampleTable, t: array, values: array, bins: list[float], span: tuple[int, int]) -> None:
    """Add the mean of ``values`` (a level: RSS, PSS) in each of ``bins`` over the unix-time
    ``span`` to ``bins``; a bin with no row while the process was alive holds the last value."""
    start, end = span
    offset = table.monotonic_ref_ns - table.unix_ref_ns
    edges = [start + (end - start) * i // len(bins) + offset for i in range(len(bins) + 1)]
    for j, (a, count, mean) in enumerate(_bin_means(t, values, edges)):
        if count:
            bins[j] += mean
        elif 0 < a < len(t):
            bins[j] += values[a - 1]  # no row in this bin, but alive: a level, hold it


def _first_index(values: array, value: int) -> int:
    """``values.index(value)`` at memchr speed: a search of the bytes, not a compare per row."""
    raw, key = values.tobytes(), array(values.typecode, [value]).tobytes()
    at = raw.find(key)
    while at > 0 and at % values.itemsize:  # a match across two values: look further
        at = raw.find(key, at + 1)
    return at // values.itemsize if at >= 0 else values.index(value)


def reduce_memory(
    table: SampleTable, bins: list[float] | None = None, span: tuple[int, int] | None = None
) -> WorkerMemory:
    """RSS peak, its trend past the warm-up (:func:`rss_trend`), and (into ``bins`` over
    ``span``) the mean RSS per bin."""
    out = WorkerMemory()
    t, rss = measured(table, "rss_bytes")
    out.rows = len(rss)
    if not rss:
        return out
    out.peak = max(rss)
    out.peak_t_unix = table.to_unix_ns(t[_first_index(rss, out.peak)])
    out.slope_bytes_per_s = _trend(t, rss)
    if bins is not None and span is not None:
        add_level_bins(table, t, rss, bins, span)
    if span is not None:
        offset = table.monotonic_ref_ns - table.unix_ref_ns
        out.rss = series.columns(t, rss, span[0], span[1], offset_ns=offset, measured=True)
    return out


_NEEDED = ("t_ns", "flags", "phase", "rss_bytes", *IO_FIELDS, *("own_" + f for f in IO_FIELDS))


@dataclass
class FileSummary:
    """What one sample file contributes, computed by :func:`summarise_sample_file` (in a pool's
    process or this one): small, whatever the file's length. ``error``: why the file was not
    used (then nothing else is set); ``grid`` and ``memory_bins``: this file's share of the
    run's timeline and RSS bins, summed into the run's in file order; ``pss_bins``: its PSS in
    the same bins (None: PSS was not measured, the RSS bins stand in)."""

    error: str | None = None
    missing: list[str] = field(default_factory=list)
    truncated_bytes: int = 0
    truncated_what: str = ""
    io: WorkerIo | None = None
    grid: dict[str, array] | None = None
    memory: WorkerMemory | None = None
    memory_bins: list[float] | None = None
    pss_bins: list[float] | None = None


#: A timeline's ``(start_ns, end_ns, slot_ns)``: what a process needs to build the same grid.
GridSpec = tuple[int, int, int]


def summarise_sample_file(task: tuple[Path, GridSpec | None, tuple[int, int] | None]) -> FileSummary:
    """Read one sample file and reduce it: ``task`` is ``(path, grid, span)``, the run's timeline
    (None: none) and its span (None: no memory bins). One file's rows are held, then dropped."""
    path, spec, span = task
    try:
        table = read_samples(path)
    except SampleFileError as error:
        return FileSummary(error=str(error).removeprefix(f"{path}: "))
    out = FileSummary(truncated_bytes=table.truncated_bytes, truncated_what=table.truncated_what)
    out.missing = [c for c in _NEEDED if c not in table.columns]
    if out.missing:
        return out
    grid = None if spec is None else Timeline(*spec)
    out.io = reduce_io(table, grid)
    out.grid = None if grid is None else grid.layers
    out.memory_bins = [0.0] * MEMORY_BINS if span is not None else None
    out.memory = reduce_memory(table, out.memory_bins, span)
    if span is not None and PSS_COLUMN in table.columns:
        t, pss = measured(table, PSS_COLUMN)
        if pss:
            out.pss_bins = [0.0] * MEMORY_BINS
            add_level_bins(table, t, pss, out.pss_bins, span)
    return out


#: Bytes of sample files per extra process when they are reduced in parallel: a day of one
#: worker's rows at 1 Hz is 1.7 MB compressed (9 MB in a version-1 file) and takes tens of
#: milliseconds; starting a process about as long.
SAMPLE_BYTES_PER_JOB = 6 * 1024 * 1024


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def summarise_sample_files(
    paths: list[Path], spec: GridSpec | None, span: tuple[int, int] | None
) -> Iterator[FileSummary]:
    """:func:`summarise_sample_file` of every path, in order, over the usable cores when the
    files are many and large enough (:mod:`..parallel`); the same summaries either way."""
    jobs = parallel.jobs_for(len(paths), sum(map(_size, paths)), SAMPLE_BYTES_PER_JOB)
    tasks = [(path, spec, span) for path in paths]
    return parallel.ordered_map(summarise_sample_file, tasks, jobs)


def add_into(total: array | list[float], part: array | list[float]) -> None:
    """``total[i] += part[i]`` for every slot, at C speed (the parent folds 1,024 files' 4,096
    slots): adding a file's share slot by slot, in file order, gives the same floats however the
    shares were computed. (Adding a zero share leaves a total as it was: totals start at 0.0 and
    are never -0.0.)"""
    if len(part) != len(total):
        raise ValueError(f"a share of {len(part)} slots added to {len(total)}")
    summed = map(add, total, part)
    if isinstance(total, array):
        total[:] = array(total.typecode, summed)
    else:
        total[:] = list(summed)


__all__ = [
    "MEMORY_BINS",
    "MIN_TREND_NS",
    "MIN_TREND_ROWS",
    "WARMUP_SHARE",
    "FileSummary",
    "GridSpec",
    "Timeline",
    "WorkerIo",
    "WorkerMemory",
    "add_into",
    "reduce_io",
    "reduce_memory",
    "rss_trend",
    "summarise_sample_file",
    "summarise_sample_files",
]
