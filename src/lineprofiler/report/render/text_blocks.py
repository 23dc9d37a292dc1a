"""The text of the report's blocks past the core (the LINES, I/O BY PHASE, I/O, MEMORY, GPU,
TIMELINE and STORY blocks), each printed from its model.

The sentences the HTML page prints too are worded in :mod:`..wording`. The TIMELINE fits in 100
columns: per role, the run in 60 columns, each the symbol of the phase most of the role's
processes were in, a legend, and the stalls. STORY says what set a traced run's length; every
output that shows spans says how many were kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import format as fmt
from ..compute.blocks import RenderOptions
from ..compute.blocks.gpu import gpu_block
from ..compute.blocks.resources import io_by_phase, memory, sampled_io
from ..compute.story.clocks import offset_text
from ..compute.story.model import Story
from ..model import (
    GpuSummary,
    IoByPhase,
    LineRow,
    LinesBlock,
    LinesRole,
    Memory,
    Reason,
    SampledIo,
    Stall,
    Timeline,
    TimelineRole,
)
from ..read.run import Run
from ..wording import SPARK_WIDTH as SPARK_WIDTH
from ..wording import (
    common_folder,
    gpu_device_label,
    gpu_notes,
    io_notes,
    largest_text,
    lines_block_notes,
    lines_role_notes,
    lines_role_title,
    memory_trend_note,
    spread_text,
    window_text,
)
from .text_sampled_lines import sampled_lines_lines

# -- LINES -----------------------------------------------------------------------------------


#: Widths past which a location, a function name or a source line is clipped.
LOCATION_WIDTH = 40
FUNCTION_WIDTH = 24
SOURCE_WIDTH = 60


def _head(where: int, function: int) -> str:
    return (
        f"{'#':>4} {'Time':>8} {'% window':>8} {'Hits':>11} {'Per hit':>8}  {'Per process':<17}  "
        f"{'Line':<{where}}  {'Function':<{function}}  Source"
    )


def _clip(text: str, width: int) -> str:
    text = fmt.printable(text)
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _location(row: LineRow, folder: str = "") -> str:
    where = f"{row.path[len(folder) :]}:{row.line}"
    if row.variant:
        where += f" [source {row.variant}]"
    return fmt.clip_left(fmt.printable(where), LOCATION_WIDTH)


def row_line(row: LineRow, folder: str = "", where: int = LOCATION_WIDTH, function: int = FUNCTION_WIDTH) -> str:
    source = "<source unavailable>" if row.source is None else _clip(row.source.strip(), SOURCE_WIDTH)
    return (
        f"{row.rank:>4} {fmt.duration(row.time_ns):>8} {fmt.percent(row.window_share):>8} {fmt.count(row.hits):>11} "
        f"{fmt.duration(row.per_hit_ns):>8}  {spread_text(row):<17}  {_location(row, folder):<{where}}  "
        f"{_clip(row.function, function):<{function}}  {source}"
    )


def role_title(role: LinesRole) -> str:
    noun = "process" if role.processes == 1 else "processes"
    head = f"{fmt.printable(role.role.upper())}  ({role.files} of {role.processes} {noun} left line stats"
    window = window_text(role)
    return head + (f"; {window})" if window else ")")


def role_lines(role: LinesRole) -> list[str]:
    lines = [lines_role_title(role)]
    folder = common_folder(role.rows)
    if role.project:
        within = f"   files in {fmt.printable(folder)}" if folder else ""
        lines.append(f"  project {fmt.printable(role.project)}{within}")
    if role.rows:
        shown = f"top {len(role.rows)} of {fmt.count(role.lines)} lines by time"
        lines.append(f"  {shown}, hits and time summed over the role's processes")
        where = max(len("Line"), *(len(_location(row, folder)) for row in role.rows))
        function = min(FUNCTION_WIDTH, max(len("Function"), *(len(fmt.printable(row.function)) for row in role.rows)))
        lines.append(_head(where, function))
        lines.extend(row_line(row, folder, where, function) for row in role.rows)
    elif role.files:
        lines.append("  no line of the project ran inside the windows")
    lines.extend(lines_role_notes(role))
    return lines


def lines_lines(block: LinesBlock | None) -> list[str]:
    """The LINES block; [] when absent."""
    if block is None:
        return []
    title = "LINES  (backend=\"lines\" windows; a line's time includes the calls it makes, a recursive function's once)"
    lines = [title, fmt.RULE]
    for index, role in enumerate(block.roles):
        if index:
            lines.append("")
        lines.extend(role_lines(role))
    if not block.roles and block.sampled is None:
        lines.append('no process of this attempt ran a lines window (Profiler(backend="lines", ...))')
    lines.extend(lines_block_notes(block))
    sampled = sampled_lines_lines(block.sampled)
    if sampled:
        lines.extend(["", *sampled])
    return lines


# -- I/O BY PHASE, I/O, MEMORY ---------------------------------------------------------------


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
    lines.append(f"  {memory_trend_note(memory)}")
    return lines


# -- GPU -------------------------------------------------------------------------------------


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


# -- TIMELINE --------------------------------------------------------------------------------


#: Stalls named one by one per role; the rest are counted.
STALL_ROWS = 3
_WIDTH = 100
_LABEL = 24


def _wrap(items: list[str], indent: str) -> list[str]:
    lines: list[str] = []
    line = indent
    for item in items:
        if len(line) + len(item) + 2 > _WIDTH and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + "  "
    if line.strip():
        lines.append(line.rstrip())
    return lines


def _stall_text(stall: Stall) -> str:
    phases = ", ".join("outside phases" if p == "" else fmt.printable(p) for p in stall.phases)
    return f"+{fmt.duration(stall.start_ns)} for {fmt.duration(stall.length_ns)} ({phases})"


def _role_lines(role: TimelineRole, timeline: Timeline) -> list[str]:
    label = f"{fmt.printable(role.role)} ({role.processes})"
    label = fmt.clip_left(label, _LABEL - 1).ljust(_LABEL)
    lines = [f"{label}|{role.columns}|"]
    legend = [
        f"{sym} {fmt.clip_left(fmt.printable(path), 28)} {fmt.percent(role.occupancy.get(path, 0.0), 0)}"
        for sym, path in role.legend.items()
    ]
    legend.append(f"{Timeline.OUTSIDE} outside phases {fmt.percent(role.occupancy.get('', 0.0), 0)}")
    lines += _wrap(legend, "  ")
    if role.unseen:
        missed = [f"{fmt.clip_left(fmt.printable(p), 28)} {fmt.percent(s, 0)}" for p, s in role.unseen.items()]
        lines += _wrap(
            ["in the exact totals, under a quarter of it drawn (share of the lifetime):", *missed],
            "  ",
        )
    if role.stalls:
        total = sum(s.length_ns for s in role.stalls)
        head = f"stalls: {len(role.stalls)}, {fmt.duration(total)} in all:"
        shown = [_stall_text(s) + ";" for s in role.stalls[:STALL_ROWS]]
        if len(role.stalls) > STALL_ROWS:
            shown.append(f"and {len(role.stalls) - STALL_ROWS} shorter")
        lines += _wrap([head, *shown], "  ")
    else:
        lines.append("  stalls: none")
    if role.skipped_ticks:
        lines.append(
            f"  the sampler missed {fmt.count(role.skipped_ticks)} of "
            f"{fmt.count(role.ticks + role.skipped_ticks)} ticks (left as gaps)"
        )
    return lines


def timeline_lines(timeline: Timeline | None) -> list[str]:
    if timeline is None or not timeline.roles:
        return []
    head = (
        f"TIMELINE  columns of {fmt.duration(timeline.column_ns)} from the run's start, "
        f"{timeline.hz:g} samples/s; {Timeline.OUTSIDE} outside all phases"
    )
    note = (
        f"  stall: every process of the job outside phases or in a phase waiting > {timeline.wait_threshold:.0%} "
        f"(its run-wide wait), >= {fmt.duration(timeline.min_stall_ns)}"
    )
    lines = [head, note]
    for role in timeline.roles:
        lines += _role_lines(role, timeline)
    for reason in timeline.reasons:
        lines.append(f"  no timeline for {reason.processes} process(es): {fmt.printable(reason.reason)}")
    return lines


# -- STORY -----------------------------------------------------------------------------------


#: Critical-path shares, findings and skew rows the text prints (``--json`` has them all).
PATH_ROWS = 8
FINDING_ROWS = 10
LIFECYCLE_ROWS = 8


def _who(story: Story, index: int) -> str:
    return story.processes[index].label


def story_lines(story: Story | None) -> list[str]:
    if story is None:
        return []
    lines = [
        "STORY (exact spans and links)",
        fmt.RULE,
        f"{len(story.processes)} traced process(es), {story.kept_line}; "
        + (
            f"traced length {fmt.duration(story.duration_ns)}"
            if story.spans_kept
            else "no phase entry was traced (links and lifecycles only)"
        ),
    ]
    for clock in story.hosts:
        if clock.source == "reference":
            continue
        # The true offset lies within the bounds; the estimate need not be their middle.
        bounds = f"within [{offset_text(clock.low_ns)}, {offset_text(clock.high_ns)}]"
        lines.append(
            f"Clock of {fmt.printable(clock.host)}: offset {offset_text(clock.offset_ns)} {bounds} "
            f"(from {clock.source}{f', {clock.links} link(s)' if clock.links else ''})"
        )
    killed = [p for p in story.processes if p.killed]
    for process in killed:
        lines.append(
            f"{process.label} died with {process.open_entries} entr{'y' if process.open_entries == 1 else 'ies'} "
            "open: drawn open to its last known moment"
        )
    path = story.path
    if path is not None:
        lines.append("")
        lines.append(
            f"Critical path {fmt.duration(path.duration_ns)} of {fmt.duration(story.duration_ns)}, "
            f"{len(path.segments)} segment(s), {path.jumps} link(s) followed"
        )
        for share in path.shares[:PATH_ROWS]:
            process = story.processes[share.process]
            phase = fmt.printable(share.phase) if share.phase else "(no phase)"
            lines.append(
                f"  {fmt.percent(share.fraction):>6}  {fmt.duration(share.duration_ns):>8}  "
                f"{fmt.printable(process.role)} pid {process.pid} on {fmt.printable(process.host)}  {phase}"
            )
        if len(path.shares) > PATH_ROWS:
            lines.append(f"  ... {len(path.shares) - PATH_ROWS} more (--json lists them)")
    if story.findings:
        lines.append("")
        lines.append("Findings (ranked by what they cost the run)")
        for n, finding in enumerate(story.findings[:FINDING_ROWS], start=1):
            cost = (
                "cost unknown" if finding.cost_fraction is None else f"{fmt.percent(finding.cost_fraction)} of the run"
            )
            lines.append(f"  {n}. [{cost}] {finding.text}")
        if len(story.findings) > FINDING_ROWS:
            lines.append(f"  ... {len(story.findings) - FINDING_ROWS} more (--json lists them)")
    if story.skew:
        lines.append("")
        lines.append("Step skew at collective phases")
        for row in story.skew:
            rank = "unknown" if row.straggler_rank is None else f"rank {row.straggler_rank}"
            lines.append(
                f"  {fmt.printable(row.phase)}: {row.ranks} ranks, {row.steps} steps, first-to-last "
                f"{fmt.duration(row.mean_spread_ns)} a step, last most often: {rank} ({row.straggler_steps} steps)"
            )
    lines.extend(_lifecycle_lines(story))
    return lines


def _lifecycle_lines(story: Story) -> list[str]:
    """REQUEST LIFECYCLES: per channel, its requests' time split between their checkpoints."""
    if not story.lifecycles:
        return []
    lines = ["", "Request lifecycles (trace_begin -> trace_mark -> trace_end, on the run's timeline)"]
    for channel in story.lifecycles[:LIFECYCLE_ROWS]:
        left = [
            f"{count} {what}"
            for count, what in ((channel.incomplete, "incomplete"), (channel.out_of_order, "out of order"))
            if count
        ]
        spread = ""
        if channel.p50_ns is not None and channel.p95_ns is not None and channel.max_ns is not None:
            spread = (
                f", median {fmt.duration(channel.p50_ns)}, p95 {fmt.duration(channel.p95_ns)}, "
                f"max {fmt.duration(channel.max_ns)}"
            )
        lines.append(
            f"  {fmt.printable(channel.channel)}: {fmt.count(channel.requests)} request(s){spread}"
            + (f" ({', '.join(left)} left out)" if left else "")
        )
        for segment in channel.segments:
            share = segment.total_ns / channel.total_ns if channel.total_ns > 0 else 0.0
            lines.append(
                f"    {fmt.printable(segment.name):<34} {fmt.percent(share):>6}  "
                f"mean {fmt.duration(segment.mean_ns):>8}  p95 {fmt.duration(segment.p95_ns):>8}  "
                f"({fmt.count(segment.count)})"
            )
        for key, ns, begun, ended in channel.slowest[:1]:
            where = _who(story, begun) if begun == ended else f"{_who(story, begun)} -> {_who(story, ended)}"
            lines.append(f"    slowest: key {fmt.printable(key)}, {fmt.duration(ns)} ({where})")
    if len(story.lifecycles) > LIFECYCLE_ROWS:
        lines.append(f"  ... {len(story.lifecycles) - LIFECYCLE_ROWS} more channel(s) (--json lists them)")
    return lines


# -- one block from a run --------------------------------------------------------------------------
# For the tests that print one block from a run. The report never calls these: report/render/text.py
# prints the model compute/build.build_report computed.


def render_io_by_phase(run: Run, options: RenderOptions) -> list[str]:
    return io_by_phase_lines(io_by_phase(run, options))


def render_io(run: Run, options: RenderOptions) -> list[str]:
    return io_lines(sampled_io(run, options))


def render_memory(run: Run, options: RenderOptions) -> list[str]:
    return memory_lines(memory(run, options))


def render_gpu(run: Run, options: RenderOptions) -> list[str]:
    """The GPU block as text; ``[]`` when it is absent."""
    return gpu_lines(gpu_block(run, options))
