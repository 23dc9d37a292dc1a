"""DOMINANT PHASES (the ``(role, phase)`` rows with the most self time, their percentiles,
histograms, counters and why their threads were not running: the off-CPU split of the phase and
the phases under it, from :func:`.cpu.run_cpu`) and COUNTERS (the counters under every other phase)."""

from __future__ import annotations

from ....runfiles import histogram
from ...model import Bucket, Counter, CounterGroup, Counters, Dominant, DominantPhase
from ...read.run import PhaseStats, RoleStats, Run
from . import RenderOptions
from .cpu import run_cpu
from .gpu_time import fill_row, gpu_by_role, gpu_note, step_idle

#: How many ``(role, phase)`` rows DOMINANT PHASES holds.
DOMINANT_ROWS = 10


def buckets(hist: dict[int, int]) -> list[Bucket]:
    """The non-empty buckets of a merged histogram, shortest first."""
    out = []
    for index, count in sorted(hist.items()):
        if count > 0:
            low, high = histogram.bucket_bounds(index)
            out.append(Bucket(index, low, high, count))
    return out


def counter(
    name: str, path: str, total: int, phase: PhaseStats | None, lifetime_ns: int, spread: tuple[int, int] | None = None
) -> Counter:
    """A counter's rate. Under a phase, per second of that phase's wall time summed over the
    role's processes, and time-each is that wall time over the total: what one simulation
    inside ``mcts`` costs. With no phase, per second of the role's process lifetime. ``spread``:
    the least and most one ``count()`` added."""
    if phase is not None:
        wall = phase.wall_ns
        per_s = total / (wall / 1e9) if wall > 0 else None
        each = wall / total if total > 0 and wall > 0 else None
        return Counter(name, path, total, per_s, each, "phase", spread)
    per_s = total / (lifetime_ns / 1e9) if lifetime_ns > 0 else None
    return Counter(name, path, total, per_s, None, "lifetime", spread)


def _dominant_rows(run: Run) -> list[tuple[RoleStats, PhaseStats]]:
    rows = [(role, phase) for role in run.roles.values() for phase in role.phases.values() if phase.self_ns > 0]
    rows.sort(key=lambda rp: (-rp[1].self_ns, rp[0].name, rp[1].path))
    return rows[:DOMINANT_ROWS]


def dominant(run: Run, options: RenderOptions) -> Dominant | None:
    rows = _dominant_rows(run)
    if not rows:
        return None
    phases = []
    cpus = run_cpu(run, options)
    gpu = gpu_by_role(run)
    for role, phase in rows:
        split, why = cpus.split(role.data_workers, phase.path, phase.processes)
        counters = [
            counter(name, path, total, phase, role.lifetime_ns, role.counter_spread.get((path, name)))
            for (path, name), total in sorted(role.counters.items())
            if path == phase.path
        ]
        phases.append(
            DominantPhase(
                role=role.name,
                path=phase.path,
                entries=phase.entries,
                self_ns=phase.self_ns,
                wall_ns=phase.wall_ns,
                wait=phase.wait_fraction,
                mean_ns=phase.mean_ns,
                min_ns=phase.min_ns,
                max_ns=phase.max_ns,
                p50_ns=phase.quantile(0.50),
                p95_ns=phase.quantile(0.95),
                p99_ns=phase.quantile(0.99),
                histogram=buckets(phase.hist),
                counters=counters,
                off_cpu=split,
                off_cpu_reason=why,
            )
        )
        fill_row(phases[-1], gpu[role.name])
    idle = [step_idle(role, gpu[role.name]) for role in run.roles.values()]
    return Dominant(
        several_roles=len(run.roles) > 1,
        phases=phases,
        gpu_idle=[i for i in idle if i is not None],
        gpu_note=gpu_note(gpu),
    )


def counters(run: Run, options: RenderOptions) -> Counters | None:
    """Counters whose phase is not a row of DOMINANT PHASES, grouped under their phase."""
    shown = {(role.name, phase.path) for role, phase in _dominant_rows(run)}
    groups = []
    for role in run.roles.values():
        by_phase: dict[str, list[tuple[str, int]]] = {}
        for (path, name), total in sorted(role.counters.items()):
            if (role.name, path) not in shown:
                by_phase.setdefault(path, []).append((name, total))
        for path, items in sorted(by_phase.items(), key=lambda item: (item[0] == "", item[0])):
            phase = role.phases.get(path) if path else None
            rows = [
                counter(name, path, total, phase, role.lifetime_ns, role.counter_spread.get((path, name)))
                for name, total in items
            ]
            groups.append(CounterGroup(role.name, path, rows))
    if not groups:
        return None
    return Counters(several_roles=len(run.roles) > 1, groups=groups)
