"""Each role's GPU time per phase, from its workers' ``gpu.phase_time`` objects (docs/gpu.md):
summed over the role's processes, with why there is none where no process measured any."""

from __future__ import annotations

from dataclasses import dataclass, field

from .run import RoleStats

#: A worker file without ``gpu.phase_time``: written before it existed (or by a process whose
#: profiler did not wire it).
NOT_RECORDED = "not recorded (written by a lineprofiler without GPU time per phase)"
#: What a file says where the process never entered a gpu=True phase (accounting/gpu_events.py).
NEVER_ENTERED = "no phase(..., gpu=True) was entered in this process"


@dataclass
class RoleGpuPhases:
    """``phases``: path -> [gpu_ns, pairs, dropped, pending], over the processes that measured.
    ``reasons``: why the others did not, each once, in the order first met."""

    phases: dict[str, list[int]] = field(default_factory=dict)
    measured: int = 0
    reasons: list[str] = field(default_factory=list)

    @property
    def asked(self) -> bool:
        """Whether any process entered a gpu=True phase (measured or said why not)."""
        return self.measured > 0 or any(r not in (NEVER_ENTERED, NOT_RECORDED) for r in self.reasons)

    def reason(self) -> str:
        """Why the role has no GPU time: the reasons of the processes that asked, else the rest."""
        asked = [r for r in self.reasons if r not in (NEVER_ENTERED, NOT_RECORDED)]
        return "; ".join(asked or self.reasons or [NOT_RECORDED])


def role_gpu_phases(role: RoleStats) -> RoleGpuPhases:
    out = RoleGpuPhases()
    for worker in role.data_workers:
        gpu = worker.document["gpu"] if "gpu" in worker.document else None
        phase_time = gpu.get("phase_time") if isinstance(gpu, dict) else None
        if not isinstance(phase_time, dict):
            reason = NOT_RECORDED
        elif phase_time["available"]:
            out.measured += 1
            for row in phase_time["phases"]:
                sums = out.phases.setdefault(row["path"], [0, 0, 0, 0])
                for i, key in enumerate(("gpu_ns", "pairs", "dropped", "pending")):
                    sums[i] += row[key]
            continue
        else:
            reason = phase_time.get("unavailable_reason") or "not measured"
        if reason not in out.reasons:
            out.reasons.append(reason)
    return out
