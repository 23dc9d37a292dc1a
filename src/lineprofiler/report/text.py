"""The text report: the report's model (``report/model.py``) printed block by block.

:func:`render` computes the model (``report/build.py``) and prints it; :func:`render_report`
prints a model already computed. Each ``*_lines(model)`` function prints one block; a block
whose model is absent prints nothing. Blocks are separated by one blank line.

The order: header, one block per role, DOMINANT PHASES (with counters under their phase),
COUNTERS not shown there, ITERATIONS, LINES (``--lines``, printed by :mod:`.text_lines`), I/O BY
PHASE, I/O, MEMORY, GPU, then CAVEATS. A block
that fails to compute or to print costs that block only: it is named under CAVEATS and the rest
is printed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from . import format as fmt
from .attempts import CONCURRENT, NEWEST, RESTARTED
from .blocks import RenderOptions
from .blocks.resources import SPARK_WIDTH, sparkline
from .merge import Run, utc_time
from .model import (
    Attempt,
    Counter,
    Counters,
    Dominant,
    GpuSummary,
    Header,
    IoByPhase,
    IterationRole,
    Iterations,
    Memory,
    Reason,
    Report,
    Role,
    SampledIo,
)
from .text_lines import lines_lines
from .text_timeline import timeline_lines

#: How many rows a role block prints before summarising the rest.
ROLE_ROWS = 8
#: How many counters COUNTERS prints, and DOMINANT PHASES under one phase, before one line counts
#: the rest: a run may count thousands of distinct names, and --json lists every one.
COUNTER_ROWS = 20
NAME_WIDTH = 30
RULE = fmt.RULE


def _section(title: str) -> list[str]:
    return [title, fmt.RULE]


def _clip(name: str, width: int = NAME_WIDTH - 1) -> str:
    return fmt.clip_left(fmt.printable(name), width)


# -- header ------------------------------------------------------------------------------------


def header_lines(header: Header | None) -> list[str]:
    if header is None:
        return []
    roles = roles_text(header)
    lines = [f"Runtime {fmt.duration(header.runtime_ns)}   Processes {header.processes}   Roles {roles}"]
    hosts = [fmt.printable(h) for h in header.hosts]
    shown = ", ".join(hosts) if len(hosts) <= 8 else ", ".join(hosts[:6]) + f", ... {hosts[-1]}"
    noun = "node" if len(hosts) == 1 else "nodes"
    lines.append(f"Hosts {shown} ({len(hosts)} {noun})   Run {header.run}")
    extra = []
    if header.ranks:
        extra.append(f"Ranks {fmt.int_ranges(header.ranks)}")
    if header.job_ids:
        launchers = sorted({fmt.printable(name) for name in header.launchers})
        jobs = ", ".join(fmt.printable(j) for j in header.job_ids[:4])
        if len(header.job_ids) > 4:
            jobs += f" and {len(header.job_ids) - 4} more"
        extra.append(f"Job {jobs}" + (f" ({', '.join(launchers)})" if launchers else ""))
    extra.append(f"Started {utc_time(header.start_ns)}")
    lines.append("   ".join(extra))
    lines.extend(attempt_lines(header))
    return lines


#: How many superseded attempts the header names before it sums up the rest.
ATTEMPT_ROWS = 10


def attempt_facts(attempt: Attempt) -> str:
    """``17 worker file(s), actor x16, learner x1, started ..., ran 2h 05m``."""
    roles_text = ", ".join(f"{fmt.printable(k)} x{v}" for k, v in sorted(attempt.roles.items()))
    text = (
        f"{attempt.files} worker file(s), {roles_text}, started {utc_time(attempt.start_ns)}, "
        f"ran {fmt.duration(attempt.span_ns)}"
    )
    if attempt.merged:
        text += f" ({len(attempt.merged) + 1} run ids merged by time)"
    return text


def attempt_lines(header: Header) -> list[str]:
    """The header's lines about attempts: what was merged into this one by time, the jobs that
    overlap it, and every attempt not shown (``--attempt ID`` shows one). The HTML report
    prints the same lines."""
    lines = []
    newest = header.newest
    if header.status != NEWEST and newest is not None:
        lines.append(f"Showing the {header.status} attempt {header.run} (--attempt); the newest is {newest.name}")
    if header.merged:
        processes = sum(a.files for a in header.merged)
        names = ", ".join(a.name for a in header.merged[:2])
        if len(header.merged) > 2:
            names += f" and {len(header.merged) - 2} more"
        lines.append(
            f"Merged by time: {processes} process(es) under {len(header.merged)} other generated run id(s) ({names}) "
            f"ran during this run; set LINEPROFILER_RUN_ID for the whole job to make one run explicit"
        )
    if newest is not None:
        relation = "overlapping this one in time" if header.status == CONCURRENT else "shown by default"
        lines.append(f"Newest attempt {newest.name} ({relation}; not merged): {attempt_facts(newest)}")
    for attempt in header.concurrent:
        lines.append(
            f"Concurrent run {attempt.name} (another job overlapping this one in time; not merged): "
            f"{attempt_facts(attempt)}"
        )
    for attempt in header.superseded[:ATTEMPT_ROWS]:
        restarted = "; the job was restarted since" if attempt.status == RESTARTED else ""
        lines.append(f"Superseded attempt {attempt.name} (not merged): {attempt_facts(attempt)}{restarted}")
    rest = header.superseded[ATTEMPT_ROWS:]
    if rest:
        lines.append(
            f"... and {len(rest)} older attempt(s), {sum(a.files for a in rest)} worker file(s), the oldest "
            f"{rest[-1].name} started {utc_time(rest[-1].start_ns)}"
        )
    if newest is not None or header.concurrent or header.superseded:
        lines.append("(lineprofiler report DIR --attempt ID shows another attempt)")
    return lines


# -- roles -------------------------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b``.

    Halving, comparing only the part not yet known equal: the comparisons are C string
    compares that add up to about twice the common length, with a few Python steps.
    """
    n = min(len(a), len(b))
    if n == 0 or a[0] != b[0]:
        return 0
    if a[:n] == b[:n]:
        return n
    low, high = 1, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


def short_names(paths: Sequence[str]) -> dict[str, str]:
    """Each path's shortest suffix of components that no other path in ``paths`` ends with
    (the whole path when another path ends with all of it).

    Linear in the text of the paths, whatever their number and depth: with ``P = "/" + path``,
    another path ends with the last ``n`` components of this one exactly when the reversed
    ``P``s share a prefix reaching past the ``n``-th slash from the end. Sorted by reversed
    ``P``, the path sharing the longest such prefix with any path is one of its two
    neighbours, so each path is compared with those two only.
    """
    keys = sorted({("/" + p)[::-1] for p in paths})
    names: dict[str, str] = {}
    for i, key in enumerate(keys):
        shared = max(
            _common_prefix(key, keys[i - 1]) if i > 0 else 0,
            _common_prefix(key, keys[i + 1]) if i + 1 < len(keys) else 0,
        )
        full = key[::-1]
        if shared >= len(full):
            names[full[1:]] = full[1:]  # another path ends with all of this one
        else:
            # The last slash before the shared ending starts the shortest suffix that is not shared.
            names[full[1:]] = full[full.rfind("/", 0, len(full) - shared) + 1 :]
    return names


def unprofiled_text(n: int) -> str:
    """``4 forked, not profiled``: fork children that inherited the profiler and recorded nothing."""
    return f"{n} forked, not profiled"


def roles_text(header: Header) -> str:
    """``trainer x1 (+ 4 forked, not profiled), dataloader x4``."""
    parts = []
    for name, n in header.roles.items():
        unprofiled = header.unprofiled.get(name, 0)
        parts.append(f"{fmt.printable(name)} x{n}" + (f" (+ {unprofiled_text(unprofiled)})" if unprofiled else ""))
    return ", ".join(parts)


def role_title(role: Role) -> str:
    """``ACTOR  (16 processes, imbalance 1.22)``."""
    n = role.processes
    parts = [f"{n} process{'es' if n != 1 else ''}"]
    if role.without_data:
        parts.append(f"{role.without_data} without data")
    if role.unprofiled:
        parts.append(unprofiled_text(role.unprofiled))
    parts.append(f"imbalance {fmt.ratio(role.imbalance)}")
    return f"{fmt.printable(role.name).upper()}  ({', '.join(parts)})"


def straggler_rule(role: Role) -> str:
    """``straggler: > 1.10x the role's mean``."""
    return f"straggler: > {role.straggler_from:.2f}x the role's mean"


def busiest_text(role: Role) -> str | None:
    """The straggler sentence, when the role is imbalanced past its threshold."""
    straggler = role.straggler
    if straggler is None:
        return None
    return (
        f"busiest: {straggler.label}, {fmt.duration(straggler.busy_ns)} in phases vs a mean of "
        f"{fmt.duration(role.mean_busy_ns)} ({straggler_rule(role)})"
    )


def time_in_phases_text(role: Role) -> str | None:
    if role.busy_fraction is None:
        if role.busy_ns > 0 and role.lifetime_ns > 0:
            return "time in phases: not measured (the lifetimes of its processes are not known; see CAVEATS)"
        return None
    return f"time in phases: {fmt.percent(role.busy_fraction)} of the processes' lifetime"


def role_lines(role: Role) -> list[str]:
    lines = _section(role_title(role))
    if not role.phases:
        lines.append("(no time recorded in phases)")
        return lines
    for phase in role.phases[:ROLE_ROWS]:
        row = f"{_clip(phase.name):<{NAME_WIDTH}}{fmt.percent(phase.share):>6}{fmt.duration(phase.self_ns):>13}"
        if phase.open_entries:
            row += f"   includes {fmt.count(phase.open_entries)} open entr{'y' if phase.open_entries == 1 else 'ies'}"
        lines.append(row)
    more, rest_ns, rest_share = role.rest(ROLE_ROWS)
    if more:
        label = f"({fmt.count(more)} more phases)"
        lines.append(f"{label:<{NAME_WIDTH}}{fmt.percent(rest_share):>6}{fmt.duration(rest_ns):>13}")
    lines.extend(f"  {sentence}" for sentence in (busiest_text(role), time_in_phases_text(role)) if sentence)
    return lines


def roles_lines(roles: list[Role]) -> list[str]:
    lines: list[str] = []
    for role in roles:
        if lines:
            lines.append("")
        lines.extend(role_lines(role))
    return lines


# -- dominant phases and counters --------------------------------------------------------------


def counter_line(counter: Counter) -> str:
    """``+ name  total  rate  time-each``; a counter with no phase has no time-each."""
    # Each column keeps one space before it, so a value wider than its column stays readable
    # instead of running into the one before.
    tail = f" {fmt.rate(counter.per_s):>13}"
    if counter.per == "phase":
        tail += f" {fmt.per_each(counter.each_ns):>12}"
    return f"    + {_clip(counter.name, 23):<24}{fmt.count(counter.total):>8}{tail}"


def dominant_lines(dominant: Dominant | None) -> list[str]:
    if dominant is None or not dominant.phases:
        return []
    several = dominant.several_roles
    head = f"{'DOMINANT PHASES':<{NAME_WIDTH}}{'self':>10}{'wait':>8}{'p50':>10}{'p99':>10}"
    lines = [head + ("  role" if several else "")]
    for phase in dominant.phases:
        line = (
            f"{_clip(phase.path):<{NAME_WIDTH}}{fmt.duration(phase.self_ns):>10}"
            f"{fmt.percent(phase.wait, 0):>8}{fmt.duration(phase.p50_ns):>10}{fmt.duration(phase.p99_ns):>10}"
        )
        if several:
            line += f"  {fmt.printable(phase.role)}"
        lines.append(line)
        lines.extend(counter_line(c) for c in phase.counters[:COUNTER_ROWS])
        if len(phase.counters) > COUNTER_ROWS:
            lines.append(f"    {more_counters(len(phase.counters) - COUNTER_ROWS)}")
    return lines


def more_counters(count: int) -> str:
    return f"... {fmt.count(count)} more counter{'s' if count != 1 else ''} (--json lists every one)"


def counters_lines(counters: Counters | None) -> list[str]:
    if counters is None or not counters.groups:
        return []
    lines = ["COUNTERS  (under phases not listed above)"]
    shown = 0
    for group in counters.groups:
        if shown == COUNTER_ROWS:
            break
        label = _clip(group.phase) if group.phase else "(no phase open)"
        tag = f"  {fmt.printable(group.role)}" if counters.several_roles else ""
        lines.append(f"  {label}{tag}")
        rows = group.counters[: COUNTER_ROWS - shown]
        lines.extend(counter_line(c) for c in rows)
        shown += len(rows)
    total = sum(len(group.counters) for group in counters.groups)
    if total > shown:
        lines.append(f"  {more_counters(total - shown)}")
    return lines


# -- iterations --------------------------------------------------------------------------------


#: How a user picks another loop than the one ITERATIONS found.
CHOOSE_LOOP = "Profiler(window_phase=NAME) picks another"


def _iteration_stats(stats: IterationRole) -> str:
    return (
        f"  mean{fmt.duration(stats.mean_ns):>11}   p50{fmt.duration(stats.p50_ns):>11}"
        f"   p95{fmt.duration(stats.p95_ns):>11}   p99{fmt.duration(stats.p99_ns):>11}"
    )


def iterations_lines(iterations: Iterations | None) -> list[str]:
    if iterations is None or not iterations.roles:
        return []
    about = f"phase {_clip(iterations.phase)} ({iterations.why})"
    if len(iterations.roles) == 1:
        stats = iterations.roles[0]
        return [f"ITERATIONS  ({fmt.count(stats.entries)} entries)  {about}", _iteration_stats(stats)]
    one_phase = iterations.one_phase
    lines = [f"ITERATIONS  {about}" if one_phase else f"ITERATIONS  per role, its own loop ({CHOOSE_LOOP})"]
    for stats in iterations.roles:
        title = f"  {fmt.printable(stats.role).upper()}  ({fmt.count(stats.entries)} entries)"
        if not one_phase:
            title += f"  phase {_clip(stats.phase)} ({stats.why})"
        lines.append(title)
        lines.append(_iteration_stats(stats))
    return lines


# -- I/O and memory ----------------------------------------------------------------------------


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


def io_notes(io: SampledIo) -> list[str]:
    """The sampled I/O block's sentences: the share under no phase, dropped intervals, the
    profiler's own I/O excluded."""
    lines = []
    if not io.phase_tracked:
        lines.append("(no phase open) share unknown: the samples carry no phase")
    elif io.no_phase_share is not None:
        lines.append(f"(no phase open) {fmt.percent(io.no_phase_share)} of these bytes")
    considered = fmt.count(io.valid_intervals + io.dropped_intervals)
    if io.dropped_intervals:
        why = []
        if io.dropped_failed:
            why.append(f"{fmt.count(io.dropped_failed)} next to a failed read")
        if io.dropped_reaped:
            why.append(f"{fmt.count(io.dropped_reaped)} where a child process was reaped")
        if io.dropped_unknown:
            why.append(f"{fmt.count(io.dropped_unknown)} where reaping could not be checked")
        lines.append(
            f"dropped intervals {fmt.count(io.dropped_intervals)} of {considered} ({', '.join(why)}); "
            "their bytes are not counted"
        )
    else:
        lines.append(f"dropped intervals 0 of {considered}")
    lines.append(
        f"excluded: the profiler's own I/O, {fmt.size(io.own_write_bytes)} written to disk, "
        f"{fmt.size(io.own_write_chars)} through write(), {fmt.size(io.own_read_chars)} read"
    )
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


MEMORY_TREND_NOTE = (
    "trend: the steepest per-process RSS slope in each role (least squares over its rows, 10 s or more); "
    "all processes: summed PSS (RSS where PSS was not measured)"
)


def largest_text(memory: Memory) -> str | None:
    top = memory.largest
    if top is None:
        return None
    at = f" at {fmt.moment(top.peak_at_ns)}" if top.peak_at_ns is not None else ""
    return f"largest: {top.label}, {fmt.size(top.peak_bytes)}{at}"


# -- GPU ---------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    """A percentage the GPU block holds as 0..100."""
    return fmt.percent(None if value is None else value / 100.0)


def gpu_device_label(host: str, index: int, hosts: int) -> str:
    label = f"GPU {index}"
    if hosts > 1:
        label = f"{fmt.printable(host)[: 28 - len(label) - 1]} {label}"
    return label


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


def gpu_notes(summary: GpuSummary) -> list[str]:
    """The sentences under the GPU table (n/a explained, NVML missing in some processes)."""
    notes = []
    if any(d.this_run is None for d in summary.devices) and summary.nvml_available:
        notes.append("n/a: NVML attributed no sample to this run's pids on that device.")
        if summary.vram_allocated_peak and all(d.this_run is None for d in summary.devices):
            notes.append(
                "The run allocated VRAM but no device attributes a sample to its pids: in a container, "
                "NVML may report host pids."
            )
    if summary.nvml_missing_workers:
        notes.append(
            f"NVML unavailable in {summary.nvml_missing_workers} of {summary.workers} processes: "
            f"{fmt.printable(summary.nvml_reason or '')}."
        )
    return notes


# -- caveats and the whole report --------------------------------------------------------------


def caveats_lines(caveats: Sequence[str]) -> list[str]:
    if not caveats:
        return []
    # Caveats quote file names and texts from the files: nothing in them may reach the terminal raw.
    return _section("CAVEATS") + [f"  - {fmt.printable(line)}" for line in caveats]


#: ``(origin, name, printer of the Report attribute)``, in the order the blocks print.
PRINTERS: tuple[tuple[str, str, str, Callable[[Any], list[str]]], ...] = (
    ("core", "render_header", "header", header_lines),
    ("core", "render_roles", "roles", roles_lines),
    ("core", "render_dominant", "dominant", dominant_lines),
    ("core", "render_counters", "counters", counters_lines),
    ("core", "render_iterations", "iterations", iterations_lines),
    ("lines", "render_lines", "lines", lines_lines),
    ("resources", "render_io_by_phase", "io_by_phase", io_by_phase_lines),
    ("resources", "render_io", "io", io_lines),
    ("resources", "render_memory", "memory", memory_lines),
    ("gpu", "render", "gpu", gpu_lines),
    ("timeline", "render_timeline", "timeline", timeline_lines),
)


def render_report(report: Report) -> str:
    """A computed report as text (no trailing newline)."""
    caveats = list(report.caveats)
    chunks: list[list[str]] = []
    for origin, name, attribute, printer in PRINTERS:
        try:
            lines = printer(getattr(report, attribute))
        except Exception as error:
            if os.environ.get("LINEPROFILER_DEBUG"):
                raise
            caveats.append(f"the {origin} block {name} failed and is missing: {error.__class__.__name__}: {error}")
            continue
        if lines:
            chunks.append(lines)
    tail = caveats_lines(caveats)
    if tail:
        chunks.append(tail)
    return "\n\n".join("\n".join(line.rstrip() for line in chunk) for chunk in chunks)


def render(run: Run, options: RenderOptions | None = None) -> str:
    """The whole report of ``run`` as text (no trailing newline)."""
    from .build import build_report

    return render_report(build_report(run, options))


__all__ = [
    "ATTEMPT_ROWS",
    "COUNTER_ROWS",
    "NAME_WIDTH",
    "PRINTERS",
    "ROLE_ROWS",
    "RenderOptions",
    "SPARK_WIDTH",
    "attempt_facts",
    "attempt_lines",
    "caveats_lines",
    "counter_line",
    "counters_lines",
    "dominant_lines",
    "gpu_lines",
    "header_lines",
    "io_by_phase_lines",
    "io_lines",
    "iterations_lines",
    "memory_lines",
    "more_counters",
    "render",
    "render_report",
    "role_lines",
    "roles_lines",
    "short_names",
]
