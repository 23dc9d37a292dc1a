"""What an off-CPU phase waited on, where its process measured it: the finding that replaces "what
it waited on is unknown" with the split the sampler measured (:mod:`...read.cpu_samples`).

Waiting for a CPU is a cost someone can remove when the run itself filled its CPUs (its threads
outnumber them, or it used nearly all of them): fewer workers or threads remove it. A queue on a
host the run did not fill is other processes' doing: said, with the figures, but not counted as
removable (a loaded CI machine is not the job's design). Throttling by the cgroup's quota is the
job's to raise. Those removable parts count in ``removable_ns`` on the critical path, as off-CPU
time with no link does. Blocked (sleeping) stays "unknown" only where no ``wait_on`` link says on
what.
"""

from __future__ import annotations

from ... import format as fmt
from ...model_cpu import CpuHost, OffCpuSplit
from ..cpu_use import RunCpu
from .model import Finding
from .spans import WorkerTrace

#: A phase whose measured time waited at least this share for a CPU the run filled (queue plus
#: throttled) is a finding, however little it slept.
CPU_WAIT_FROM = 0.25
#: A phase that slept or waited for other processes' CPUs is a finding past this off-CPU share of
#: its wall time (as without the split).
BLOCKED_FROM = 0.6
#: A part of the split below this share is not named in the sentence.
PART_FROM = 0.05
#: The run filled its CPUs when its processes used at least this share of them on average.
FILLED_FROM = 0.8
#: What a user can change when a phase waits for a CPU.
FEWER_THREADS = "fewer workers, torch.set_num_threads, OMP_NUM_THREADS"


def split_of(cpu: RunCpu | None, trace: WorkerTrace, phase: str) -> OffCpuSplit | None:
    """The process's measured split of ``phase`` (with the phases under it); None: not measured."""
    if cpu is None:
        return None
    split, _why = cpu.split([trace.worker], phase)
    return split


def run_filled(host: CpuHost | None) -> bool:
    """Whether the run itself filled the host's CPUs: more of its threads than CPUs, or nearly
    all of them used by its processes; False where the host's figures are unknown."""
    if host is None or host.capacity_cpus is None:
        return False
    many = host.threads_max is not None and host.threads_max > host.capacity_cpus
    busy = host.cores_used is not None and host.cores_used >= FILLED_FROM * host.capacity_cpus
    return many or busy


def _host_words(host: CpuHost | None) -> str:
    if host is None:
        return ""
    cpus = None if host.capacity_cpus is None else f"{host.capacity_cpus:g} CPU{'s' if host.capacity_cpus != 1 else ''}"
    threads = None if host.threads_max is None else f"{fmt.count(host.threads_max)} threads of this run"
    if cpus and threads:
        words = f"the host's {cpus} ran {threads}"
    elif cpus:
        words = f"the host has {cpus}"
    elif threads:
        words = f"the host ran {threads}"
    else:
        return ""
    if host.cores_used is not None:
        words += f", which used {host.cores_used:,.2f} cores on average"
    return f" ({words})"


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
    nothing to say: no CPU wait the run or its quota caused, and a sleep or others' load that is
    not most of its time, or a sleep a link explains."""
    queue, throttled, blocked = (split.share(split.runqueue_ns) or 0.0, split.share(split.throttled_ns) or 0.0,
                                 split.share(split.blocked_ns) or 0.0)
    filled = run_filled(host)
    removable_wait = throttled + (queue if filled else 0.0)
    waits_for_cpu = queue + throttled >= CPU_WAIT_FROM and (filled or throttled >= PART_FROM)
    off = max(0, wall - cpu_ns) / wall
    if not waits_for_cpu and (off <= BLOCKED_FROM or (linked and blocked >= queue)):
        return None
    parts = []
    if queue >= PART_FROM or waits_for_cpu:
        waited = f"waited for a CPU {fmt.percent(queue, 0)} of its time"
        if filled:
            parts.append(f"{waited}{_host_words(host)}: {FEWER_THREADS}")
        else:
            parts.append(f"{waited}, held by processes outside this run{_host_words(host)}")
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
    if waits_for_cpu:
        kind = "throttled" if throttled > queue else "cpu_queue"
    else:
        kind = "host_contention" if queue > blocked else "blocked_unknown"
    # Removable on the path: the CPU wait the run or its quota caused, and the sleep no link
    # explains (as without the split); others' load on the host is not the run's to remove.
    removable_share = removable_wait + (0.0 if linked else blocked)
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
            "host_cores_used": None if host is None else host.cores_used,
            "run_filled_cpus": filled,
        },
        removable_ns=round(removable_share * on_path) if on_path and removable_share > 0 else None,
    )


__all__ = ["BLOCKED_FROM", "CPU_WAIT_FROM", "FEWER_THREADS", "PART_FROM", "measured_finding", "run_filled", "split_of"]
