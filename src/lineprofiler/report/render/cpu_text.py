"""The report's words about CPU, for the text and the HTML alike: the off-CPU split under each
DOMINANT PHASES row (and the note that says how it was measured), and the CPU block."""

from __future__ import annotations

from collections.abc import Sequence

from .. import format as fmt
from ..model import DominantPhase
from ..model_cpu import CpuBlock, CpuHost, CpuRole, OffCpuSplit

#: Hosts the text names, one block each, before one line counts the rest.
HOST_ROWS = 8
#: The four parts of the split, as each output names them, in the order they are drawn.
PARTS = (
    ("on_cpu_ns", "on CPU"), ("runqueue_ns", "cpu queue"), ("throttled_ns", "throttled"), ("blocked_ns", "blocked")
)


def split_words(split: OffCpuSplit) -> str:
    """``cpu queue 64%, throttled 0%, blocked 18% (on CPU 18%)``, and in how many of the
    processes with the phase it was sampled when not in all (an older file, or a phase whose
    entries no tick fell in)."""
    parts = ", ".join(f"{label} {fmt.percent(split.share(getattr(split, key)), 0)}" for key, label in PARTS[1:])
    text = f"{parts} (on CPU {fmt.percent(split.share(split.on_cpu_ns), 0)})"
    if split.measured_processes < split.processes:
        text += f"; sampled in {split.measured_processes} of {split.processes} processes"
    return text


def row_words(phase: DominantPhase) -> str:
    """What a DOMINANT PHASES row's threads waited on, or why that is not known."""
    if phase.off_cpu is not None:
        return split_words(phase.off_cpu)
    reason = fmt.printable(phase.off_cpu_reason or "no process measured it")
    return reason if reason.startswith("not ") else f"not measured: {reason}"


def resolution(phases: Sequence[DominantPhase]) -> float | None:
    """The coarsest resolution of the rows' splits (None: none measured one)."""
    found = [p.off_cpu.resolution_s for p in phases if p.off_cpu is not None and p.off_cpu.resolution_s]
    return max(found) if found else None


def measured(phases: Sequence[DominantPhase]) -> bool:
    return any(p.off_cpu is not None for p in phases)


def split_note(phases: Sequence[DominantPhase]) -> str:
    """How the split was measured, said once under the rows."""
    tick = resolution(phases)
    at = f"the sampler's resolution ({tick:g} s)" if tick is not None else "the sampler's resolution"
    return (
        "waited: each phase's thread time (with the phases under it) runnable but waiting for a CPU "
        "(cpu queue), held back by the cgroup's CPU quota (throttled) or sleeping on a lock, a queue, the "
        f"GIL or I/O (blocked); exact per thread, attributed to phases at {at}"
    )


def cores(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"


def _threads(count: int | None) -> str:
    return "threads n/a" if count is None else f"{fmt.count(count)} thread{'s' if count != 1 else ''}"


def capacity_words(host: CpuHost) -> str:
    """``2 CPUs (affinity 2 of 4 online, cgroup quota 1.5 CPUs)``."""
    if host.capacity_cpus is None:
        head = "CPUs n/a"
    else:
        head = f"{host.capacity_cpus:g} CPU{'s' if host.capacity_cpus != 1 else ''}"
    details = []
    if host.affinity is not None:
        details.append(f"affinity {host.affinity}" + (f" of {host.online} online" if host.online else ""))
    elif host.online is not None:
        details.append(f"{host.online} online")
    if host.quota_cpus is not None:
        details.append(f"cgroup quota {host.quota_cpus:g} CPUs")
    return head + (f" ({', '.join(details)})" if details else "")


def host_words(host: CpuHost) -> str:
    """``the run's 5 processes used 1.93 cores on average over 12.3s, 13 threads at most``."""
    who = f"{fmt.count(host.processes)} process{'es' if host.processes != 1 else ''}"
    text = f"{who} used {cores(host.cores_used)} cores on average over {fmt.duration(host.span_ns)}"
    if host.measured_processes < host.processes:
        text += f" ({host.measured_processes} measured)"
    return f"{text}, {_threads(host.threads_max)} at most"


def role_words(role: CpuRole) -> str:
    each = f"{cores(role.cores_per_process)} cores each"
    threads = _threads(role.threads_max_process)
    if role.processes > 1 and role.threads_max is not None:
        threads += f" each at most ({fmt.count(role.threads_max)} in all)"
    else:
        threads += " at most"
    return f"{each}, {threads}"


def cpu_lines(block: CpuBlock | None) -> list[str]:
    """CPU: per host, the CPUs the run could use and the cores its processes used."""
    if block is None:
        return []
    known = [h for h in block.hosts if h.measured_processes or h.capacity_cpus is not None]
    if not known:
        why = "; ".join(f"{fmt.printable(r.reason)} ({fmt.count(r.processes)})" for r in block.reasons)
        return [f"CPU  not measured: {why or 'no process said'}", *split_reasons(block)]
    lines = ["CPU  (cores used on average against the CPUs there were, per host)"]
    for host in known[:HOST_ROWS]:
        lines.append(f"  {fmt.printable(host.host)}  {capacity_words(host)}")
        lines.append(f"    {host_words(host)}")
        for role in host.roles:
            label = f"{fmt.printable(role.role)} x{role.processes}"
            lines.append(f"    {fmt.clip_left(label, 23):<24}{role_words(role)}")
    if len(known) > HOST_ROWS:
        lines.append(f"  ... {fmt.count(len(known) - HOST_ROWS)} more hosts (--json lists every one)")
    for reason in block.reasons:
        lines.append(f"  not measured in {fmt.count(reason.processes)}: {fmt.printable(reason.reason)}")
    return lines + split_reasons(block)


def split_reasons(block: CpuBlock) -> list[str]:
    """Why processes have no off-CPU split, where it is not why their CPU time is missing too
    (DOMINANT PHASES prints no *waited* line where no process measured it: this says why)."""
    said = {(r.reason, r.processes) for r in block.reasons}
    return [
        f"  waited (DOMINANT PHASES) not measured in {fmt.count(r.processes)}: {fmt.printable(r.reason)}"
        for r in block.off_cpu_reasons
        if (r.reason, r.processes) not in said
    ]


__all__ = ["PARTS", "cpu_lines", "measured", "row_words", "split_note", "split_reasons", "split_words"]
