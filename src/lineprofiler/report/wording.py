"""What the text and HTML reports both say: names, sentences and units, worded once.

A renderer formats numbers with :mod:`.format`; where the text and the HTML page print the same
sentence (the header's lines about attempts, a role's title and straggler, the notes under I/O,
MEMORY, GPU and LINES), or the same name (a phase's shortest unambiguous suffix, a wall-clock
instant), it comes from here, so the two cannot drift apart. Reads only :mod:`.model` and
:mod:`.format`. It also spells the statuses the report tells apart, a worker's (from its file)
and an attempt's (from merge), so that every floor of the report says them the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from . import format as fmt
from .model import Attempt, BackendWindow, GpuSummary, Header, LineRow, LinesBlock, LinesRole, Memory, Role, SampledIo

# -- statuses --------------------------------------------------------------------------------------

#: The statuses of a worker that exited (normally, or flushing on a signal): its file is final.
FINAL_STATUSES = ("exited", "signalled")

# What an attempt is to the one the report shows (see :mod:`.read.attempts`): the newest, another job
# overlapping it in time, one that ended before it began, or one a launcher restarted since.
NEWEST = "newest"
CONCURRENT = "concurrent"
SUPERSEDED = "superseded"
RESTARTED = "restarted"


#: How many bins a text sparkline has: the blocks compute their series in this many bins.
SPARK_WIDTH = 42


# -- instants --------------------------------------------------------------------------------------


def utc_time(unix_ns: int) -> str:
    """A wall-clock instant for people: ``2026-08-13 22:41:07 UTC``."""
    try:
        moment = datetime.fromtimestamp(unix_ns / 1e9, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{unix_ns} ns since the epoch"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


# -- attempts --------------------------------------------------------------------------------------


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


#: The off-CPU parts a comparison shows, and how it names them.
_OFF_CPU_PARTS = (("runqueue_ns", "waiting for a CPU"), ("throttled_ns", "throttled"), ("blocked_ns", "blocked"))


def compare_off_cpu_line(role: dict[str, Any]) -> str | None:
    """Why a compared role's threads in phases were not running, A against B, as shares of the
    sampled thread-time (a change of a run's CPUs or threads shows here first); None when the
    role is on one side only and that side did not measure it."""
    a, b = role["a_off_cpu"], role["b_off_cpu"]
    if a is None and b is None:
        if role["a_processes"] and role["b_processes"]:
            return f"off-CPU in phases: not measured (A: {role['a_off_cpu_reason']}; B: {role['b_off_cpu_reason']})"
        return None

    def share(side: dict[str, Any] | None, key: str) -> str:
        if side is None:
            return "\u2013"
        value = side[key]
        return "?" if value is None else fmt.percent(value / side["sampled_ns"] if side["sampled_ns"] > 0 else None)

    parts = [f"{name} A {share(a, key)} \u2192 B {share(b, key)}" for key, name in _OFF_CPU_PARTS]
    line = "off-CPU in phases (of the sampled thread-time): " + "; ".join(parts)
    missing = [f"{k.upper()}: {role[f'{k}_off_cpu_reason']}" for k, side in (("a", a), ("b", b)) if side is None]
    return line + (f" ({'; '.join(missing)})" if missing else "")


def compare_attempt_notes(key: str, side: dict[str, Any]) -> list[str]:
    """What one side's NOTES say of the attempts not merged and the run ids merged by time (the
    text and the HTML comparison print the same)."""
    label = key.upper()
    notes = [f"{label}: superseded attempt {name} not merged" for name in side["superseded"]]
    notes += [
        f"{label}: concurrent run {name} (another job overlapping in time) not merged" for name in side["concurrent"]
    ]
    if side["merged"]:
        count = len(side["merged"])
        notes.append(f"{label}: {count} more generated run id(s) overlapping {side['run']} in time merged")
    return notes


# -- phase names -----------------------------------------------------------------------------------


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


# -- roles -----------------------------------------------------------------------------------------


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


def unit_name(role: Role, plural: bool = False) -> str:
    """What the role's work is counted in: ``entry of getitem`` / ``entries of getitem``, or
    ``unit of samples`` / ``samples`` for a counter."""
    if role.unit == "counter" and role.unit_counter is not None:
        name = fmt.printable(role.unit_counter)
        return name if plural else f"unit of {name}"
    phase = fmt.printable(role.unit_phase or "")
    return f"{'entries' if plural else 'entry'} of {phase}"


def straggler_rule(role: Role) -> str:
    """``straggler: > 1.11x the others' median per entry of step, beyond the histograms' error``."""
    rule = f"straggler: > {role.straggler_bar:.2f}x the others' median per {unit_name(role)}"
    if role.straggler_bar > role.straggler_from:
        rule += f", {role.straggler_from:.2f}x raised to the histograms' own error"
    return rule


def straggler_note(role: Role) -> str:
    """The HTML bar's note beside the straggler."""
    return f"straggler ({fmt.ratio(role.straggler_ratio)}x the others' median per {unit_name(role)})"


def straggler_lines(role: Role) -> list[str]:
    """The sentences under a role: its straggler (slower per unit of work), and its uneven work
    (the busiest had more to do): never the busiest process called a straggler for that alone."""
    lines = []
    straggler = role.straggler
    if straggler is not None:
        how = "the median entry" if role.unit == "entry" else "the median entry over its units per entry"
        lines.append(
            f"straggler: {straggler.label}, {fmt.duration(straggler.per_unit_ns)} per {unit_name(role)} ({how}), "
            f"{fmt.ratio(role.straggler_ratio)}x the others' median ({straggler_rule(role)})"
        )
    uneven = role.uneven_work
    if uneven is not None:
        speed = "" if straggler is not None else f"; no process slower per {unit_name(role)}: not a straggler"
        lines.append(
            f"uneven work: {fmt.count(uneven.most)} vs {fmt.count(uneven.fewest)} {unit_name(role, plural=True)} "
            f"({uneven.most_label}; {uneven.fewest_label}){speed}"
        )
    return lines


def time_in_phases_text(role: Role) -> str | None:
    if role.busy_fraction is None:
        if role.busy_ns > 0 and role.lifetime_ns > 0:
            return "time in phases: not measured (the lifetimes of its processes are not known; see CAVEATS)"
        return None
    return f"time in phases: {fmt.percent(role.busy_fraction)} of the processes' lifetime"


# -- iterations ------------------------------------------------------------------------------------


#: How a user picks another loop than the one ITERATIONS found.
CHOOSE_LOOP = "Profiler(window_phase=NAME) picks another"


# -- backend windows -------------------------------------------------------------------------------


def backend_window_text(window: BackendWindow) -> str:
    """``trainer pid 7 on node1: torch, entries 100..109 of iteration, done: run/backend/...json``."""
    parts = [fmt.printable(window.backend)]
    if window.phase is not None and window.start is not None and window.stop is not None:
        parts.append(f"entries {window.start}..{window.stop - 1} of {fmt.printable(window.phase)}")
    state = fmt.printable(window.state) + (" (cut short: the process ended inside it)" if window.truncated else "")
    parts.append(state)
    head = f"{window.label}: {', '.join(parts)}"
    if window.path is not None:
        return f"{head}: {fmt.printable(window.path)}"
    why = f" ({fmt.printable(window.reason)})" if window.reason else ""
    return f"{head}: no file written{why}"


# -- I/O and memory --------------------------------------------------------------------------------


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



def memory_trend_note(memory: Memory) -> str:
    """What a trend is fitted over, and what it leaves out (a warm-up is not a leak)."""
    return (
        f"trend: the steepest per-process RSS slope in each role, least squares over its rows after its "
        f"warm-up (the first {fmt.percent(memory.trend_warmup_share, 0)} of its samples, left out), where "
        f"those span {fmt.duration(memory.trend_min_ns)} or more (else n/a); "
        "all processes: summed PSS (RSS where PSS was not measured)"
    )


def largest_text(memory: Memory) -> str | None:
    top = memory.largest
    if top is None:
        return None
    at = f" at {fmt.moment(top.peak_at_ns)}" if top.peak_at_ns is not None else ""
    return f"largest: {top.label}, {fmt.size(top.peak_bytes)}{at}"


# -- GPU -------------------------------------------------------------------------------------------


def gpu_device_label(host: str, index: int, hosts: int) -> str:
    label = f"GPU {index}"
    if hosts > 1:
        label = f"{fmt.printable(host)[: 28 - len(label) - 1]} {label}"
    return label



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


# -- lines -----------------------------------------------------------------------------------------


def common_folder(rows: list[LineRow]) -> str:
    """The folder (ending in ``/``) every row's shown path lies in, or ``""``."""
    folders = [row.path.rsplit("/", 1)[0] + "/" if "/" in row.path else "" for row in rows]
    if not folders:
        return ""
    common = folders[0]
    for folder in folders[1:]:
        while not folder.startswith(common):
            common = common[:-1].rsplit("/", 1)[0] + "/" if "/" in common[:-1] else ""
    return common


def spread_text(row: LineRow) -> str:
    """``81.7ms–314.7ms``: the least and the most one process spent on the line ("" for one)."""
    if row.min_ns is None or row.max_ns is None:
        return ""
    return f"{fmt.duration(row.min_ns)}\u2013{fmt.duration(row.max_ns)}"


def window_text(role: LinesRole) -> str:
    """``entries 100..109 of iteration, 40 profiled in 1.2s``."""
    parts = []
    if role.phase is not None and role.start is not None and role.stop is not None:
        parts.append(f"entries {role.start}..{role.stop - 1} of {fmt.printable(role.phase)}")
    if role.entries is not None:
        parts.append(f"{fmt.count(role.entries)} profiled in {fmt.duration(role.wall_ns)}")
    return ", ".join(parts)


def lines_role_title(role: LinesRole) -> str:
    """``LEARNER  (1 of 1 process left line stats; entries 100..109 of iteration, ...)``."""
    noun = "process" if role.processes == 1 else "processes"
    head = f"{fmt.printable(role.role.upper())}  ({role.files} of {role.processes} {noun} left line stats"
    window = window_text(role)
    return head + (f"; {window})" if window else ")")


def lines_role_notes(role: LinesRole) -> list[str]:
    """What the role's table does not show: processes without a file, windows cut short."""
    lines = []
    for reason in role.missing:
        noun = "process" if reason.processes == 1 else "processes"
        lines.append(f"  {reason.processes} {noun} left no line stats: {fmt.printable(reason.reason)}")
    if role.partial:
        noun = "window was" if role.partial == 1 else "windows were"
        lines.append(f"  {role.partial} {noun} cut short (the process ended while it was open): fewer entries")
    return lines


def lines_block_notes(block: LinesBlock) -> list[str]:
    """The LINES block's last lines: the line-stats files of other attempts it leaves out."""
    if not block.other_attempts:
        return []
    noun = "file" if block.other_attempts == 1 else "files"
    return [f"  {block.other_attempts} line-stats {noun} of other attempts under lines/ not shown"]
