"""The report's resource blocks: I/O BY PHASE (measured exactly), I/O (sampled) and MEMORY.

Each block is ``compute(run, options) -> model`` over a :class:`~..merge.Run` (None: the block
is absent): :func:`io_by_phase`, :func:`sampled_io`, :func:`memory`; ``report/text.py``,
``report/json.py`` and ``report/html/`` render the models. ``options.no_samples`` skips the
sampled blocks without opening a sample file.

Sample files are reduced one worker at a time into fixed-size aggregates (totals, a timeline
grid, a few bins of RSS), so memory is one worker's rows plus the grid, however many workers
the run has. This module reads files only; it imports no C module.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress
from pathlib import Path
from typing import Any

from ...runfiles.samplefile import (
    IO_FIELDS,
    IntervalCounts,
    SampleFileError,
    SampleTable,
    classify,
    negative_runs,
    read_samples,
)
from .. import format as fmt
from .. import parallel, series
from ..merge import Run
from ..model import IoByPhase, IoPhase, IoTimeline, Memory, MemoryRole, ProcessMemory, Reason, SampledIo, Series
from . import RenderOptions, SampleInfo, sample_infos

RULE = fmt.RULE
SPARK = " ▁▂▃▄▅▆▇█"
SPARK_WIDTH = 42
MEMORY_BINS = 24
_MAX_SLOTS = 4096  # timeline slots: bounds the per-worker work and the peak's resolution
MIN_TREND_NS = 60 * 10**9


def _span(run: Run) -> tuple[int, int] | None:
    """The run's (start, end) in unix ns, or None when it has no length."""
    start, end = run.start_ns, run.end_ns
    return (start, end) if end > start else None


# ---------------------------------------------------------------------------------------------
# Sparklines (the units of every number are report/format.py's)
# ---------------------------------------------------------------------------------------------


def sparkline(values: Sequence[float], *, level: bool = False) -> str:
    """One character per value. A flow (bytes per bin) is scaled from zero to the largest and
    exact zeros stay blank; a ``level`` (RSS) is scaled from its smallest positive value to its
    largest, so that a slow climb shows as a ramp rather than a row of full blocks."""
    top = max(values, default=0)
    if top <= 0:
        return " " * len(values)
    last = len(SPARK) - 1
    if level:
        low = min(v for v in values if v > 0)
        span = top - low
        return "".join(
            SPARK[0] if v <= 0 else SPARK[last if span <= 0 else 1 + round((v - low) / span * (last - 1))]
            for v in values
        )
    return "".join(SPARK[0] if v <= 0 else SPARK[max(1, min(last, round(v / top * last)))] for v in values)


# ---------------------------------------------------------------------------------------------
# I/O BY PHASE (measured exactly): from the phases' io_bytes, no samples needed
# ---------------------------------------------------------------------------------------------


def _per_second(n_bytes: float, seconds: float) -> float | None:
    """Bytes per second; None (n/a) when no time passed."""
    return n_bytes / seconds if seconds > 0 else None


def _io_value(io: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = io.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def io_by_phase(run: Run, options: RenderOptions) -> IoByPhase | None:
    """Per ``io=True`` phase: disk read/write bytes, page-cache reads, rate over its wall time.

    Reads ``phases[].io_bytes``: ``read_bytes``, ``write_bytes`` and ``rchar`` (or
    ``read_chars``), optionally ``failed`` (boundary reads that failed: nothing recorded) and
    ``measured`` (entries with a delta). Summed per path over the workers (per role and path when
    the run has several roles with io phases), most bytes first.
    """
    merged: dict[tuple[str, str], dict[str, int]] = {}
    for worker in run.workers:
        # Validated on reading: path, entries and wall_ns are there; io_bytes is an object or
        # None, and what it holds is checked value by value.
        for phase in worker.document["phases"]:
            io = phase.get("io_bytes")
            if not isinstance(io, dict):
                continue
            read = _io_value(io, "read_bytes")
            write = _io_value(io, "write_bytes")
            if read is None or write is None:
                continue
            key = (worker.role, phase["path"])
            acc = merged.setdefault(
                key, {"read": 0, "write": 0, "chars": 0, "wall": 0, "failed": 0, "entries": 0, "measured": 0}
            )
            acc["read"] += read
            acc["write"] += write
            acc["chars"] += _io_value(io, "rchar", "read_chars") or 0
            acc["failed"] += _io_value(io, "failed", "failed_reads") or 0
            entries = phase["entries"]
            acc["entries"] += entries
            measured = _io_value(io, "measured")
            acc["measured"] += entries if measured is None else measured
            wall = phase["wall_ns"]
            # Only the measured entries' share of the wall time moved these bytes.
            acc["wall"] += wall if not entries or measured is None else wall * measured // entries
    if not merged:
        return None
    rows = [
        IoPhase(
            role=role,
            path=path,
            read_bytes=acc["read"],
            write_bytes=acc["write"],
            cache_read_bytes=max(0, acc["chars"] - acc["read"]),
            failed=acc["failed"],
            entries=acc["entries"],
            bytes_per_s=_per_second(acc["read"] + acc["write"], acc["wall"] / 1e9),
        )
        for (role, path), acc in sorted(merged.items(), key=lambda kv: -(kv[1]["read"] + kv[1]["write"]))
    ]
    return IoByPhase(several_roles=len({role for role, _ in merged}) > 1, phases=rows)

# ---------------------------------------------------------------------------------------------
# The sampled reduction, one worker at a time
# ---------------------------------------------------------------------------------------------


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
    # Intervals starting at a row under no phase, i.e. ending at rows a+1 .. b for a run [a, b):
    # the bytes up to each b less those up to each a, every boundary looked up in one pass.
    unphased = negative_runs(table.byte_of("phase", 7)[:-1])
    if unphased:
        starts = [a for a, _ in unphased]
        ends = [b for _, b in unphased]
        for name in IO_FIELDS:
            net = cumulative[name]
            out.no_phase[name] += sum(net.at_many(ends)) - sum(net.at_many(starts))
    if grid is not None:
        grid.add(table, cumulative)
    return out


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

    def active_seconds(self, layer: str) -> float:
        grid = self.layers[layer]
        return (len(grid) - grid.count(0.0)) * self.slot_ns / 1e9

    def peak_rate(self, layer: str) -> float:
        return max(self.layers[layer], default=0.0) / (self.slot_ns / 1e9)


@dataclass
class WorkerMemory:
    peak: int = -1
    peak_t_unix: int = 0
    slope_bytes_per_s: float | None = None
    rows: int = 0
    #: RSS over the run's span in chart columns (min and max per column), when a span is given.
    rss: Series | None = None


def _bin_means(t: array, rss: array, edges: list[int]) -> list[tuple[int, int, float]]:
    """(first row, row count, mean RSS) per [edges[j], edges[j+1]) of ``t``."""
    idx = [bisect_left(t, e) for e in edges]
    idx[-1] = len(t)
    return [(a, b - a, sum(rss[a:b]) / (b - a) if b > a else 0.0) for a, b in zip(idx, idx[1:], strict=False)]


def reduce_memory(
    table: SampleTable, bins: list[float] | None = None, span: tuple[int, int] | None = None
) -> WorkerMemory:
    """RSS peak, a least-squares slope (over 64 bin means: the same line as over every row,
    at a fraction of the work), and (into ``bins`` over ``span``) the mean RSS per bin."""
    out = WorkerMemory()
    rss = table.column("rss_bytes")
    t = table.column("t_ns")
    if negative_runs(table.byte_of("rss_bytes", 7)):  # rows whose RSS could not be read: a C-speed scan
        keep = [v >= 0 for v in rss]
        rss, t = array("q", compress(rss, keep)), array("q", compress(t, keep))
    out.rows = len(rss)
    if not rss:
        return out
    out.peak = max(rss)
    out.peak_t_unix = table.to_unix_ns(t[rss.index(out.peak)])
    # Extrapolating under a minute of samples to a rate per hour would be noise, not a trend.
    if len(rss) >= 10 and t[-1] - t[0] >= MIN_TREND_NS:
        k = min(64, len(rss))
        edges = [t[0] + (t[-1] - t[0]) * i // k for i in range(k + 1)]
        edges[-1] += 1
        points = [((t[a] + t[a + c - 1]) / 2e9, c, mean) for a, c, mean in _bin_means(t, rss, edges) if c]
        w = sum(c for _, c, _ in points)
        mx = sum(x * c for x, c, _ in points) / w
        my = sum(y * c for _, c, y in points) / w
        sxx = sum(c * (x - mx) ** 2 for x, c, _ in points)
        if sxx > 0:
            out.slope_bytes_per_s = sum(c * (x - mx) * (y - my) for x, c, y in points) / sxx
    if bins is not None and span is not None:
        start, end = span
        offset = table.monotonic_ref_ns - table.unix_ref_ns
        edges = [start + (end - start) * i // len(bins) + offset for i in range(len(bins) + 1)]
        for j, (a, count, mean) in enumerate(_bin_means(t, rss, edges)):
            if count:
                bins[j] += mean
            elif 0 < a < len(t):
                bins[j] += rss[a - 1]  # no row in this bin, but alive: RSS is a level, hold it
    if span is not None:
        offset = table.monotonic_ref_ns - table.unix_ref_ns
        out.rss = series.columns(t, rss, span[0], span[1], offset_ns=offset)
    return out


@dataclass
class RunResources:
    """The sampled resources of a whole run, reduced."""

    workers: int = 0  # workers with a samples object
    sampled: int = 0  # of which a sample file was read
    io_measured: int = 0  # of which some I/O rows were read
    reasons: dict[str, int] = field(default_factory=dict)  # why a worker has no samples -> count
    io_reasons: dict[str, int] = field(default_factory=dict)
    #: Sample files that could not be used (or only partly): one CAVEATS line each.
    caveats: list[str] = field(default_factory=list)
    io: WorkerIo = field(default_factory=WorkerIo)
    phase_tracked: bool = False
    timeline: Timeline | None = None
    interval_ns: int = 0  # the coarsest sampling interval among the workers
    memory_by_role: dict[str, list[tuple[WorkerMemory, str]]] = field(default_factory=dict)
    memory_bins: list[float] = field(default_factory=list)
    span: tuple[int, int] | None = None


_NEEDED = ("t_ns", "flags", "phase", "rss_bytes", *IO_FIELDS, *("own_" + f for f in IO_FIELDS))


def _shown(path: Path, run: Run) -> str:
    """A sample file's path as CAVEATS names it: relative to the run directory."""
    try:
        return str(path.relative_to(run.run_dir))
    except ValueError:
        return str(path)


@dataclass
class FileSummary:
    """What one sample file contributes, computed by :func:`summarise_sample_file` (in a pool's
    process or this one): small, whatever the file's length. ``error``: why the file was not
    used (then nothing else is set); ``grid`` and ``memory_bins``: this file's share of the
    run's timeline and RSS bins, summed into the run's in file order."""

    error: str | None = None
    missing: list[str] = field(default_factory=list)
    truncated_bytes: int = 0
    io: WorkerIo | None = None
    grid: dict[str, array] | None = None
    memory: WorkerMemory | None = None
    memory_bins: list[float] | None = None


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
    out = FileSummary(truncated_bytes=table.truncated_bytes)
    out.missing = [c for c in _NEEDED if c not in table.columns]
    if out.missing:
        return out
    grid = None if spec is None else Timeline(*spec)
    out.io = reduce_io(table, grid)
    out.grid = None if grid is None else grid.layers
    out.memory_bins = [0.0] * MEMORY_BINS if span is not None else None
    out.memory = reduce_memory(table, out.memory_bins, span)
    return out


#: Bytes of sample files per extra process when they are reduced in parallel: a day of one
#: worker's rows at 1 Hz is 9 MB and takes tens of milliseconds; starting a process about as long.
SAMPLE_BYTES_PER_JOB = 32 * 1024 * 1024


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _summaries(infos: list[SampleInfo], spec: GridSpec | None, span: tuple[int, int] | None) -> Iterator[FileSummary]:
    """The summary of every info's sample file, in order, over the usable cores when the files
    are many and large enough (:mod:`..parallel`); the same summaries either way."""
    paths = [info.sidecar for info in infos if info.sidecar is not None]
    jobs = parallel.jobs_for(len(paths), sum(map(_size, paths)), SAMPLE_BYTES_PER_JOB)
    tasks = [(path, spec, span) for path in paths]
    return parallel.ordered_map(summarise_sample_file, tasks, jobs)


def _add_into(total: array | list[float], part: array | list[float]) -> None:
    """``total[i] += part[i]`` where ``part[i]`` is not zero: adding a file's share slot by slot,
    in file order, gives the same floats however the shares were computed."""
    for i, value in enumerate(part):
        if value:
            total[i] += value


def reduce_run(run: Run, options: RenderOptions) -> RunResources:
    """Reduce each worker's sample file (:func:`summarise_sample_file`) and fold the summaries,
    in worker order, into run-wide aggregates."""
    infos = sample_infos(run, options)
    res = RunResources()
    res.span = _span(run)
    res.memory_bins = [0.0] * MEMORY_BINS
    intervals = [info.interval_s for info in infos if info.interval_s is not None]
    spec: GridSpec | None = None
    if res.span is not None and intervals:
        res.interval_ns = int(max(intervals) * 1e9)
        spec = (res.span[0], res.span[1], res.interval_ns)
        res.timeline = Timeline(*spec)
    summaries = _summaries(infos, spec, res.span)
    for info in infos:
        res.workers += 1
        if info.sidecar is None:
            reason = info.unavailable_reason or "no samples were written"
            res.reasons[reason] = res.reasons.get(reason, 0) + 1
            continue
        name = _shown(info.sidecar, run)
        summary = next(summaries)
        if summary.error is not None:
            res.caveats.append(f"{name}: {summary.error}; {info.worker.label} is left out of I/O and MEMORY")
            continue
        if summary.truncated_bytes:
            res.caveats.append(f"{name}: partial last row ignored ({fmt.count(summary.truncated_bytes)} bytes)")
        if summary.missing:
            res.caveats.append(
                f"{name}: sample file lacks columns {', '.join(summary.missing)}; {info.worker.label} is left out of "
                "I/O and MEMORY"
            )
            continue
        res.sampled += 1
        wio = summary.io
        assert wio is not None and summary.memory is not None
        if res.timeline is not None and summary.grid is not None:
            for layer, values in summary.grid.items():
                _add_into(res.timeline.layers[layer], values)
        if wio.io_rows:
            res.io_measured += 1
            for name in IO_FIELDS:
                res.io.totals[name] += wio.totals[name]
                res.io.own[name] += wio.own[name]
                res.io.no_phase[name] += wio.no_phase[name]
            res.io.counts.add(wio.counts)
            if not info.phase_unavailable_reason:
                res.phase_tracked = True
        else:
            why = info.io_unavailable_reason or "the I/O counters could not be read"
            res.io_reasons[why] = res.io_reasons.get(why, 0) + 1
        if summary.memory_bins is not None:
            _add_into(res.memory_bins, summary.memory_bins)
        wmem = summary.memory
        if wmem.rows:
            worker = info.worker
            res.memory_by_role.setdefault(worker.role, []).append((wmem, worker.label))
    return res


#: How many sample-file CAVEATS lines are printed before the rest are counted in one.
CAVEAT_LINES = 10


def resources_of(run: Run, options: RenderOptions) -> RunResources:
    """``reduce_run(run, options)``, computed once per report for the blocks that share it;
    the sample files it could not use are named under CAVEATS, once."""

    def compute() -> RunResources:
        res = reduce_run(run, options)
        for line in res.caveats[:CAVEAT_LINES]:
            options.add_caveat(line)
        if len(res.caveats) > CAVEAT_LINES:
            options.add_caveat(f"... and {len(res.caveats) - CAVEAT_LINES} more sample files not fully used")
        return res

    return options.shared("resources", run, compute)


# ---------------------------------------------------------------------------------------------
# The models of I/O (sampled) and MEMORY
# ---------------------------------------------------------------------------------------------


def _reasons(reasons: dict[str, int]) -> list[Reason]:
    return [Reason(why, n) for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]


def sampled_io(run: Run, options: RenderOptions) -> SampledIo | None:
    """Sampled I/O: totals per layer with rates, when the writes happened, dropped intervals,
    the share under no phase and the profiler's own I/O excluded. None: samples are off or no
    worker has a samples object."""
    if options.no_samples:
        return None
    res = resources_of(run, options)
    if res.workers == 0:
        return None
    io = SampledIo(
        processes=res.workers,
        measured_processes=res.io_measured,
        reasons=[],
        problems=list(res.caveats),
        disk_read_bytes=0,
        cache_read_bytes=0,
        write_bytes=0,
        rates_known=False,
        disk_read_per_s=None,
        write_per_s=None,
        timeline=None,
        phase_tracked=res.phase_tracked,
        no_phase_share=None,
        valid_intervals=0,
        dropped_intervals=0,
        dropped_failed=0,
        dropped_reaped=0,
        dropped_unknown=0,
        own_write_bytes=0,
        own_write_chars=0,
        own_read_chars=0,
    )
    if res.io_measured == 0:
        io.reasons = _reasons({**res.reasons, **res.io_reasons})
        return io
    io.reasons = _reasons(res.io_reasons) + _reasons(res.reasons)
    t = res.io.totals
    io.disk_read_bytes = t["read_bytes"]
    io.cache_read_bytes = max(0, t["rchar"] - t["read_bytes"])
    io.write_bytes = t["write_bytes"] - t["cancelled_write_bytes"]
    grid = res.timeline
    if grid is not None:
        io.rates_known = True
        io.disk_read_per_s = _per_second(io.disk_read_bytes, grid.active_seconds("disk_read"))
        io.write_per_s = _per_second(io.write_bytes, grid.active_seconds("write"))
        slot_s = grid.slot_ns / 1e9
        io.timeline = IoTimeline(
            slot_ns=grid.slot_ns,
            interval_ns=res.interval_ns,
            write_bins=grid.bins("write", SPARK_WIDTH),
            peak_write_per_s=grid.peak_rate("write"),
            rates={
                layer: series.regroup([v / slot_s for v in grid.layers[layer]], grid.start_ns, grid.slot_ns)
                for layer in Timeline.LAYERS
            },
        )
    total = io.disk_read_bytes + io.cache_read_bytes + io.write_bytes
    np_ = res.io.no_phase
    np_cache = max(0, np_["rchar"] - np_["read_bytes"])
    np_total = np_["read_bytes"] + np_cache + np_["write_bytes"] - np_["cancelled_write_bytes"]
    if res.phase_tracked and total > 0:
        io.no_phase_share = np_total / total
    c = res.io.counts
    io.valid_intervals, io.dropped_intervals = c.valid, c.dropped
    io.dropped_failed, io.dropped_reaped, io.dropped_unknown = c.failed, c.reaped, c.unknown
    own = res.io.own
    io.own_write_bytes, io.own_write_chars, io.own_read_chars = own["write_bytes"], own["wchar"], own["rchar"]
    return io


def memory(run: Run, options: RenderOptions) -> Memory | None:
    """RSS peak per role and over the run, its trend (the steepest per-process slope in each
    role), the summed RSS of all processes over the run, and each process's RSS over time."""
    if options.no_samples:
        return None
    res = resources_of(run, options)
    if res.workers == 0:
        return None
    out = Memory(processes=res.workers, reasons=_reasons(res.reasons), roles=[], total_bins=None, largest=None,
                 members=[])
    start = res.span[0] if res.span is not None else None
    for role, members in sorted(res.memory_by_role.items()):
        slopes = [m.slope_bytes_per_s for m, _ in members if m.slope_bytes_per_s is not None]
        out.roles.append(
            MemoryRole(
                role=role,
                processes=len(members),
                peak_bytes=max(m.peak for m, _ in members),
                trend_bytes_per_s=max(slopes, key=abs) if slopes else None,
            )
        )
        for m, label in members:
            entry = ProcessMemory(
                label=label,
                role=role,
                peak_bytes=m.peak,
                peak_at_ns=None if start is None else max(0, m.peak_t_unix - start),
                slope_bytes_per_s=m.slope_bytes_per_s,
                rss=m.rss,
            )
            out.members.append(entry)
            if out.largest is None or entry.peak_bytes > out.largest.peak_bytes:
                out.largest = entry
    if res.span is not None and any(res.memory_bins):
        out.total_bins = list(res.memory_bins)
    return out


# ---------------------------------------------------------------------------------------------
# Each block as text (what report/text.py prints for it), for callers that want one block
# ---------------------------------------------------------------------------------------------


def render_io_by_phase(run: Run, options: RenderOptions) -> list[str]:
    from ..text import io_by_phase_lines

    return io_by_phase_lines(io_by_phase(run, options))


def render_io(run: Run, options: RenderOptions) -> list[str]:
    from ..text import io_lines

    return io_lines(sampled_io(run, options))


def render_memory(run: Run, options: RenderOptions) -> list[str]:
    from ..text import memory_lines

    return memory_lines(memory(run, options))


__all__ = [
    "MEMORY_BINS",
    "SPARK",
    "SPARK_WIDTH",
    "RunResources",
    "Timeline",
    "WorkerIo",
    "WorkerMemory",
    "io_by_phase",
    "memory",
    "reduce_io",
    "reduce_memory",
    "reduce_run",
    "render_io",
    "render_io_by_phase",
    "render_memory",
    "resources_of",
    "sampled_io",
    "sparkline",
]
