"""The report's model of a training loop's step (``Role.step_parts``): what share of the step
each part took (as ``auto="torch"`` names them: ``data_wait``, ``forward``, ``backward``,
``optimizer``, ``zero_grad``), how busy the DataLoader workers feeding it were, and what the two
together say about the bottleneck; and the collectives issued inside those parts that no phase
names (``Role.collectives``). Kept apart from :mod:`.model`, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass

#: The verdicts (``StepParts.verdict``): the loader is the bottleneck (data_wait is large and
#: the workers are saturated); data_wait is large while the workers idle (the wait is elsewhere);
#: data_wait is large and no worker was recorded; data_wait is small (compute leads).
LOADER_BOUND = "loader_bound"
WAIT_ELSEWHERE = "wait_elsewhere"
NO_WORKERS = "no_workers"
COMPUTE_BOUND = "compute_bound"


@dataclass
class StepPart:
    """One phase directly under ``step``, summed over the role's processes."""

    name: str
    #: Its wall time, entries still open included.
    wall_ns: int
    #: ``wall_ns`` over the steps' wall time.
    share: float


@dataclass
class LoaderWorkers:
    """The DataLoader workers (role ``dataloader``) whose parent is one of the role's processes:
    how much of their own lifetime they spent loading (``fetch`` and ``collate``)."""

    role: str
    #: Workers counted, of those found (a worker whose lifetime is not known is left out).
    processes: int
    found: int
    #: ``fetch`` + ``collate`` wall time, and the workers' lifetimes, summed.
    loading_ns: int
    lifetime_ns: int
    #: Loading over lifetime: over all of them, and of the least and the most busy one.
    busy: float
    least: float
    most: float


@dataclass
class StepParts:
    """A role's ``step`` phases (every path ending in ``step`` with a part under it) and their
    parts, as shares of the steps' wall time; ``other`` is the step's own time, in no part."""

    paths: list[str]
    #: Closed entries of the steps, and their wall time with the open ones'.
    steps: int
    wall_ns: int
    #: auto="torch"'s parts in the loop's order, then the program's own phases, most first.
    parts: list[StepPart]
    other: float
    #: None: ``workers_reason`` says why they were not measured.
    workers: LoaderWorkers | None
    workers_reason: str | None
    #: One of the kinds above; None where the numbers support no verdict.
    verdict: str | None
    #: The part other than data_wait with the largest share (None: no such part).
    leading: str | None

    def share(self, name: str) -> float | None:
        """The share of part ``name``; None where the steps have no such part."""
        return next((p.share for p in self.parts if p.name == name), None)


@dataclass
class UnphasedOp:
    """One op's collectives outside ``collective/<op>`` phases, summed over the role's processes."""

    op: str
    calls: int
    #: The inputs' bytes of the calls whose dtypes are known (``unsized_calls`` are not in it).
    bytes: int
    unsized_calls: int
    #: The summed duration of the ``timed_calls`` torch timed (NCCL with timing on); None: none.
    duration_ns: int | None
    timed_calls: int


@dataclass
class UnphasedCollectives:
    """The collectives ``auto="torch"``'s wrappers did not time (DistributedDataParallel's gradient
    all-reduce, its start-up broadcasts), from torch's flight recorder: their time is inside the
    phase that issued them (DDP's: ``step/backward``)."""

    source: str
    #: The role's processes that read a recorder.
    processes: int
    #: Most calls first.
    ops: list[UnphasedOp]
    #: Entries not counted: overwritten in the ring before they were read, or not told apart.
    dropped: int
    #: Why a process could not read its recorder, each reason once.
    unavailable: list[str]


__all__ = [
    "COMPUTE_BOUND", "LOADER_BOUND", "NO_WORKERS", "WAIT_ELSEWHERE", "LoaderWorkers", "StepPart", "StepParts",
    "UnphasedCollectives", "UnphasedOp",
]
