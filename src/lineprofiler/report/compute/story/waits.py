"""What an off-CPU phase waited on, where its process measured it: the finding that replaces "what
it waited on is unknown" with the split the sampler measured (:mod:`...read.cpu_samples`).

Runnable but waiting for a CPU (the run queue) and throttled by the cgroup's CPU quota are costs
someone can remove (fewer workers or threads, a larger quota): they count in ``removable_ns`` on the
critical path, as off-CPU time with no link does. Blocked (sleeping) stays "unknown" only where no
``wait_on`` link says on what.
"""

from __future__ import annotations

from ... import format as fmt
from ...model_cpu import CpuHost, OffCpuSplit
from ..cpu_use import RunCpu
from .model import Finding
from .spans import WorkerTrace

#: A phase whose measured time waited at least this share for a CPU (queue plus throttled) is a
#: finding, however little it slept.
CPU_WAIT_FROM = 0.25
#: A part of the split below this share is not named in the sentence.
PART_FROM = 0.05
#: What a user can change when a phase waits for a CPU.
FEWER_THREADS = "fewer workers, torch.set_num_threads, OMP_NUM_THREADS"


def split_of(cpu: RunCpu | None, trace: WorkerTrace, phase: str) -> OffCpuSplit | None:
    """The process's measured split of ``phase`` (with the phases under it); None: not measured."""
    if cpu is None:
        return None
    split, _why = cpu.split([trace.worker], phase)
    return split


def contention(split: OffCpuSplit) -> float:
    """The share of the measured time spent waiting for a CPU: the queue and throttling."""
    return (split.share(split.runqueue_ns) or 0.0) + (split.share(split.throttled_ns) or 0.0)


def _host_words(host: CpuHost | None) -> str:
    if host is None:
        return ""
    cpus = None if host.capacity_cpus is None else f"{host.capacity_cpus:g} CPU{'s' if host.capacity_cpus != 1 else ''}"
    threads = None if host.threads_max is None else f"{fmt.count(host.threads_max)} threads of this run"
    if cpus and threads:
        return f" (the host's {cpus} ran {threads})"
    if cpus:
        return f" (the host has {cpus})"
    return f" (the host ran {threads})" if threads else ""


def measured_finding(
    trace: WorkerTrace,
    phase: str,
    *,
    wall: int,
    cpu_ns: int,
    split: OffCpuSplit,
    linked: bool,
    on_path: int,
    run_ns: int,
    host: CpuHost | None,
) -> Finding | None:
    """The finding of an off-CPU phase whose split was measured; None when the split leaves
    nothing to say (no CPU wait, and its sleep has a link that says on what)."""
    queue, throttled, blocked = (split.share(split.runqueue_ns) or 0.0, split.share(split.throttled_ns) or 0.0,
                                 split.share(split.blocked_ns) or 0.0)
    waits_for_cpu = queue + throttled >= CPU_WAIT_FROM
    off = max(0, wall - cpu_ns) / wall
    if not waits_for_cpu and linked:
        return None
    parts = []
    if queue >= PART_FROM or waits_for_cpu:
        parts.append(f"waited for a CPU {fmt.percent(queue, 0)} of its time{_host_words(host)}: {FEWER_THREADS}")
    if throttled >= PART_FROM:
        quota = f" ({host.quota_cpus:g} CPUs)" if host is not None and host.quota_cpus is not None else ""
        share = fmt.percent(throttled, 0)
        parts.append(f"the cgroup's CPU quota{quota} throttled it {share}: raise the quota or use fewer threads")
    if linked:
        parts.append(f"blocked {fmt.percent(blocked, 0)}: its wait_on links say on what")
    elif blocked >= PART_FROM:
        parts.append(f"blocked {fmt.percent(blocked, 0)}: on what is unknown (no wait_on link was recorded in it)")
    if split.throttled_ns is None and waits_for_cpu:
        parts.append("throttling not measured (the cgroup's cpu.stat could not be read)")
    where = f"it was on the critical path for {fmt.duration(on_path)}" if on_path else "it was not on the critical path"
    kind = ("throttled" if throttled > queue else "cpu_queue") if waits_for_cpu else "blocked_unknown"
    # Removable on the path: the CPU wait, and the sleep no link explains (as without the split).
    removable_share = queue + throttled + (0.0 if linked else blocked)
    return Finding(
        kind=kind,
        text=(
            f"{trace.worker.label} was off-CPU for {fmt.percent(off)} of {fmt.printable(phase)} "
            f"({fmt.duration(wall - cpu_ns)} of {fmt.duration(wall)} wall, CPU {fmt.duration(cpu_ns)}); "
            + "; ".join(parts) + f"; {where}"
        ),
        cost_ns=on_path,
        cost_fraction=on_path / run_ns,
        process=trace.index,
        figures={
            "wall_ns": wall, "cpu_ns": cpu_ns, "off_cpu": off, "on_path_ns": on_path, "phase": phase,
            "runqueue_share": queue, "throttled_share": None if split.throttled_ns is None else throttled,
            "blocked_share": blocked, "sampled_ns": split.sampled_ns, "resolution_s": split.resolution_s,
            "host_cpus": None if host is None else host.capacity_cpus,
            "host_threads": None if host is None else host.threads_max,
        },
        removable_ns=round(removable_share * on_path) if on_path else None,
    )


__all__ = ["CPU_WAIT_FROM", "FEWER_THREADS", "PART_FROM", "contention", "measured_finding", "split_of"]
