"""The text of the GPU block, from the report's model."""

from __future__ import annotations

from . import format as fmt
from .model import GpuSummary
from .wording import gpu_device_label, gpu_notes

RULE = fmt.RULE


def _pct(value: float | None) -> str:
    """A percentage the GPU block holds as 0..100."""
    return fmt.percent(None if value is None else value / 100.0)


def gpu_lines(summary: GpuSummary | None) -> list[str]:
    if summary is None:
        return []
    lines = ["GPU", RULE]
    if not summary.nvml_available and summary.vram_allocated_peak is None:
        # Nothing measured at all: the block is absent, and says why in one line.
        return [*lines, f"absent: {fmt.printable(summary.nvml_reason or '')}"]
    if not summary.nvml_available:
        lines.append(f"utilisation not measured: {fmt.printable(summary.nvml_reason or '')}")
    elif not summary.devices:
        lines.append("utilisation not measured: NVML was available but no sample was recorded")
    else:
        hosts = len({d.host for d in summary.devices})
        lines.append(f"{'':<29}{'busy':>6}{'this run':>11}{'idle':>9}")
        for d in summary.devices:
            label = gpu_device_label(d.host, d.index, hosts)
            lines.append(f"{label:<29}{_pct(d.busy):>6}{_pct(d.this_run):>11}{_pct(d.idle):>9}")
    if summary.vram_allocated_peak is not None:
        for label, peak, total in (
            ("VRAM allocated (peak)", summary.vram_allocated_peak, summary.vram_allocated_sum),
            ("VRAM reserved (peak)", summary.vram_reserved_peak, summary.vram_reserved_sum),
        ):
            line = f"{label:<29}{fmt.size(peak):>13}"
            if summary.vram_processes > 1 and total is not None:
                line += f"   largest of {summary.vram_processes} processes; {fmt.size(total)} summed"
            lines.append(line)
    else:
        lines.append(f"VRAM not measured: {fmt.printable(summary.vram_reason or '')}")
    lines.extend(gpu_notes(summary))
    return lines
