"""The report's model of CPU: why a phase's threads were not running (:class:`OffCpuSplit`, on
each DOMINANT PHASES row) and the CPU block (cores used against the CPUs there were, per host
and role). Kept apart from :mod:`.model`, which re-exports it, so each file holds one part."""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import Reason


@dataclass
class OffCpuSplit:
    """A phase's thread-time, summed over the threads inside it (the phase and the phases under
    it) in the processes that measured it: on a CPU, runnable but waiting for one (the run
    queue), throttled by the cgroup's CPU quota (None: its counters could not be read), and
    blocked (sleeping: a lock, a queue, the GIL, a syscall, a disk). The four add up to
    ``sampled_ns``; attributed to phases at the sampler's resolution (``resolution_s``)."""

    on_cpu_ns: int
    runqueue_ns: int
    throttled_ns: int | None
    blocked_ns: int
    sampled_ns: int
    resolution_s: float | None
    #: The processes that measured it and had time of it sampled, of ``processes`` with the phase.
    measured_processes: int
    processes: int

    def share(self, ns: int | None) -> float | None:
        """``ns`` as a share of the sampled time (None: not measured, or nothing sampled)."""
        if ns is None or self.sampled_ns <= 0:
            return None
        return ns / self.sampled_ns


@dataclass
class CpuRole:
    """One role's processes on one host."""

    role: str
    processes: int
    #: Processes whose CPU time was measured, their CPU time and their lifetimes.
    measured_processes: int
    cpu_ns: int
    lifetime_ns: int
    #: CPU time over lifetime, over the measured processes: cores used on average by one.
    cores_per_process: float | None
    #: Each process's most threads at once, summed over the role (None: none said), and the
    #: largest of one process.
    threads_max: int | None
    threads_max_process: int | None


@dataclass
class CpuHost:
    """What one host gave the run and what the run's processes on it used."""

    host: str
    processes: int
    measured_processes: int
    #: CPUs online, the most any of its processes' affinity allowed, and the cgroup's quota in
    #: CPUs (None: no quota, or none could be read) and where it was read.
    online: int | None
    affinity: int | None
    quota_cpus: float | None
    quota_source: str | None
    #: What the run could use: the affinity (else the CPUs online), lowered to the quota.
    capacity_cpus: float | None
    #: From the first process's start to the last one's end on this host.
    span_ns: int
    cpu_ns: int
    #: CPU time of the measured processes over the span: cores used on average.
    cores_used: float | None
    threads_max: int | None
    roles: list[CpuRole] = field(default_factory=list)


@dataclass
class CpuBlock:
    """CPU: per host, the CPUs available and the cores the run's processes used."""

    processes: int
    measured_processes: int
    hosts: list[CpuHost]
    #: Why processes' CPU time was not measured, with how many each.
    reasons: list[Reason]
    #: Why processes have no off-CPU split (DOMINANT PHASES's *waited*), with how many each.
    off_cpu_reasons: list[Reason] = field(default_factory=list)
