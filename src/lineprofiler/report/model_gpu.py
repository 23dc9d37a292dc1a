"""The report's model of GPU time per phase (``phase(name, gpu=True)``): the counts behind a
DOMINANT PHASES row's ``gpu_ns`` and, per role, the GPU's idle time between steps. Kept apart
from :mod:`.model` so each file holds one part."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PhaseGpuCounts:
    """The CUDA event pairs behind a phase's GPU time, summed over its role's processes:
    measured (in ``gpu_ns``), dropped (the pool was full at entry) and still pending at each
    process's last snapshot (not in ``gpu_ns``)."""

    pairs: int
    dropped: int
    pending: int


@dataclass
class StepGpuIdle:
    """One role's steps against the GPU time within them: ``idle_ns`` is the steps' wall time
    minus the GPU time of the outermost ``gpu=True`` phases at or under the step phase (each
    pair's time runs from its start event to its end event on the GPU). None, with ``reason``,
    where pairs were dropped: the GPU time would be short and the idle time too long."""

    role: str
    step: str
    step_wall_ns: int
    gpu_ns: int
    idle_ns: int | None
    reason: str | None
    #: The gpu=True phases whose time was summed.
    phases: list[str]
