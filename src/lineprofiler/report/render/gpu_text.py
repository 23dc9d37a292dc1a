"""DOMINANT PHASES' GPU parts in text (``phase(name, gpu=True)``): the ``gpu`` column, the GPU's
idle time between steps per role, and the pairs not counted. All of it appears only where some
process measured GPU time (or asked for it and could not): other runs print what they always did."""

from __future__ import annotations

from .. import format as fmt
from ..model import Dominant, DominantPhase

#: How the idle time is derived, printed once above the roles' lines.
IDLE_HOW = "step wall minus the GPU time of the outermost gpu=True phases in it"


def shown(dominant: Dominant) -> bool:
    return any(phase.gpu_ns is not None for phase in dominant.phases)


def cell(phase: DominantPhase) -> str:
    return f"{fmt.duration(phase.gpu_ns) if phase.gpu_ns is not None else '-':>10}"


def lines(dominant: Dominant) -> list[str]:
    """The lines under the table: idle time between steps, pairs not counted, or why no GPU time."""
    if dominant.gpu_note is not None:
        return [f"  gpu=True phases have no GPU time: {dominant.gpu_note}"]
    if not shown(dominant):
        return []
    out = []
    if dominant.gpu_idle:
        out.append(f"  GPU idle between steps ({IDLE_HOW}):")
        for idle in dominant.gpu_idle:
            head = f"    {fmt.printable(idle.role)}  {fmt.printable(idle.step)} {fmt.duration(idle.step_wall_ns)} wall"
            head += f", GPU {fmt.duration(idle.gpu_ns)}"
            if idle.idle_ns is None:
                out.append(f"{head}, idle not known: {idle.reason}")
            else:
                share = idle.idle_ns / idle.step_wall_ns if idle.step_wall_ns else None
                out.append(f"{head}, idle {fmt.duration(idle.idle_ns)} ({fmt.percent(share, 0)})")
    pending = sum(p.gpu.pending for p in dominant.phases if p.gpu is not None)
    dropped = sum(p.gpu.dropped for p in dominant.phases if p.gpu is not None)
    if pending or dropped:
        parts = []
        if pending:
            parts.append(f"{fmt.count(pending)} event pair{'s' if pending != 1 else ''} still pending at the end")
        if dropped:
            parts.append(f"{fmt.count(dropped)} dropped (the event pool was full)")
        out.append(f"  gpu: {' and '.join(parts)}: not in the gpu column")
    return out
