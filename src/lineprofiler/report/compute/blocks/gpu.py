"""The GPU block of the report: per-device utilisation (busy, this run, idle) and VRAM peaks.

What it reads, per worker document of the run's newest attempt:

* NVML samples, as sample columns (written by the sampler, once per tick, per NVML device
  index ``i`` of the worker's host):

  ``gpu<i>_busy``  percent of the last NVML window in which any kernel of any process ran
                   (``nvmlDeviceGetUtilizationRates``); ``-1`` = not measured.
  ``gpu<i>_mine``  the worker's own SM share in percent (``nvmlDeviceGetProcessUtilization``
                   for its pid: the mean of the samples NVML attributed to it since the
                   previous tick); ``-1`` = NVML attributed no sample to the pid in that tick:
                   measured, and counted as zero; ``-2`` or below = the query failed: not
                   measured.

  with the sample times in unix nanoseconds. :func:`gpu_samples` reads them from the worker's
  sample file (through :mod:`lineprofiler.runfiles.samplefile`), and only when the document's
  column list names GPU columns, so workers without GPU rows cost no file read.
* ``document["gpu"]["nvml"]``: ``{"available", "unavailable_reason", "devices": [{"index",
  "name"}]}`` (see :class:`lineprofiler.accounting.gpu.GpuAttachment`).
* ``document["gpu"]["vram"]``: ``{"available", "unavailable_reason", "allocated_peak",
  "reserved_peak", "samples", ...}`` in bytes, per process.

How the columns become the three numbers, per device (a device is a (host, NVML index) pair:
index 0 on two nodes is two devices):

1. Time is cut into buckets of one sample interval (the median spacing of the workers'
   samples, 1 s by default), aligned on the unix epoch, so that workers ticking independently
   fall into the same buckets.
2. ``busy`` of a bucket is the mean of the busy readings taken in it (all workers on the host
   read the same device); the block prints the mean over the buckets that have one.
3. ``this run`` of a bucket is the sum over the run's workers of each worker's share in that
   bucket (its mean there, ``-1`` read as 0), capped at 100 %; the block prints the mean over
   the buckets in which at least one worker measured it. A worker busy one tick in ten adds
   10 %, not 100 %.
4. ``this run`` prints ``n/a`` when NVML never attributed a sample to any of the run's pids on
   that device (every reading was -1 or unmeasured): no work of the run ran there, as distinct
   from a measured ``0.0%``.
5. ``idle`` is ``100 - busy``.

VRAM: the largest per-process peak of allocated and reserved memory (torch's caching
allocator), with the number of processes and their sum when more than one reported.

The block's model is :func:`gpu_block`, ``gpu_block(run, options) -> GpuSummary | None`` over
a :class:`~...read.run.Run` (``report/model.py`` holds :class:`GpuSummary`); ``options.no_samples``
skips it, as every block built from samples. With the run's span, each device also carries its
busy and this-run percentages over time, per bucket, reduced to chart columns.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....runfiles.samplefile import SampleFileError, read_samples
from ...model import DeviceUse, GpuSummary
from ...read.run import Run, Worker
from .. import series as chart
from . import RenderOptions, SampleInfo, sample_infos

__all__ = [
    "DeviceUse",
    "GpuSummary",
    "WorkerGpuSamples",
    "gpu_block",
    "gpu_samples",
    "summarise",
]

_COLUMN = re.compile(r"^gpu(\d+)_(busy|mine)$")
NOT_MEASURED = -2  # mine values at or below this were not measured
NO_SAMPLE = -1  # mine: measured, NVML attributed nothing to the pid


@dataclass
class WorkerGpuSamples:
    """One worker's NVML columns: device index -> one value per sample time."""

    host: str
    pid: int
    times_ns: Sequence[int]
    busy: Mapping[int, Sequence[float]] = field(default_factory=dict)
    mine: Mapping[int, Sequence[float]] = field(default_factory=dict)


def gpu_samples(info: SampleInfo) -> WorkerGpuSamples | None:
    """The worker's NVML columns from its sample file, or None when it has none.

    Raises :class:`~lineprofiler.runfiles.samplefile.SampleFileError` when the file named by a
    document that lists GPU columns cannot be read.
    """
    if info.sidecar is None or not any(_COLUMN.match(c) for c in info.columns):
        return None
    table = read_samples(info.sidecar)
    to_unix = table.unix_ref_ns - table.monotonic_ref_ns
    times = [t + to_unix for t in table.column("t_ns")]
    busy: dict[int, Sequence[float]] = {}
    mine: dict[int, Sequence[float]] = {}
    for name in table.columns:
        match = _COLUMN.match(name)
        if match:
            (busy if match.group(2) == "busy" else mine)[int(match.group(1))] = table.column(name)
    return WorkerGpuSamples(host=info.worker.host, pid=info.worker.pid, times_ns=times, busy=busy, mine=mine)


def _gpu(worker: Worker, key: str) -> Mapping[str, Any] | None:
    """``document["gpu"][key]`` when it is an object (the reader checked ``gpu`` is one or null)."""
    gpu = worker.document.get("gpu")
    if not isinstance(gpu, dict):
        return None
    part = gpu.get(key)
    return part if isinstance(part, dict) else None


def _interval_ns(samples: list[WorkerGpuSamples], override_s: float | None) -> int:
    if override_s is not None and override_s > 0:
        return int(override_s * 1e9)
    gaps: list[int] = []
    for worker in samples:
        times = list(worker.times_ns)
        gaps.extend(b - a for a, b in zip(times, times[1:], strict=False) if b > a)
    if not gaps:
        return 1_000_000_000
    return max(1, int(statistics.median(gaps)))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def summarise(
    workers: Sequence[Worker],
    samples: Sequence[WorkerGpuSamples],
    interval_s: float | None = None,
    span: tuple[int, int] | None = None,
) -> GpuSummary:
    """The numbers of the block, computed as the module docstring says; ``interval_s`` sets the
    bucket width (default: the median spacing of the samples). Given the run's ``span`` (unix
    ns), each device also gets its busy and this-run percentages per bucket over time, in chart
    columns."""
    samples = list(samples)
    width = _interval_ns(samples, interval_s)

    # NVML availability and device names, per host.
    names: dict[tuple[str, int], str | None] = {}
    reasons: dict[str, int] = {}
    available_workers = 0
    for worker in workers:
        host = worker.host
        info = _gpu(worker, "nvml")
        if info is None:
            continue
        if info.get("available"):
            available_workers += 1
            for device in info.get("devices") or []:
                if isinstance(device, Mapping) and isinstance(device.get("index"), int):
                    names.setdefault((host, device["index"]), device.get("name"))
        else:
            why = str(info.get("unavailable_reason") or "NVML unavailable")
            reasons[why] = reasons.get(why, 0) + 1

    # busy: per (host, device, bucket) the readings; mine: per (host, device, bucket, pid).
    busy: dict[tuple[str, int], dict[int, list[float]]] = {}
    mine: dict[tuple[str, int], dict[int, dict[int, list[float]]]] = {}
    attributed: dict[tuple[str, int], set[int]] = {}
    measured_any = False
    for series in samples:
        times = list(series.times_ns)
        for index, values in series.busy.items():
            key = (series.host, index)
            for t, value in zip(times, values, strict=False):
                v = _number(value)
                if v is None or v < 0:
                    continue
                measured_any = True
                busy.setdefault(key, {}).setdefault(int(t) // width, []).append(min(v, 100.0))
        for index, values in series.mine.items():
            key = (series.host, index)
            for t, value in zip(times, values, strict=False):
                v = _number(value)
                if v is None or v <= NOT_MEASURED:
                    continue
                if v >= 0:
                    attributed.setdefault(key, set()).add(series.pid)
                share = max(v, 0.0)  # -1: measured, nothing attributed: zero
                by_pid = mine.setdefault(key, {}).setdefault(int(t) // width, {})
                by_pid.setdefault(series.pid, []).append(min(share, 100.0))

    devices = []
    for key in sorted(set(busy) | set(mine) | set(names)):
        host, index = key
        by_bucket = busy.get(key, {})
        busy_mean = statistics.fmean(statistics.fmean(v) for v in by_bucket.values()) if by_bucket else None
        pids = attributed.get(key, set())
        this_run = None
        mine_buckets = {
            bucket: min(100.0, sum(statistics.fmean(v) for v in by_pid.values()))
            for bucket, by_pid in mine.get(key, {}).items()
        }
        if pids:
            this_run = statistics.fmean(mine_buckets.values())
        device = DeviceUse(host, index, names.get(key), busy_mean, this_run, len(by_bucket), len(pids))
        if span is not None:
            ordered = sorted(by_bucket)
            device.busy_series = chart.columns(
                [b * width for b in ordered], [statistics.fmean(by_bucket[b]) for b in ordered], *span
            )
            if pids:
                ordered = sorted(mine_buckets)
                device.this_run_series = chart.columns(
                    [b * width for b in ordered], [mine_buckets[b] for b in ordered], *span
                )
        devices.append(device)

    reason: str | None = max(reasons, key=lambda r: reasons[r]) if reasons else None
    nvml_available = available_workers > 0 or measured_any
    if not nvml_available and reason is None:
        reason = "no worker recorded NVML information" if not samples else "NVML never produced a reading"

    alloc, reserved = [], []
    vram_reasons: dict[str, int] = {}
    for worker in workers:
        vram = _gpu(worker, "vram")
        if vram is None:
            continue
        a, r = vram.get("allocated_peak"), vram.get("reserved_peak")
        if vram.get("available") and isinstance(a, int) and isinstance(r, int):
            alloc.append(a)
            reserved.append(r)
        elif vram.get("unavailable_reason"):
            text = str(vram["unavailable_reason"])
            vram_reasons[text] = vram_reasons.get(text, 0) + 1
    vram_reason = None
    if not alloc:
        vram_reason = max(vram_reasons, key=lambda r: vram_reasons[r]) if vram_reasons else "not recorded"

    return GpuSummary(
        devices=devices,
        nvml_available=nvml_available,
        nvml_reason=reason,
        nvml_missing_workers=sum(reasons.values()) if nvml_available else 0,
        workers=len(workers),
        vram_allocated_peak=max(alloc) if alloc else None,
        vram_reserved_peak=max(reserved) if reserved else None,
        vram_allocated_sum=sum(alloc) if alloc else None,
        vram_reserved_sum=sum(reserved) if reserved else None,
        vram_processes=len(alloc),
        vram_reason=vram_reason,
    )


def gpu_block(run: Run, options: RenderOptions) -> GpuSummary | None:
    """The GPU block's model; None when the run has no GPU information at all or samples are off."""
    if options.no_samples:
        return None
    samples = []
    for info in sample_infos(run, options):
        try:
            found = gpu_samples(info)
        except SampleFileError:
            # One worker's unreadable samples cost that worker, not the block; the I/O block
            # already names an unreadable sample file.
            found = None
        if found is not None:
            samples.append(found)
    has_gpu_info = samples or any(isinstance(w.document.get("gpu"), dict) for w in run.workers)
    if not has_gpu_info:
        return None
    span = (run.start_ns, run.end_ns) if run.end_ns > run.start_ns else None
    return summarise(run.workers, samples, span=span)
