"""GPU time per phase on DOMINANT PHASES (``phase(name, gpu=True)``, docs/gpu.md): each row's
``gpu_ns`` or why there is none, and per role the GPU's idle time between steps."""

from __future__ import annotations

from ...model import DominantPhase
from ...model_gpu import PhaseGpuCounts, StepGpuIdle
from ...read.gpu_phases import RoleGpuPhases, role_gpu_phases
from ...read.run import RoleStats, Run

#: A row of a role that measured GPU time, whose phase was not opened with gpu=True.
NOT_GPU_PHASE = "not a gpu=True phase"
#: The phase whose entries are a role's steps (what ``auto="torch"`` records).
STEP_PHASE = "step"


def gpu_by_role(run: Run) -> dict[str, RoleGpuPhases]:
    return {name: role_gpu_phases(role) for name, role in run.roles.items()}


def fill_row(row: DominantPhase, gpu: RoleGpuPhases) -> None:
    """Set a DOMINANT PHASES row's ``gpu_ns``, ``gpu`` and ``gpu_reason``."""
    sums = gpu.phases.get(row.path)
    if sums is not None:
        row.gpu_ns = sums[0]
        row.gpu = PhaseGpuCounts(pairs=sums[1], dropped=sums[2], pending=sums[3])
    else:
        row.gpu_reason = NOT_GPU_PHASE if gpu.measured else gpu.reason()


def gpu_note(gpu: dict[str, RoleGpuPhases]) -> str | None:
    """Why no role has GPU time although some process entered a gpu=True phase; None otherwise."""
    if any(role.measured for role in gpu.values()):
        return None
    reasons = [role.reason() for role in gpu.values() if role.asked]
    return "; ".join(dict.fromkeys(reasons)) if reasons else None


def _step_path(role: RoleStats) -> str | None:
    steps = [path for path, phase in role.phases.items() if phase.leaf == STEP_PHASE and phase.entries]
    return min(steps, key=lambda path: (path.count("/"), path)) if steps else None


def step_idle(role: RoleStats, gpu: RoleGpuPhases) -> StepGpuIdle | None:
    """The GPU's idle time between ``role``'s steps; None where it has no step phase or no GPU
    time at or under it."""
    step = _step_path(role)
    if step is None or not gpu.phases:
        return None
    inside = sorted(path for path in gpu.phases if path == step or path.startswith(step + "/"))
    # The outermost only: a gpu=True phase inside another is already in that one's time.
    outer = [path for path in inside if not any(path.startswith(o + "/") for o in inside if o != path)]
    if not outer:
        return None
    gpu_ns = sum(gpu.phases[path][0] for path in outer)
    dropped = sum(gpu.phases[path][2] for path in outer)
    wall = role.phases[step].wall_ns
    if dropped:
        reason = f"{dropped} event pair{'s' if dropped != 1 else ''} dropped (the pool was full): GPU time short"
        return StepGpuIdle(role.name, step, wall, gpu_ns, None, reason, outer)
    return StepGpuIdle(role.name, step, wall, gpu_ns, max(0, wall - gpu_ns), None, outer)
