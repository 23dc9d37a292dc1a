"""The text of the resource blocks: I/O BY PHASE, I/O and MEMORY, from the report's model."""

from __future__ import annotations

from collections.abc import Sequence

from . import format as fmt
from .model import IoByPhase, Memory, Reason, SampledIo
from .wording import MEMORY_TREND_NOTE, io_notes, largest_text

RULE = fmt.RULE
SPARK = " ▁▂▃▄▅▆▇█"


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


def io_by_phase_lines(io: IoByPhase | None) -> list[str]:
    if io is None or not io.phases:
        return []
    lines = ["I/O BY PHASE (measured exactly)", RULE]
    for row in io.phases:
        name = fmt.printable(f"{row.role}: {row.path}" if io.several_roles else row.path)
        rate = fmt.byte_rate(row.bytes_per_s)
        lines.append(f"  {name:<25} r {fmt.size(row.read_bytes):>10}   w {fmt.size(row.write_bytes):>10} {rate:>13}")
        if row.cache_read_bytes > 0:
            lines.append(" " * 28 + f"+ {fmt.size(row.cache_read_bytes)} read from page cache")
        if row.failed:
            lines.append(" " * 28 + f"! {fmt.count(row.failed)} entries not measured (counter read failed)")
    return lines


def _reason_lines(reasons: list[Reason], total: int) -> list[str]:
    return [f"  not measured in {r.processes} of {total} processes: {fmt.printable(r.reason)}" for r in reasons]


def io_lines(io: SampledIo | None) -> list[str]:
    if io is None:
        return []
    # The sample files that could not be used (io.problems) are CAVEATS lines, not this block's.
    lines = ["I/O", RULE]
    if io.measured_processes == 0:
        unmeasured = _reason_lines(io.reasons, io.processes) or ["  not measured: no sample file could be read"]
        return lines + unmeasured

    def rate(total: int, per_s: float | None) -> str:
        return fmt.byte_rate(per_s) if io.rates_known and total > 0 else ""

    disk, cache, write = io.disk_read_bytes, io.cache_read_bytes, io.write_bytes
    lines.append(f"{'Read (from disk)':<26}{fmt.size(disk):>16}{rate(disk, io.disk_read_per_s):>16}".rstrip())
    lines.append(f"{'Read (from page cache)':<26}{fmt.size(cache):>16}")
    lines.append(f"{'Write':<26}{fmt.size(write):>16}{rate(write, io.write_per_s):>16}".rstrip())
    timeline = io.timeline
    if timeline is not None:
        peak = f"  write {sparkline(timeline.write_bins)}  peak {fmt.byte_rate(timeline.peak_write_per_s)}"
        if timeline.slot_ns > timeline.interval_ns:
            # A long run's grid is coarser than its samples: say over what the peak is a mean.
            peak += f" over {fmt.duration(timeline.slot_ns)}"
        lines.append(peak)
    lines.extend(f"  {sentence}" for sentence in io_notes(io))
    lines.extend(_reason_lines(io.reasons, io.processes))
    return lines


def memory_lines(memory: Memory | None) -> list[str]:
    if memory is None:
        return []
    lines = ["MEMORY (RSS, sampled)", RULE]
    if not memory.roles:
        return lines + (_reason_lines(memory.reasons, memory.processes) or ["  not measured: no RSS could be read"])
    lines.append(f"{'':<26}{'peak':>16}{'trend':>16}")
    for role in memory.roles:
        trend = fmt.byte_change_per_hour(role.trend_bytes_per_s)
        label = fmt.printable(role.role) + f"  x{role.processes}"
        lines.append(f"{label:<26}{fmt.size(role.peak_bytes):>16}{trend:>16}")
    if memory.total_bins:
        spark = sparkline(memory.total_bins, level=True)
        # PSS: a page that fork children share with their parent is counted once, not per process
        lines.append(f"{'all processes (PSS)':<26}{fmt.size(max(memory.total_bins)):>16}  {spark}")
    largest = largest_text(memory)
    if largest is not None:
        lines.append(f"  {largest}")
    lines.append(f"  {MEMORY_TREND_NOTE}")
    return lines
