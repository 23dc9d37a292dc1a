"""A role's straggler, told apart from uneven work: who is slower per unit of work, and who just
had more of it.

A role's unit of work is an entry of its loop (the phase ITERATIONS names for it), or, when the
role counts in that loop (``count("samples", n)``), a unit of that counter (its largest). Per
process: the units it did, and its time per unit: the median of its loop entries (from its own
histogram), over the units it counted per entry when it counts. A median, not a mean: one entry
that a busy machine held up 160 ms is not a slow worker. A straggler's time per unit is past
:data:`~..model.STRAGGLER_FROM` times the median of the role's other processes, and past the
histograms' own error (two medians each within ``RELATIVE_ERROR``). A role whose busiest process
is busiest because it got more work (2,048 samples against 1,792, at the same speed) has uneven
work, and no straggler.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ....runfiles import histogram
from ...model import STRAGGLER_FROM, UnevenWork
from ...read.run import PhaseStats, RoleStats, Run, Worker
from .iterations import role_loop, role_window_phase

#: Two histogram medians, each within RELATIVE_ERROR of the value recorded, can differ by this
#: ratio with no difference between them.
HISTOGRAM_BAR = (1.0 + histogram.RELATIVE_ERROR) ** 2


@dataclass
class WorkUnit:
    """What a role's work is counted in, and the bar a straggler must pass."""

    #: ``"entry"`` or ``"counter"``.
    kind: str
    phase: str
    counter: str | None
    bar: float
    #: The role's phase paths that are its loop (the loop's name may be a leaf name).
    paths: frozenset[str]


@dataclass
class Stragglers:
    unit: WorkUnit | None
    #: Per worker (by identity): units of work and time per unit.
    work: dict[int, tuple[int | None, float | None]]
    straggler: Worker | None
    ratio: float | None
    uneven: tuple[Worker, int, Worker, int] | None


def _within(phase: str, paths: frozenset[str]) -> bool:
    return phase in paths or any(phase.startswith(p + "/") for p in paths)


def work_unit(role: RoleStats, run: Run) -> WorkUnit | None:
    """The role's unit of work: a unit of its largest counter counted inside its loop, else an
    entry of the loop; None when the role has no loop."""
    chosen = role_loop(role, role_window_phase(role, run))
    if chosen is None:
        return None
    loop = chosen[0]
    paths = frozenset(p.path for p in role.phases.values() if p.entries and (p.path == loop or p.leaf == loop))
    if loop in role.phases and role.phases[loop].entries:
        paths = frozenset((loop,))
    counted: dict[str, int] = {}
    for (phase, name), total in role.counters.items():
        if phase and _within(phase, paths):
            counted[name] = counted.get(name, 0) + total
    counted = {name: total for name, total in counted.items() if total > 0}
    bar = max(STRAGGLER_FROM, HISTOGRAM_BAR)
    if counted:
        name = min(counted.items(), key=lambda item: (-item[1], item[0]))[0]
        return WorkUnit("counter", loop, name, bar, paths)
    return WorkUnit("entry", loop, None, bar, paths)


def _worker_work(worker: Worker, unit: WorkUnit) -> tuple[int | None, float | None]:
    """``(units of work, time per unit)`` of one process (None where it did none)."""
    stats = PhaseStats(unit.phase)
    for phase in worker.document["phases"]:
        if phase["path"] in unit.paths:
            stats.add(phase)
    median = stats.quantile(0.5)
    if stats.entries <= 0 or median is None:
        return None, None
    if unit.kind == "counter":
        done = sum(
            c["total"]
            for c in worker.document["counters"]
            if c["name"] == unit.counter and _within(c["phase"], unit.paths)
        )
        return (done, median * stats.entries / done) if done > 0 else (None, None)
    return stats.entries, median


def stragglers(role: RoleStats, run: Run) -> Stragglers:
    """Who in ``role`` is slower per unit of work, and whether its work was uneven."""
    unit = work_unit(role, run)
    out = Stragglers(unit, {}, None, None, None)
    if unit is None:
        return out
    workers = role.data_workers
    for worker in workers:
        out.work[id(worker)] = _worker_work(worker, unit)
    timed = [(w, per_unit) for w in workers if (per_unit := out.work[id(w)][1]) is not None]
    if len(timed) >= 2:
        slowest, slowest_per_unit = max(timed, key=lambda item: (item[1], -item[0].pid))
        others = statistics.median(per_unit for w, per_unit in timed if w is not slowest)
        if others > 0:
            out.ratio = slowest_per_unit / others
            if out.ratio > unit.bar:
                out.straggler = slowest
    counted = [(w, done) for w in workers if (done := out.work[id(w)][0]) is not None]
    if len(counted) >= 2:
        most, most_done = max(counted, key=lambda item: (item[1], -item[0].pid))
        fewest, fewest_done = min(counted, key=lambda item: (item[1], item[0].pid))
        if fewest_done > 0 and most_done > fewest_done * STRAGGLER_FROM:
            out.uneven = (most, most_done, fewest, fewest_done)
    return out


def uneven_work(found: Stragglers) -> UnevenWork | None:
    if found.uneven is None:
        return None
    most, most_n, fewest, fewest_n = found.uneven
    return UnevenWork(most=most_n, fewest=fewest_n, most_label=most.label, fewest_label=fewest.label)
