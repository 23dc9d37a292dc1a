"""CPU: per host, the CPUs the run could use (affinity, the cgroup's quota) against the cores its
processes used on average, and the threads they ran; per role, its processes, the cores one of
them used and their threads. So "4 actors and 9 torch threads on 2 CPUs" can be read off.

Built from each worker's ``samples`` object (:mod:`...read.cpu_samples`), as every block built from
samples: ``--no-samples`` leaves it out, and so does a run whose processes ran no sampler.
:func:`run_cpu` is what this block, DOMINANT PHASES (the off-CPU split) and the story share.
"""

from __future__ import annotations

from ...model_cpu import CpuBlock
from ...read.cpu_samples import NO_SAMPLER, WorkerCpu, unreadable, worker_cpu
from ...read.run import Run, Worker
from ..cpu_use import NOT_READ, RunCpu, reasons
from . import RenderOptions, sample_infos


def run_cpu(run: Run, options: RenderOptions) -> RunCpu:
    """Every worker's CPU parts, read once per report (none with ``--no-samples``)."""

    def compute() -> RunCpu:
        if options.no_samples:
            return RunCpu(run.workers, lambda _worker: unreadable(NOT_READ))
        by_worker = {id(info.worker): info.cpu for info in sample_infos(run, options) if info.cpu is not None}

        def read(worker: Worker) -> WorkerCpu:
            return by_worker.get(id(worker)) or worker_cpu(None)

        return RunCpu(run.workers, read)

    return options.shared("run_cpu", run, compute)


def cpu_block(run: Run, options: RenderOptions) -> CpuBlock | None:
    """The CPU block; None with ``--no-samples`` or when no process ran a sampler."""
    if options.no_samples:
        return None
    cpus = run_cpu(run, options)
    workers = cpus.workers
    if not workers or all(cpus.of(w).process.reason == NO_SAMPLER for w in workers):
        return None
    names = sorted({w.host for w in workers})
    hosts = [h for h in (cpus.host(name) for name in names) if h is not None]
    hosts.sort(key=lambda h: (-h.processes, h.host))
    return CpuBlock(
        processes=len(workers),
        measured_processes=sum(h.measured_processes for h in hosts),
        hosts=hosts,
        reasons=reasons(r for r in (cpus.of(w).process.reason for w in workers) if r is not None),
        off_cpu_reasons=reasons(r for r in (cpus.of(w).off_cpu.reason for w in workers) if r is not None),
    )


__all__ = ["cpu_block", "run_cpu"]
