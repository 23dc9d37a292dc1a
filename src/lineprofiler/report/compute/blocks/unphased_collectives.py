"""A role's collectives that no phase names, from its worker files' ``auto_torch.process_group``.

``auto="torch"`` times the public ``torch.distributed`` calls as ``collective/<op>``; what went
past them (DistributedDataParallel's gradient all-reduce, from C++) each process read from torch's
flight recorder, per op: calls and bytes, and a duration only where torch timed them. This sums
them over the role's processes; their time is inside the phases that issued them.
"""

from __future__ import annotations

from typing import Any

from ...model_steps import UnphasedCollectives, UnphasedOp
from ...read.run import RoleStats


def _section(document: Any) -> dict[str, Any] | None:
    auto = document.get("auto_torch")
    group = auto.get("process_group") if isinstance(auto, dict) else None
    return group if isinstance(group, dict) else None


def unphased_collectives(role: RoleStats) -> UnphasedCollectives | None:
    """The sum over the role's processes; None where none recorded a collective or lost one."""
    rows: dict[str, UnphasedOp] = {}
    processes = dropped = 0
    source = ""
    unavailable: list[str] = []
    for worker in role.workers:
        group = _section(worker.document)
        if group is None:
            continue
        reason = group.get("unavailable_reason")
        if reason and reason not in unavailable:
            unavailable.append(reason)
        if reason and not group["ops"]:
            continue
        processes += 1
        source = group["source"]
        dropped += group["dropped"]
        for op, found in group["ops"].items():
            row = rows.setdefault(op, UnphasedOp(op, 0, 0, 0, None, 0))
            row.calls += found["calls"]
            row.bytes += found["bytes"]
            row.unsized_calls += found.get("unsized_calls", 0)
            if found.get("duration_ns") is not None:
                row.duration_ns = (row.duration_ns or 0) + found["duration_ns"]
                row.timed_calls += found.get("timed_calls", 0)
    if not rows and not dropped:
        return None
    ops = sorted(rows.values(), key=lambda r: (-r.calls, r.op))
    return UnphasedCollectives(source, processes, ops, dropped, unavailable)


__all__ = ["unphased_collectives"]
