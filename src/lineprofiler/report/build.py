"""From a merged run to the report's model: every block's numbers, computed once.

:func:`build_report` runs the blocks of :data:`BLOCKS` in order. Each is
``compute(run, options) -> model`` (``None`` or ``[]``: the block is absent); a block that
raises costs that block only: it is named under CAVEATS and the rest is computed. The
header, role, phase, counter and iteration blocks are computed here; the resource blocks in
``blocks/resources.py`` and the GPU block in ``blocks/gpu.py``. The renderers (text, JSON,
HTML) then format the same :class:`~.model.Report`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..runfiles import histogram
from . import format as fmt
from . import timeline
from .blocks import RenderOptions, gpu, lines, resources
from .model import (
    Attempt,
    Bucket,
    Counter,
    CounterGroup,
    Counters,
    Dominant,
    DominantPhase,
    Header,
    IterationRole,
    Iterations,
    PhaseShare,
    Process,
    Report,
    Role,
)
from .run import AttemptSummary, PhaseStats, RoleStats, Run, Worker
from .wording import short_names

#: How many ``(role, phase)`` rows DOMINANT PHASES holds.
DOMINANT_ROWS = 10


# -- header ----------------------------------------------------------------------------------------


def attempt(summary: AttemptSummary) -> Attempt:
    """An attempt the header names, as the model holds it."""
    return Attempt(
        name=summary.name,
        run_id=summary.run_id,
        attempt=summary.attempt,
        files=summary.files,
        roles=dict(sorted(summary.roles.items())),
        start_ns=summary.start_ns,
        end_ns=summary.end_ns,
        span_ns=summary.span_ns,
        status=summary.status,
        merged=list(summary.merged),
    )


def header(run: Run, options: RenderOptions) -> Header:
    return Header(
        run_dir=str(run.run_dir),
        run=run.name,
        run_id=run.run_id,
        attempt=run.attempt,
        runtime_ns=run.runtime_ns,
        start_ns=run.start_ns,
        end_ns=run.end_ns,
        processes=len(run.workers),
        roles={role.name: len(role.workers) - len(role.unprofiled_workers) for role in run.roles.values()},
        hosts=run.hosts,
        ranks=run.ranks,
        job_ids=run.job_ids,
        launchers=sorted({w.launcher for w in run.workers if w.launcher}),
        superseded=[attempt(a) for a in run.superseded],
        concurrent=[attempt(a) for a in run.concurrent],
        merged=[attempt(a) for a in run.merged],
        status=run.status,
        newest=attempt(run.newest) if run.newest is not None else None,
        unprofiled={role.name: n for role in run.roles.values() if (n := len(role.unprofiled_workers))},
    )


# -- roles -----------------------------------------------------------------------------------------


def process(worker: Worker) -> Process:
    return Process(
        label=worker.label,
        role=worker.role,
        host=worker.host,
        pid=worker.pid,
        rank=worker.rank,
        busy_ns=worker.busy_ns,
        lifetime_ns=worker.elapsed_ns,
        has_data=worker.has_data,
    )


def _role(role: RoleStats) -> Role:
    total = role.phase_time_ns
    # Entries still open at a worker's last snapshot count with their time so far (a process
    # killed four hours into a phase still shows those hours).
    ranked = sorted(
        (p for p in role.phases.values() if p.self_with_open_ns > 0), key=lambda p: (-p.self_with_open_ns, p.path)
    )
    phases: list[PhaseShare] = []
    if ranked and total > 0:
        names = short_names([p.path for p in ranked])
        phases = [
            PhaseShare(p.path, names[p.path], p.self_with_open_ns, p.self_with_open_ns / total, p.open_entries)
            for p in ranked
        ]
    slowest = role.slowest
    lifetime = role.lifetime_ns
    unprofiled = len(role.unprofiled_workers)
    return Role(
        name=role.name,
        processes=len(role.workers) - unprofiled,
        without_data=len(role.workers) - unprofiled - len(role.data_workers),
        imbalance=role.imbalance,
        phase_time_ns=total,
        busy_ns=role.busy_ns,
        lifetime_ns=lifetime,
        mean_busy_ns=role.mean_busy_ns,
        busy_fraction=role.busy_fraction,
        phases=phases,
        busiest=process(slowest) if slowest is not None else None,
        members=[process(w) for w in role.workers if not w.forked_unprofiled],
        unprofiled=unprofiled,
    )


def roles(run: Run, options: RenderOptions) -> list[Role]:
    blocks = [_role(role) for role in run.roles.values()]
    open_entries = sum(p.open_entries for role in run.roles.values() for p in role.phases.values())
    if open_entries:
        options.add_caveat(
            f"{fmt.count(open_entries)} phase entr{'y was' if open_entries == 1 else 'ies were'} still open at "
            "the last snapshot: the role blocks count their time so far; DOMINANT PHASES, wait% and the "
            "percentiles cover closed entries only"
        )
    return blocks


# -- dominant phases and counters ------------------------------------------------------------------


def buckets(hist: dict[int, int]) -> list[Bucket]:
    """The non-empty buckets of a merged histogram, shortest first."""
    out = []
    for index, count in sorted(hist.items()):
        if count > 0:
            low, high = histogram.bucket_bounds(index)
            out.append(Bucket(index, low, high, count))
    return out


def counter(name: str, path: str, total: int, phase: PhaseStats | None, lifetime_ns: int) -> Counter:
    """A counter's rate. Under a phase, per second of that phase's wall time summed over the
    role's processes, and time-each is that wall time over the total: what one simulation
    inside ``mcts`` costs. With no phase, per second of the role's process lifetime."""
    if phase is not None:
        wall = phase.wall_ns
        per_s = total / (wall / 1e9) if wall > 0 else None
        each = wall / total if total > 0 and wall > 0 else None
        return Counter(name, path, total, per_s, each, "phase")
    per_s = total / (lifetime_ns / 1e9) if lifetime_ns > 0 else None
    return Counter(name, path, total, per_s, None, "lifetime")


def _dominant_rows(run: Run) -> list[tuple[RoleStats, PhaseStats]]:
    rows = [(role, phase) for role in run.roles.values() for phase in role.phases.values() if phase.self_ns > 0]
    rows.sort(key=lambda rp: (-rp[1].self_ns, rp[0].name, rp[1].path))
    return rows[:DOMINANT_ROWS]


def dominant(run: Run, options: RenderOptions) -> Dominant | None:
    rows = _dominant_rows(run)
    if not rows:
        return None
    phases = []
    for role, phase in rows:
        counters = [
            counter(name, path, total, phase, role.lifetime_ns)
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
            )
        )
    return Dominant(several_roles=len(run.roles) > 1, phases=phases)


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
            rows = [counter(name, path, total, phase, role.lifetime_ns) for name, total in items]
            groups.append(CounterGroup(role.name, path, rows))
    if not groups:
        return None
    return Counters(several_roles=len(run.roles) > 1, groups=groups)


# -- iterations ------------------------------------------------------------------------------------


#: Why a role's loop was picked when no ``window_phase`` names it.
MOST_ENTERED_TOP = "the most-entered top-level phase"


def _entered(role: RoleStats, name: str) -> bool:
    return any(p.entries for path, p in role.phases.items() if path == name or p.leaf == name)


def role_window_phase(role: RoleStats, run: Run) -> str | None:
    """The ``window_phase`` most of the role's processes were configured with; for a role whose
    profilers set none, the run's, when the role entered it (a learner's ``window_phase``
    "iteration" names the actors' "iteration" too, but says nothing about a role without one)."""
    names: dict[str, int] = {}
    for worker in role.workers:
        config = worker.document.get("config")
        name = config.get("window_phase") if isinstance(config, dict) else None
        if isinstance(name, str):
            names[name] = names.get(name, 0) + 1
    if names:
        return min(names.items(), key=lambda item: (-item[1], item[0]))[0]
    configured = run.window_phase
    return configured if configured is not None and _entered(role, configured) else None


def role_loop(role: RoleStats, configured: str | None) -> tuple[str, str] | None:
    """``(phase, why)``: the role's own loop. The configured ``window_phase`` if the role entered
    it; else its most-entered top-level phase, and from there down into a child entered more
    often that holds at least half its wall time, while there is one: a trainer's ``epoch`` holds
    its loop ``epoch/step``. None when the role entered no top-level phase."""
    if configured is not None and _entered(role, configured):
        return configured, "window_phase"
    top = [p for p in role.phases.values() if p.entries > 0 and "/" not in p.path]
    if not top:
        return None
    loop = max(top, key=lambda p: (p.entries, p.wall_ns, p.path))
    why = MOST_ENTERED_TOP
    while True:
        inner = [
            p
            for p in role.phases.values()
            if p.path.startswith(loop.path + "/")
            and p.depth == loop.depth + 1
            and p.entries > loop.entries
            and 2 * p.wall_ns >= loop.wall_ns
        ]
        if not inner:
            break
        outer = loop.path
        loop = max(inner, key=lambda p: (p.entries, p.wall_ns, p.path))
        why = f"the loop inside {fmt.printable(outer)!r}, {MOST_ENTERED_TOP}" if why == MOST_ENTERED_TOP else why
    if configured is not None:
        why += f"; window_phase {fmt.printable(configured)!r} was never entered"
    return loop.path, why


def iteration_phase(run: Run) -> tuple[str, str] | None:
    """``(phase, why)`` of the first role that entered a phase (see :func:`role_loop`)."""
    for role in run.roles.values():
        chosen = role_loop(role, role_window_phase(role, run))
        if chosen is not None:
            return chosen
    return None


def _matching(role: RoleStats, name: str) -> PhaseStats | None:
    exact = role.phases.get(name)
    candidates = [exact] if exact is not None else [p for p in role.phases.values() if p.leaf == name]
    candidates = [p for p in candidates if p.entries > 0]
    if not candidates:
        return None
    merged = PhaseStats(name)
    for phase in candidates:
        merged.merge(phase)
    return merged


def iterations(run: Run, options: RenderOptions) -> Iterations | None:
    """Per role, the iterations of its own loop: a DataLoader worker's many ``getitem`` entries
    do not stand for the trainer's steps."""
    per_role = []
    for role in run.roles.values():
        chosen = role_loop(role, role_window_phase(role, run))
        if chosen is None:
            continue
        name, why = chosen
        stats = _matching(role, name)
        if stats is not None:
            per_role.append(
                IterationRole(
                    role=role.name,
                    phase=name,
                    why=why,
                    entries=stats.entries,
                    mean_ns=stats.mean_ns,
                    p50_ns=stats.quantile(0.50),
                    p95_ns=stats.quantile(0.95),
                    p99_ns=stats.quantile(0.99),
                    histogram=buckets(stats.hist),
                )
            )
    if not per_role:
        return None
    return Iterations(phase=per_role[0].phase, why=per_role[0].why, roles=per_role)


# -- the report ------------------------------------------------------------------------------------

Compute = Callable[[Run, RenderOptions], Any]

#: ``(origin, name, Report attribute, compute)`` in the order the blocks print. CAVEATS names a
#: failed block by ``origin`` and ``name``.
BLOCKS: tuple[tuple[str, str, str, Compute], ...] = (
    ("core", "render_header", "header", header),
    ("core", "render_roles", "roles", roles),
    ("core", "render_dominant", "dominant", dominant),
    ("core", "render_counters", "counters", counters),
    ("core", "render_iterations", "iterations", iterations),
    ("lines", "lines_block", "lines", lines.lines_block),
    ("resources", "render_io_by_phase", "io_by_phase", resources.io_by_phase),
    ("resources", "render_io", "io", resources.sampled_io),
    ("resources", "render_memory", "memory", resources.memory),
    ("gpu", "render", "gpu", gpu.gpu_block),
    ("timeline", "timeline_block", "timeline", lambda run, options: timeline.timeline_block(run, options)),
    ("timeline", "lanes", "lanes", lambda run, options: timeline.lanes(run, options)),
)


def failure_line(origin: str, name: str, error: Exception) -> str:
    """The CAVEATS line of a block that raised."""
    return f"the {origin} block {name} failed and is missing: {error.__class__.__name__}: {error}"


def build_report(run: Run, options: RenderOptions | None = None) -> Report:
    """Every block's model over ``run``; CAVEATS last, merge's lines then the blocks'."""
    options = options if options is not None else RenderOptions(no_samples=run.no_samples)
    report = Report()
    for origin, name, attribute, compute in BLOCKS:
        try:
            value = compute(run, options)
        except Exception as error:
            if os.environ.get("LINEPROFILER_DEBUG"):
                raise
            options.add_caveat(failure_line(origin, name, error))
            report.failed.append(f"{origin} {name}")
            continue
        if value is not None:
            setattr(report, attribute, value)
    report.caveats = list(run.caveats) + list(options.caveats)
    return report


__all__ = [
    "BLOCKS",
    "DOMINANT_ROWS",
    "attempt",
    "build_report",
    "buckets",
    "counter",
    "counters",
    "dominant",
    "failure_line",
    "header",
    "iteration_phase",
    "iterations",
    "process",
    "role_loop",
    "role_window_phase",
    "roles",
]
