"""The report's resource blocks: I/O BY PHASE (measured exactly), I/O (sampled) and MEMORY.

Each block is ``render(run, options) -> list[str]`` (an empty list: the block is absent). ``run``
is whatever the merge hands over; this module needs only the worker documents of the newest
attempt with their paths and, if known, the run's start and end (see :func:`workers_of`).
``options.no_samples`` skips the sampled blocks without opening a sample file.

Sample files are reduced one worker at a time into fixed-size aggregates (totals, a timeline
grid, a few bins of RSS), so memory is one worker's rows plus the grid, however many workers
the run has. This module reads files only; it imports no C module.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import compress
from operator import sub
from pathlib import Path
from typing import Any, Sequence

from ..samplefile import IO_FIELDS, IntervalCounts, SampleFileError, SampleTable, interval_mask, read_samples

RULE = "─" * 62
SPARK = " ▁▂▃▄▅▆▇█"
SPARK_WIDTH = 42
MEMORY_BINS = 24
_MAX_SLOTS = 200_000
MIN_TREND_NS = 60 * 10**9


# ---------------------------------------------------------------------------------------------
# The thin adapter to the merged run
# ---------------------------------------------------------------------------------------------


def workers_of(run: Any) -> list[tuple[dict[str, Any], Path | None]]:
    """(document, path) per worker. Accepts a sequence of pairs, of objects with ``document``
    (or ``doc``) and ``path``, or an object whose ``workers`` is either."""
    items = getattr(run, "workers", run)
    out = []
    for item in items or ():
        if isinstance(item, tuple) and len(item) == 2:
            doc, path = item
        else:
            doc = getattr(item, "document", None) or getattr(item, "doc", None)
            path = getattr(item, "path", None)
        if isinstance(doc, dict):
            out.append((doc, None if path is None else Path(path)))
    return out


def run_span(run: Any, workers: Sequence[tuple[dict[str, Any], Path | None]]) -> tuple[int, int] | None:
    """(start, end) in unix ns: the run's if it says, else the earliest start and latest flush."""
    start = getattr(run, "start_unix_ns", None)
    end = getattr(run, "end_unix_ns", None)
    if isinstance(start, int) and isinstance(end, int) and end > start:
        return start, end
    starts, ends = [], []
    for doc, _ in workers:
        times = doc.get("times") or {}
        if isinstance(times.get("start_unix_ns"), int):
            starts.append(times["start_unix_ns"])
        last = times.get("end_unix_ns") or times.get("last_flush_unix_ns")
        if isinstance(last, int):
            ends.append(last)
    if not starts or not ends or max(ends) <= min(starts):
        return None
    return min(starts), max(ends)


def _no_samples(options: Any) -> bool:
    return bool(getattr(options, "no_samples", False))


def _role(doc: dict[str, Any]) -> str:
    return str((doc.get("identity") or {}).get("role", "?"))


def _label(doc: dict[str, Any]) -> str:
    ident = doc.get("identity") or {}
    return f"{ident.get('role', '?')} pid {ident.get('pid', '?')} on {ident.get('host', '?')}"


# ---------------------------------------------------------------------------------------------
# Numbers as people read them (decimal units: 1 MB = 10^6 bytes)
# ---------------------------------------------------------------------------------------------


def fmt_bytes(n: float) -> str:
    if n < 1000:
        return f"{int(round(n))} B"
    for unit in ("KB", "MB", "GB", "TB", "PB"):
        n /= 1000.0
        if n < 999.95 or unit == "PB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")


def fmt_rate(bytes_: float, seconds: float) -> str:
    return fmt_bytes(bytes_ / seconds) + "/s" if seconds > 0 else "n/a"


def fmt_duration(ns: int) -> str:
    s = ns / 1e9
    if s < 60:
        return f"{s:.0f}s"
    m = int(s // 60)
    if m < 60:
        return f"{m}m"
    return f"{m // 60}h {m % 60}m"


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
            SPARK[0] if v <= 0 else SPARK[last if span <= 0 else 1 + round((v - low) / span * (last - 1))] for v in values
        )
    return "".join(SPARK[0] if v <= 0 else SPARK[max(1, min(last, round(v / top * last)))] for v in values)


# ---------------------------------------------------------------------------------------------
# I/O BY PHASE (measured exactly): from the phases' io_bytes, no samples needed
# ---------------------------------------------------------------------------------------------


def _io_value(io: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = io.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def render_io_by_phase(run: Any, options: Any = None) -> list[str]:
    """Per ``io=True`` phase: disk read/write bytes, page-cache reads, rate over its wall time.

    Reads ``phases[].io_bytes``: ``read_bytes``, ``write_bytes`` and ``rchar`` (or
    ``read_chars``), optionally ``failed`` (boundary reads that failed: nothing recorded) and
    ``measured`` (entries with a delta). Summed per path over the workers (per role and path when
    the run has several roles with io phases).
    """
    merged: dict[tuple[str, str], dict[str, int]] = {}
    for doc, _ in workers_of(run):
        for phase in doc.get("phases") or ():
            io = phase.get("io_bytes") if isinstance(phase, dict) else None
            if not isinstance(io, dict):
                continue
            read = _io_value(io, "read_bytes")
            write = _io_value(io, "write_bytes")
            if read is None or write is None:
                continue
            key = (_role(doc), str(phase.get("path", "?")))
            acc = merged.setdefault(key, {"read": 0, "write": 0, "chars": 0, "wall": 0, "failed": 0, "entries": 0, "measured": 0})
            acc["read"] += read
            acc["write"] += write
            acc["chars"] += _io_value(io, "rchar", "read_chars") or 0
            acc["failed"] += _io_value(io, "failed", "failed_reads") or 0
            entries = phase.get("entries") if isinstance(phase.get("entries"), int) else 0
            acc["entries"] += entries
            measured = _io_value(io, "measured")
            acc["measured"] += entries if measured is None else measured
            wall = phase.get("wall_ns") if isinstance(phase.get("wall_ns"), int) else 0
            # Only the measured entries' share of the wall time moved these bytes.
            acc["wall"] += wall if not entries or measured is None else wall * measured // entries
    if not merged:
        return []
    several_roles = len({role for role, _ in merged}) > 1
    lines = ["I/O BY PHASE (measured exactly)", RULE]
    for (role, path), acc in sorted(merged.items(), key=lambda kv: -(kv[1]["read"] + kv[1]["write"])):
        name = f"{role}: {path}" if several_roles else path
        rate = fmt_rate(acc["read"] + acc["write"], acc["wall"] / 1e9)
        lines.append(
            f"  {name:<25} r {fmt_bytes(acc['read']):>10}   w {fmt_bytes(acc['write']):>10} {rate:>13}"
        )
        cache = acc["chars"] - acc["read"]
        if cache > 0:
            lines.append(" " * 28 + f"+ {fmt_bytes(cache)} read from page cache")
        if acc["failed"]:
            lines.append(" " * 28 + f"! {acc['failed']:,} entries not measured (counter read failed)")
    return lines


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


def reduce_io(table: SampleTable, grid: "Timeline | None" = None) -> WorkerIo:
    """Totals of one sample file over its valid intervals (never across a failed read, a reaped
    child or a restart); adds each interval's bytes to ``grid`` at the interval's start."""
    out = WorkerIo()
    n = table.rows
    if n == 0:
        return out
    rchar = table.column("rchar")
    flags = table.column("flags")
    out.io_rows = n - rchar.count(-1)
    if out.io_rows == n and not any(flags[1:]):
        mask = None  # every interval valid: the common case, no per-row work for totals
        out.counts.valid = n - 1
    else:
        full, out.counts = interval_mask(rchar, flags)
        mask = full[1:]
    phase = table.column("phase")
    no_phase = [p < 0 for p in phase[:-1]]
    if mask is not None:
        no_phase = [a and b for a, b in zip(no_phase, mask)]
    any_no_phase = any(no_phase)
    deltas: dict[str, list[int]] = {}
    for name in IO_FIELDS:
        col, own = table.column(name), table.column("own_" + name)
        own_d = list(map(sub, own[1:], own[:-1]))
        net = list(map(sub, map(sub, col[1:], col[:-1]), own_d))
        deltas[name] = net
        if mask is None:
            out.totals[name] = sum(net)
            out.own[name] = own[-1] - own[0]
        else:
            out.totals[name] = sum(compress(net, mask))
            out.own[name] = sum(compress(own_d, mask))
        if any_no_phase:
            out.no_phase[name] = sum(compress(net, no_phase))
    if grid is not None:
        grid.add(table, deltas, mask)
    return out


class Timeline:
    """A fixed grid over the run's wall-clock span, one slot per sampling interval (or coarser,
    past ``_MAX_SLOTS``), holding bytes per layer summed over workers."""

    LAYERS = ("disk_read", "cache_read", "write")

    def __init__(self, start_ns: int, end_ns: int, slot_ns: int) -> None:
        span = max(1, end_ns - start_ns)
        slot_ns = max(slot_ns, 1, -(-span // _MAX_SLOTS))
        self.start_ns = start_ns
        self.slot_ns = slot_ns
        self.n = max(1, -(-span // slot_ns))
        self.layers = {name: array("d", bytes(8 * self.n)) for name in self.LAYERS}

    def add(self, table: SampleTable, deltas: dict[str, list[int]], mask: list[bool] | None) -> None:
        offset = table.unix_ref_ns - table.monotonic_ref_ns - self.start_ns
        last = self.n - 1
        starts = table.column("t_ns")[:-1]
        cache = [c - r if c > r else 0 for c, r in zip(deltas["rchar"], deltas["read_bytes"])]
        series = {
            "disk_read": deltas["read_bytes"],
            "cache_read": cache,
            "write": list(map(sub, deltas["write_bytes"], deltas["cancelled_write_bytes"])),
        }
        slot_ns = self.slot_ns
        for name, values in series.items():
            keep = [v > 0 for v in values]
            if mask is not None:
                keep = [a and b for a, b in zip(keep, mask)]
            grid = self.layers[name]
            for t, v in zip(compress(starts, keep), compress(values, keep)):
                slot = (t + offset) // slot_ns
                grid[0 if slot < 0 else last if slot > last else slot] += v

    def bins(self, layer: str, width: int) -> list[float]:
        """Mean bytes per slot in each of ``width`` bins; with fewer slots than bins, each bin
        shows the slot under it."""
        grid = self.layers[layer]
        if self.n < width:
            return [grid[(2 * i + 1) * self.n // (2 * width)] for i in range(width)]
        edges = [self.n * i // width for i in range(width + 1)]
        return [sum(grid[a:b]) / (b - a) for a, b in zip(edges, edges[1:])]

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


def reduce_memory(table: SampleTable, bins: "list[float] | None" = None, span: tuple[int, int] | None = None) -> WorkerMemory:
    """RSS peak, a least-squares slope, and (into ``bins`` over ``span``) the mean RSS per bin."""
    out = WorkerMemory()
    rss_all = table.column("rss_bytes")
    keep = [v >= 0 for v in rss_all]
    rss = array("q", compress(rss_all, keep))
    t = array("q", compress(table.column("t_ns"), keep))
    out.rows = len(rss)
    if not rss:
        return out
    out.peak = max(rss)
    out.peak_t_unix = table.to_unix_ns(t[rss.index(out.peak)])
    # Extrapolating under a minute of samples to a rate per hour would be noise, not a trend.
    if len(rss) >= 10 and t[-1] - t[0] >= MIN_TREND_NS:
        x = [(v - t[0]) / 1e9 for v in t]
        n = len(x)
        sx, sy = sum(x), float(sum(rss))
        sxx = sum(map(float.__mul__, x, x))
        sxy = sum(map(float.__mul__, x, map(float, rss)))
        den = n * sxx - sx * sx
        if den > 0:
            out.slope_bytes_per_s = (n * sxy - sx * sy) / den
    if bins is not None and span is not None:
        start, end = span
        width = len(bins)
        offset = table.monotonic_ref_ns - table.unix_ref_ns
        edges = [start + (end - start) * i // width + offset for i in range(width + 1)]
        idx = [bisect_left(t, e) for e in edges]
        idx[-1] = len(t)
        for j in range(width):
            a, b = idx[j], idx[j + 1]
            if b > a:
                bins[j] += sum(rss[a:b]) / (b - a)
            elif 0 < a < len(t):
                bins[j] += rss[a - 1]  # no row in this bin, but alive: RSS is a level, hold it
    return out


@dataclass
class RunResources:
    """The sampled resources of a whole run, reduced."""

    workers: int = 0  # workers with a samples object
    sampled: int = 0  # of which a sample file was read
    io_measured: int = 0  # of which some I/O rows were read
    reasons: dict[str, int] = field(default_factory=dict)  # why a worker has no samples -> count
    io_reasons: dict[str, int] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)
    io: WorkerIo = field(default_factory=WorkerIo)
    phase_tracked: bool = False
    timeline: Timeline | None = None
    memory_by_role: dict[str, list[tuple[WorkerMemory, str]]] = field(default_factory=dict)
    memory_bins: list[float] = field(default_factory=list)
    span: tuple[int, int] | None = None


def _sidecar_path(doc: dict[str, Any], path: Path | None) -> Path | None:
    samples = doc.get("samples")
    name = samples.get("file") if isinstance(samples, dict) else None
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        return None
    return None if path is None else path.parent / name


def reduce_run(run: Any) -> RunResources:
    """Read each worker's sample file in turn and fold it into run-wide aggregates."""
    workers = workers_of(run)
    res = RunResources()
    res.span = run_span(run, workers)
    res.memory_bins = [0.0] * MEMORY_BINS
    intervals = []
    for doc, _ in workers:
        samples = doc.get("samples")
        if isinstance(samples, dict) and isinstance(samples.get("interval_s"), (int, float)):
            intervals.append(samples["interval_s"])
    if res.span is not None and intervals:
        res.timeline = Timeline(res.span[0], res.span[1], int(max(intervals) * 1e9))
    for doc, path in workers:
        samples = doc.get("samples")
        if not isinstance(samples, dict):
            continue
        res.workers += 1
        sidecar = _sidecar_path(doc, path)
        if sidecar is None:
            reason = samples.get("unavailable_reason") or "no samples were written"
            res.reasons[str(reason)] = res.reasons.get(str(reason), 0) + 1
            continue
        try:
            table = read_samples(sidecar)
        except SampleFileError as error:
            res.caveats.append(str(error))
            continue
        if table.truncated_bytes:
            res.caveats.append(f"{sidecar}: partial last row ignored ({table.truncated_bytes} bytes)")
        missing = [c for c in ("t_ns", "flags", "phase", "rss_bytes", *IO_FIELDS, *("own_" + f for f in IO_FIELDS)) if c not in table.columns]
        if missing:
            res.caveats.append(f"{sidecar}: sample file lacks columns {', '.join(missing)}")
            continue
        res.sampled += 1
        wio = reduce_io(table, res.timeline)
        if wio.io_rows:
            res.io_measured += 1
            for name in IO_FIELDS:
                res.io.totals[name] += wio.totals[name]
                res.io.own[name] += wio.own[name]
                res.io.no_phase[name] += wio.no_phase[name]
            res.io.counts.add(wio.counts)
            if not samples.get("phase_unavailable_reason"):
                res.phase_tracked = True
        else:
            why = samples.get("io_unavailable_reason") or "the I/O counters could not be read"
            res.io_reasons[str(why)] = res.io_reasons.get(str(why), 0) + 1
        wmem = reduce_memory(table, res.memory_bins if res.span else None, res.span)
        if wmem.rows:
            res.memory_by_role.setdefault(_role(doc), []).append((wmem, _label(doc)))
        del table
    return res


_cache: tuple[Any, RunResources] | None = None


def resources_of(run: Any) -> RunResources:
    """reduce_run(run), computed once per run object for the blocks that share it."""
    global _cache
    if _cache is None or _cache[0] is not run:
        _cache = (run, reduce_run(run))
    return _cache[1]


# ---------------------------------------------------------------------------------------------
# I/O (sampled) and MEMORY
# ---------------------------------------------------------------------------------------------


def _reason_lines(reasons: dict[str, int], total: int) -> list[str]:
    return [f"  not measured in {n} of {total} processes: {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]


def render_io(run: Any, options: Any = None) -> list[str]:
    """Sampled I/O: totals per layer with rates, a write sparkline with its peak, dropped
    intervals, the share under (no phase open) and the profiler's own I/O excluded."""
    if _no_samples(options):
        return []
    res = resources_of(run)
    if res.workers == 0:
        return []
    lines = ["I/O", RULE]
    if res.io_measured == 0:
        reasons = {**res.reasons, **res.io_reasons}
        return lines + (_reason_lines(reasons, res.workers) or ["  not measured: no sample file could be read"]) + [
            "  ! " + c for c in res.caveats
        ]
    t = res.io.totals
    disk_read = t["read_bytes"]
    cache_read = max(0, t["rchar"] - t["read_bytes"])
    write = t["write_bytes"] - t["cancelled_write_bytes"]
    grid = res.timeline
    def rate(layer: str, total: int) -> str:
        return fmt_rate(total, grid.active_seconds(layer)) if grid is not None and total > 0 else ""

    lines.append(f"{'Read (from disk)':<26}{fmt_bytes(disk_read):>16}{rate('disk_read', disk_read):>16}".rstrip())
    lines.append(f"{'Read (from page cache)':<26}{fmt_bytes(cache_read):>16}")
    lines.append(f"{'Write':<26}{fmt_bytes(write):>16}{rate('write', write):>16}".rstrip())
    if grid is not None:
        bins = grid.bins("write", SPARK_WIDTH)
        lines.append(f"  write {sparkline(bins)}  peak {fmt_rate(grid.peak_rate('write'), 1.0)}")
    total = disk_read + cache_read + write
    np_ = res.io.no_phase
    np_total = np_["read_bytes"] + max(0, np_["rchar"] - np_["read_bytes"]) + np_["write_bytes"] - np_["cancelled_write_bytes"]
    if not res.phase_tracked:
        lines.append("  (no phase open) share unknown: the samples carry no phase")
    elif total > 0:
        lines.append(f"  (no phase open) {100.0 * np_total / total:.1f}% of these bytes")
    c = res.io.counts
    considered = c.valid + c.dropped
    if c.dropped:
        why = []
        if c.failed:
            why.append(f"{c.failed:,} next to a failed read")
        if c.reaped:
            why.append(f"{c.reaped:,} where a child process was reaped")
        if c.unknown:
            why.append(f"{c.unknown:,} where reaping could not be checked")
        lines.append(f"  dropped intervals {c.dropped:,} of {considered:,} ({', '.join(why)}); their bytes are not counted")
    else:
        lines.append(f"  dropped intervals 0 of {considered:,}")
    own = res.io.own
    lines.append(
        f"  excluded: the profiler's own I/O, {fmt_bytes(own['write_bytes'])} written to disk, "
        f"{fmt_bytes(own['wchar'])} through write(), {fmt_bytes(own['rchar'])} read"
    )
    lines.extend(_reason_lines(res.io_reasons, res.workers))
    lines.extend(_reason_lines(res.reasons, res.workers))
    lines.extend("  ! " + caveat for caveat in res.caveats)
    return lines


def render_memory(run: Any, options: Any = None) -> list[str]:
    """RSS peak per role and over the run, and its trend: per-process growth and a sparkline of
    the summed RSS of all processes over the run."""
    if _no_samples(options):
        return []
    res = resources_of(run)
    if res.workers == 0:
        return []
    lines = ["MEMORY (RSS, sampled)", RULE]
    if not res.memory_by_role:
        return lines + (_reason_lines(res.reasons, res.workers) or ["  not measured: no RSS could be read"])
    lines.append(f"{'':<26}{'peak':>16}{'trend':>16}")
    top: tuple[WorkerMemory, str] | None = None
    for role, members in sorted(res.memory_by_role.items()):
        peak = max(m.peak for m, _ in members)
        slopes = [(m.slope_bytes_per_s, label) for m, label in members if m.slope_bytes_per_s is not None]
        trend = "n/a"
        if slopes:
            slope, _ = max(slopes, key=lambda s: abs(s[0]))
            trend = ("+" if slope >= 0 else "-") + fmt_bytes(abs(slope) * 3600) + "/h"
        lines.append(f"{role + f'  x{len(members)}':<26}{fmt_bytes(peak):>16}{trend:>16}")
        for m, label in members:
            if top is None or m.peak > top[0].peak:
                top = (m, label)
    if res.span is not None and any(res.memory_bins):
        lines.append(f"{'all processes':<26}{fmt_bytes(max(res.memory_bins)):>16}  {sparkline(res.memory_bins, level=True)}")
    if top is not None:
        at = ""
        if res.span is not None:
            at = f" at {fmt_duration(max(0, top[0].peak_t_unix - res.span[0]))}"
        lines.append(f"  largest: {top[1]}, {fmt_bytes(top[0].peak)}{at}")
    lines.append("  trend: the steepest per-process RSS slope in each role (least squares over its run)")
    return lines


def render(run: Any, options: Any = None) -> list[str]:
    """All three blocks, each followed by a blank line."""
    lines: list[str] = []
    for block in BLOCKS:
        part = block(run, options)
        if part:
            lines.extend(part)
            lines.append("")
    return lines


BLOCKS = (render_io_by_phase, render_io, render_memory)


def io_totals(table: SampleTable) -> dict[str, int]:
    """Net I/O of one sample file over its valid intervals, per /proc/self/io field."""
    return reduce_io(table).totals


__all__ = [
    "BLOCKS",
    "RunResources",
    "Timeline",
    "WorkerIo",
    "WorkerMemory",
    "fmt_bytes",
    "io_totals",
    "reduce_io",
    "reduce_memory",
    "reduce_run",
    "render",
    "render_io",
    "render_io_by_phase",
    "render_memory",
    "sparkline",
    "workers_of",
]
