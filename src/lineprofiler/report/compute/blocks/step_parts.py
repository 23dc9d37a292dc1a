"""A training loop's step, part by part, and whether the DataLoader is its bottleneck.

A role's steps are its phases named ``step`` with two or more of auto="torch"'s parts under them
(``data_wait``, ``forward``, ``backward``, ``optimizer``, ``zero_grad``; the same names written
with ``phase()`` count too). Each part's share is its wall time over the steps'
wall time, summed over the role's processes; ``other`` is the step's own time, in no part.

The DataLoader workers are the processes of role ``dataloader`` whose parent is one of the
role's processes (same host). A worker's busy share is its ``fetch`` + ``collate`` time over its
own lifetime, not over the trainer's step time: phase totals carry no timestamps, so the
worker's work cannot be placed inside the trainer's steps, and workers prefetch ahead of them
(``prefetch_factor`` batches each before the first step and during whatever the trainer does
between steps), so a share of the step time could pass 100 % and still prove nothing. A
worker's lifetime is its own measured clock, and a DataLoader's workers (not persistent, the
default) live one pass over the loader: the stretch of steps it feeds. Where the two differ
(``persistent_workers=True`` idle between epochs, a spawned worker's start-up), the lifetime
reads less busy, so the verdict errs toward not naming the loader, never toward inventing it.
"""

from __future__ import annotations

from ...model_steps import COMPUTE_BOUND, LOADER_BOUND, NO_WORKERS, WAIT_ELSEWHERE, LoaderWorkers, StepPart, StepParts
from ...read.run import PhaseStats, RoleStats, Run, Worker

STEP = "step"
#: auto="torch"'s parts of a step, in the order the report names them (zero_grad last: loops
#: call it before the forward or after the optimizer step).
PARTS = ("data_wait", "forward", "backward", "optimizer", "zero_grad")
DATA_WAIT = "data_wait"
#: A phase named step is a training step with this many of those parts under it: one could be
#: a program's own ``step`` that calls a model somewhere down (an environment's step).
PARTS_FOR_A_STEP = 2
#: The role auto="torch" gives DataLoader workers, and the phases a worker loads in.
WORKER_ROLE = "dataloader"
WORKER_PHASES = ("fetch", "collate")

#: data_wait from a fifth of the step: feeding the loop faster would speed it up 1.25x or more.
#: Between this and DATA_WAIT_SMALL the line gives the figures only.
DATA_WAIT_LARGE = 0.20
#: data_wait under 5 % of the step: the loader keeps up, removing the wait would gain 5 % at most.
DATA_WAIT_SMALL = 0.05
#: Workers busy from 75 % of their lifetime have little slack left: a worker that fetches back to
#: back reads 90-95 % over a long pass, and a real DataLoader's over 8 batches read 79 % (its
#: start, its wait for the first indices and the end of the pass, when it has fetched its last
#: batch while the trainer drains the queue, are outside fetch).
WORKERS_SATURATED = 0.75
#: Workers busy under half their lifetime while the trainer waits are not what it waits for.
WORKERS_IDLE = 0.50


def _time_ns(stats: PhaseStats) -> int:
    """Wall time with the open entries' time so far (a step cut by a kill still counts)."""
    return max(0, stats.wall_ns) + stats.open_ns


def _children(role: RoleStats, parent: str) -> list[PhaseStats]:
    prefix = parent + "/"
    return [s for p, s in role.phases.items() if p.startswith(prefix) and "/" not in p[len(prefix) :]]


def step_paths(role: RoleStats) -> list[str]:
    """The role's phases named ``step`` with parts of auto="torch"'s under them, directly or
    under a phase of the program's own (``step/train_step/forward``)."""
    found = []
    for path, stats in role.phases.items():
        if stats.leaf == STEP:
            names = {p.rsplit("/", 1)[-1] for p in role.phases if p.startswith(path + "/")}
            if len(names & set(PARTS)) >= PARTS_FOR_A_STEP:
                found.append(path)
    return found


def step_parts(role: RoleStats, run: Run) -> StepParts | None:
    """The role's steps and their parts; None where it has no step or no time in one."""
    paths = step_paths(role)
    wall = sum(_time_ns(role.phases[p]) for p in paths)
    if not paths or wall <= 0:
        return None
    times: dict[str, int] = {}
    for path in paths:
        for child in _children(role, path):
            times[child.leaf] = times.get(child.leaf, 0) + _time_ns(child)
    own = sorted((n for n in times if n not in PARTS), key=lambda n: (-times[n], n))
    parts = [StepPart(n, times[n], times[n] / wall) for n in (*(p for p in PARTS if p in times), *own)]
    other = sum(max(0, role.phases[p].self_ns) + role.phases[p].open_self_ns for p in paths) / wall
    leading = max((p for p in parts if p.name != DATA_WAIT), key=lambda p: p.share, default=None)
    workers, reason = loader_workers(role, run)
    result = StepParts(
        paths=sorted(paths),
        steps=sum(role.phases[p].entries for p in paths),
        wall_ns=wall,
        parts=parts,
        other=other,
        workers=workers,
        workers_reason=reason,
        verdict=None,
        leading=leading.name if leading is not None else None,
    )
    result.verdict = verdict(result, workers_recorded=WORKER_ROLE in run.roles)
    return result


def verdict(steps: StepParts, workers_recorded: bool) -> str | None:
    """What data_wait's share and the workers' busy share together support, if anything
    (``workers_recorded``: the run has DataLoader workers, its own or another role's)."""
    data_wait = steps.share(DATA_WAIT)
    if data_wait is None:
        return None  # no DataLoader was iterated inside the steps: nothing to say of one
    if data_wait < DATA_WAIT_SMALL:
        return COMPUTE_BOUND if steps.leading is not None else None
    if data_wait < DATA_WAIT_LARGE:
        return None
    if steps.workers is None:
        # No worker at all: the loading ran inside data_wait (num_workers=0), or unprofiled.
        return None if workers_recorded else NO_WORKERS
    if steps.workers.busy >= WORKERS_SATURATED:
        return LOADER_BOUND
    if steps.workers.busy < WORKERS_IDLE:
        return WAIT_ELSEWHERE
    return None


def loading_ns(worker: Worker) -> int:
    """A worker's ``fetch`` and ``collate`` time (open entries' so far included), each counted
    once: a phase under another of them is part of it."""
    total = 0
    for phase in worker.document["phases"]:
        names = str(phase["path"]).split("/")
        if names[-1] in WORKER_PHASES and not any(n in WORKER_PHASES for n in names[:-1]):
            total += max(0, int(phase["wall_ns"])) + max(0, int(phase.get("open_ns") or 0))
    return total


def loader_workers(role: RoleStats, run: Run) -> tuple[LoaderWorkers | None, str | None]:
    """The role's DataLoader workers and how busy they were; else None and why."""
    parents = {(w.host, w.pid) for w in role.data_workers}
    loaders = run.roles.get(WORKER_ROLE)
    found = [w for w in (loaders.data_workers if loaders else []) if (w.host, w.parent_pid) in parents]
    if not found:
        others = len(loaders.data_workers) if loaders else 0
        if others:
            return None, f"none of the run's {others} {WORKER_ROLE} processes is a child of this role's processes"
        return None, f"no {WORKER_ROLE} workers were recorded"
    measured = [w for w in found if w.lifetime_measured and w.elapsed_ns > 0]
    if not measured:
        return None, f"the lifetimes of its {len(found)} {WORKER_ROLE} workers are not known (see CAVEATS)"
    # At most their whole lifetime: threads loading at once can add up to more.
    loads = [min(loading_ns(w), w.elapsed_ns) for w in measured]
    shares = [load / w.elapsed_ns for load, w in zip(loads, measured, strict=True)]
    lifetime = sum(w.elapsed_ns for w in measured)
    loading = sum(loads)
    return LoaderWorkers(
        role=WORKER_ROLE,
        processes=len(measured),
        found=len(found),
        loading_ns=loading,
        lifetime_ns=lifetime,
        busy=loading / lifetime,
        least=min(shares),
        most=max(shares),
    ), None


__all__ = [
    "DATA_WAIT_LARGE", "DATA_WAIT_SMALL", "PARTS", "WORKERS_IDLE", "WORKERS_SATURATED", "loader_workers",
    "loading_ns", "step_parts", "step_paths", "verdict",
]
