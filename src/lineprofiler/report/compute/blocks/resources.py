"""The report's resource blocks: I/O BY PHASE (measured exactly), I/O (sampled) and MEMORY.

Each block is ``compute(run, options) -> model`` over a :class:`~..run.Run` (None: the block
is absent): :func:`io_by_phase`, :func:`sampled_io`, :func:`memory`; ``report/render/text_blocks.py``,
``report/render/json.py`` and ``report/render/html/`` render the models. ``options.no_samples`` skips the
sampled blocks without opening a sample file.

Sample files are reduced one worker at a time (:mod:`.sampled`, over the usable cores) and the
summaries folded here in worker order. This module reads files only; it imports no C module.

MEMORY's "all processes" sums PSS (``pss_bytes``, from smaps_rollup): RSS counts a page shared
by a forked child once in each process that maps it, PSS divides it among them, so PSS adds up
and RSS does not. A process whose PSS was not measured (an older sample file, the psutil
fallback, a kernel without smaps_rollup) adds its RSS instead (:func:`pss_fallback_note`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....runfiles.samplefile import IO_FIELDS
from ... import format as fmt
from ...model import IoByPhase, IoPhase, IoTimeline, Memory, MemoryRole, ProcessMemory, Reason, SampledIo
from ...read.run import Run
from ...wording import SPARK_WIDTH
from .. import series
from . import RenderOptions, sample_infos, sampled
from .sampled import (
    MEMORY_BINS,
    MIN_TREND_NS,
    MIN_TREND_ROWS,
    WARMUP_SHARE,
    GridSpec,
    Timeline,
    WorkerIo,
    WorkerMemory,
    add_into,
    reduce_io,
    reduce_memory,
    rss_trend,
)


def _span(run: Run) -> tuple[int, int] | None:
    """The run's (start, end) in unix ns, or None when it has no length."""
    start, end = run.start_ns, run.end_ns
    return (start, end) if end > start else None


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
    #: Summed over the processes: PSS where it was measured, else RSS.
    memory_bins: list[float] = field(default_factory=list)
    pss_processes: int = 0  # processes whose PSS went into memory_bins
    rss_fallback_processes: int = 0  # processes with memory bins whose RSS went in instead
    span: tuple[int, int] | None = None


def _shown(path: Path, run: Run) -> str:
    """A sample file's path as CAVEATS names it: relative to the run directory."""
    try:
        return str(path.relative_to(run.run_dir))
    except ValueError:
        return str(path)


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
    # Each file is read once, in the pool's processes when the files are many (sampled.py).
    summaries = sampled.summarise_sample_files(
        [info.sidecar for info in infos if info.sidecar is not None], spec, res.span
    )
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
            res.caveats.append(f"{name}: {summary.truncated_what} ignored ({fmt.count(summary.truncated_bytes)} bytes)")
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
                add_into(res.timeline.layers[layer], values)
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
        if summary.pss_bins is not None:
            add_into(res.memory_bins, summary.pss_bins)
            res.pss_processes += 1
        elif summary.memory_bins is not None and any(summary.memory_bins):
            add_into(res.memory_bins, summary.memory_bins)
            res.rss_fallback_processes += 1
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


def pss_fallback_note(res: RunResources) -> str | None:
    """The note for processes whose RSS stood in for their PSS in "all processes" (None: none
    did), for the renderers to print under MEMORY."""
    if not res.rss_fallback_processes:
        return None
    n = res.rss_fallback_processes
    of = f"{n} of {n + res.pss_processes} processes" if res.pss_processes else f"all {n} processes"
    return (
        f"MEMORY: PSS not measured for {of} (no pss_bytes column: an older sample file, the psutil "
        "sampler, or a kernel without /proc/self/smaps_rollup); their RSS is summed instead, which "
        "counts pages shared with other processes more than once"
    )


def memory(run: Run, options: RenderOptions) -> Memory | None:
    """RSS peak per role and over the run, its trend (the steepest per-process slope in each
    role), the summed PSS of all processes over the run (RSS for a process whose PSS was not
    measured), and each process's RSS over time."""
    if options.no_samples:
        return None
    res = resources_of(run, options)
    if res.workers == 0:
        return None
    out = Memory(
        processes=res.workers,
        reasons=_reasons(res.reasons),
        roles=[],
        total_bins=None,
        largest=None,
        members=[],
        trend_warmup_share=WARMUP_SHARE,
        trend_min_ns=MIN_TREND_NS,
    )
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


__all__ = [
    "MEMORY_BINS",
    "MIN_TREND_NS",
    "MIN_TREND_ROWS",
    "WARMUP_SHARE",
    "RunResources",
    "Timeline",
    "WorkerIo",
    "WorkerMemory",
    "io_by_phase",
    "memory",
    "reduce_io",
    "reduce_memory",
    "reduce_run",
    "resources_of",
    "rss_trend",
    "sampled_io",
]
