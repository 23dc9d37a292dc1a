"""How a run's processes used their CPUs, from what each worker file's samples say about CPU
(:mod:`..read.cpu_samples`): one phase's off-CPU split summed over processes (DOMINANT PHASES,
the findings), and per host the CPUs there were and the cores the run used (the CPU block).

:class:`RunCpu` reads each worker's CPU parts once per report and sums them on demand; the DOMINANT
PHASES block, the CPU block and the story's findings ask the same one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from ..model import Reason
from ..model_cpu import CpuHost, CpuRole, OffCpuSplit
from ..read.cpu_samples import WorkerCpu, worker_cpu
from ..read.run import Run, Worker
from ..read.sample_info import sample_info

#: Why nothing of CPU was read with ``--no-samples``.
NOT_READ = "not read (--no-samples)"


def reasons(counts: Iterable[str]) -> list[Reason]:
    """Each reason with how many processes gave it, the most common first."""
    tally = Counter(counts)
    return [Reason(why, n) for why, n in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))]


def phase_split(
    cpus: Sequence[WorkerCpu], path: str | None, processes: int | None = None
) -> tuple[OffCpuSplit | None, str | None]:
    """The off-CPU split of ``path`` and every phase under it (None: of every phase), summed
    over the processes of ``cpus`` (those with the phase) that measured it; else None and why
    there is none (the most common reason). ``processes``: how many processes have the phase
    (default: ``len(cpus)``)."""
    measured = [c.off_cpu for c in cpus if c.off_cpu.measured]
    if not measured:
        why = reasons(c.off_cpu.reason or "" for c in cpus)
        return None, (why[0].reason if why else "no process has this phase")
    on = queue = blocked = sampled = counted = 0
    throttled: int | None = 0
    inside = f"{path}/"
    for off in measured:
        if path is None:
            rows = [row for row in off.phases if row.path]  # "" is time outside every phase
        else:
            rows = [row for row in off.phases if row.path == path or row.path.startswith(inside)]
        counted += bool(rows)
        for row in rows:
            on += row.on_cpu_ns
            queue += row.runqueue_ns
            blocked += row.blocked_ns
            sampled += row.on_cpu_ns + row.runqueue_ns + row.blocked_ns + (row.throttled_ns or 0)
            if throttled is not None:
                throttled = None if row.throttled_ns is None else throttled + row.throttled_ns
        if off.throttle_reason is not None:
            throttled = None  # cpu.stat unreadable in this process: its throttled time is unknown
    resolutions = [off.resolution_s for off in measured if off.resolution_s is not None]
    resolution = max(resolutions) if resolutions else None
    if sampled <= 0:
        tick = f" (a tick every {resolution:g} s)" if resolution is not None else ""
        return None, f"not sampled: the sampler{tick} gave none of its time to it"
    split = OffCpuSplit(
        on_cpu_ns=on,
        runqueue_ns=queue,
        throttled_ns=throttled,
        blocked_ns=blocked,
        sampled_ns=sampled,
        resolution_s=resolution,
        measured_processes=counted,
        processes=len(cpus) if processes is None else processes,
    )
    return split, None


def _measured(members: Sequence[tuple[Worker, WorkerCpu]]) -> tuple[list[tuple[Worker, WorkerCpu]], int, list[int]]:
    """The members whose CPU time was measured, that time summed, and each member's most threads."""
    measured = [(w, c) for w, c in members if c.process.cpu_ns is not None]
    threads = [c.process.threads_max for _, c in members if c.process.threads_max is not None]
    return measured, sum(c.process.cpu_ns or 0 for _, c in measured), threads


def _role(name: str, members: list[tuple[Worker, WorkerCpu]]) -> CpuRole:
    measured, cpu, threads = _measured(members)
    lifetime = sum(w.elapsed_ns for w, _ in measured)
    return CpuRole(
        role=name,
        processes=len(members),
        measured_processes=len(measured),
        cpu_ns=cpu,
        lifetime_ns=lifetime,
        cores_per_process=cpu / lifetime if measured and lifetime > 0 else None,
        threads_max=sum(threads) if threads else None,
        threads_max_process=max(threads) if threads else None,
    )


def host_use(host: str, members: Sequence[tuple[Worker, WorkerCpu]]) -> CpuHost:
    """What ``host`` gave the run (its CPUs, affinity, quota) and what the run's processes on
    it used, over the host's span of the run."""
    measured, cpu, threads = _measured(members)
    start = min(w.start_ns for w, _ in members)
    span = max(0, max(w.stop_ns for w, _ in members) - start)
    online = max((c.capacity.online for _, c in members if c.capacity.online), default=None)
    affinity = max((c.capacity.affinity for _, c in members if c.capacity.affinity), default=None)
    quotas = [(c.capacity.quota_cpus, c.capacity.quota_source) for _, c in members if c.capacity.quota_cpus]
    quota, source = min(quotas, key=lambda q: q[0] or 0) if quotas else (None, None)
    usable = affinity or online
    capacity: float | None = float(usable) if usable else None
    if quota is not None:
        capacity = quota if capacity is None else min(capacity, quota)
    by_role: dict[str, list[tuple[Worker, WorkerCpu]]] = {}
    for worker, cpu_of in members:
        by_role.setdefault(worker.role, []).append((worker, cpu_of))
    return CpuHost(
        host=host,
        processes=len(members),
        measured_processes=len(measured),
        online=online,
        affinity=affinity,
        quota_cpus=quota,
        quota_source=source,
        capacity_cpus=capacity,
        span_ns=span,
        cpu_ns=cpu,
        cores_used=cpu / span if measured and span > 0 else None,
        threads_max=sum(threads) if threads else None,
        roles=[_role(name, by_role[name]) for name in sorted(by_role)],
    )


class RunCpu:
    """Each worker's CPU parts, read once (``read``), and the sums the report asks of them."""

    def __init__(self, workers: Sequence[Worker], read: Callable[[Worker], WorkerCpu]) -> None:
        self._workers = [w for w in workers if w.has_data and not w.forked_unprofiled]
        self._read = read
        self._cpu: dict[int, WorkerCpu] = {}
        self._hosts: dict[str, CpuHost] = {}

    @property
    def workers(self) -> list[Worker]:
        return list(self._workers)

    def of(self, worker: Worker) -> WorkerCpu:
        held = self._cpu.get(id(worker))
        if held is None:
            held = self._cpu[id(worker)] = self._read(worker)
        return held

    def host(self, name: str) -> CpuHost | None:
        """The host's summary; None when the run has no process there."""
        if name not in self._hosts:
            members = [(w, self.of(w)) for w in self._workers if w.host == name]
            if not members:
                return None
            self._hosts[name] = host_use(name, members)
        return self._hosts[name]

    def split(
        self, workers: Iterable[Worker], path: str | None, processes: int | None = None
    ) -> tuple[OffCpuSplit | None, str | None]:
        return phase_split([self.of(w) for w in workers], path, processes)


def from_files(run: Run) -> RunCpu:
    """Each worker's CPU parts read from its file when first asked: for a caller that has no
    report's :func:`.blocks.cpu.run_cpu` (``trace``, which merges without samples but whose
    findings want the split of the few phases they name: only those processes are re-read)."""

    def read(worker: Worker) -> WorkerCpu:
        info = sample_info(worker)
        return info.cpu if info is not None and info.cpu is not None else worker_cpu(None)

    return RunCpu(run.workers, read)


__all__ = ["NOT_READ", "RunCpu", "from_files", "host_use", "phase_split", "reasons"]
