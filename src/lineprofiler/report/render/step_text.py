"""The report's lines about a training loop's step, for the text and the HTML alike:
``trainer step parts: data_wait 31% · forward 22% · ... · other 5% — <what the numbers say>``,
and the collectives no phase names (DDP's gradient all-reduce, from torch's flight recorder)."""

from __future__ import annotations

from .. import format as fmt
from ..model import Role
from ..model_steps import COMPUTE_BOUND, LOADER_BOUND, NO_WORKERS, WAIT_ELSEWHERE, LoaderWorkers, StepParts, UnphasedOp

#: Workers whose busy shares are this close are "each busy N%"; further apart, a range.
EACH_WITHIN = 0.05
#: A part under this rounds to 0%: it reads ``<1%`` (``other`` under it is left out).
SHOWN_FROM = 0.005


def workers_text(workers: LoaderWorkers) -> str:
    """``2 dataloader workers, each busy 96% of their wall time``."""
    n = workers.processes
    noun = f"{fmt.count(n)} {fmt.printable(workers.role)} worker{'s' if n != 1 else ''}"
    if n == 1:
        return f"{noun}, busy {fmt.percent(workers.busy, 0)} of its wall time"
    if workers.most - workers.least <= EACH_WITHIN:
        return f"{noun}, each busy {fmt.percent(workers.busy, 0)} of their wall time"
    return f"{noun}, busy {fmt.percent(workers.least, 0)} to {fmt.percent(workers.most, 0)} of their wall time"


def judgement(steps: StepParts) -> str:
    """What the numbers support, and the workers' figure or why there is none."""
    workers = steps.workers
    leading = steps.share(steps.leading) if steps.leading is not None else None
    if steps.verdict == LOADER_BOUND and workers is not None:
        return f"the loader is the bottleneck: {workers_text(workers)} (more num_workers, or a cheaper __getitem__)"
    if steps.verdict == WAIT_ELSEWHERE and workers is not None:
        return (
            f"the workers are not the bottleneck: {workers_text(workers)}; the wait is elsewhere "
            "(pin_memory, the copy to the device, too few batches prefetched)"
        )
    if steps.verdict == NO_WORKERS:
        return (
            f"the loader is not measured: {steps.workers_reason}; with num_workers=0 the batches "
            "are loaded inside data_wait, in this process"
        )
    said = ""
    if steps.verdict == COMPUTE_BOUND and steps.leading is not None:
        said = f"compute-bound: {fmt.printable(steps.leading)} leads ({fmt.percent(leading, 0)})"
    if steps.share("data_wait") is None:
        return said
    if workers is not None:
        return f"{said}; {workers_text(workers)}" if said else workers_text(workers)
    unmeasured = f"workers not measured: {steps.workers_reason}"
    return f"{said}; {unmeasured}" if said else unmeasured


def share_text(share: float) -> str:
    """``31%``; ``<1%`` for a part that took some time but rounds to none."""
    return "<1%" if 0 < share < SHOWN_FROM else fmt.percent(share, 0)


def step_parts_text(role: Role) -> str | None:
    """The role's step line; None where it has no steps."""
    steps = role.step_parts
    if steps is None:
        return None
    parts = [f"{fmt.printable(p.name)} {share_text(p.share)}" for p in steps.parts]
    if steps.other >= SHOWN_FROM:
        parts.append(f"other {fmt.percent(steps.other, 0)}")
    text = f"{fmt.printable(role.name)} step parts: " + " · ".join(parts)
    said = judgement(steps)
    return f"{text} — {said}" if said else text


def _op_text(row: UnphasedOp) -> str:
    """``all_reduce 12 calls, 199.7 kB`` (with the duration where torch timed them)."""
    calls = f"{fmt.count(row.calls)} call{'s' if row.calls != 1 else ''}"
    text = f"{fmt.printable(row.op)} {calls}, {fmt.size(row.bytes)}"
    if row.unsized_calls:
        text += f" (and {fmt.count(row.unsized_calls)} of an unknown dtype)"
    if row.duration_ns is not None:
        text += f", {fmt.duration(row.duration_ns)} over the {fmt.count(row.timed_calls)} torch timed"
    return text


def collectives_text(role: Role) -> str | None:
    """``trainer collectives not in a phase (issued from C++, as DDP's gradient all-reduce is;
    from torch flight recorder): all_reduce 12 calls, 199.7 kB; their time is inside the phases
    that issued them (DDP's: step/backward)``; None where the role has none."""
    found = role.collectives
    if found is None:
        return None
    ops = " · ".join(_op_text(row) for row in found.ops) or "none counted"
    where = "step/backward" if role.step_parts is not None else "backward"
    text = (
        f"{fmt.printable(role.name)} collectives not in a phase (issued from C++, as DDP's gradient "
        f"all-reduce is; from {fmt.printable(found.source)}): {ops}; their time is inside the phases that issued them "
        f"(DDP's: {where})"
    )
    if found.dropped:
        text += f"; {fmt.count(found.dropped)} more not counted (overwritten before they were read)"
    if found.unavailable:
        text += "; not read in some processes: " + "; ".join(fmt.printable(r) for r in found.unavailable)
    return text


def replaces_split(role: Role) -> bool:
    """The step line says what the role's split line would (the split is of a step)."""
    return role.step_parts is not None and role.split is not None and role.split.parent in role.step_parts.paths


__all__ = ["collectives_text", "judgement", "replaces_split", "share_text", "step_parts_text", "workers_text"]
