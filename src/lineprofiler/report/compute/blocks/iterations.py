"""ITERATIONS: per role, the phase that is its loop (the configured ``window_phase``, else the
loop its phase tree shows) and the distribution of that loop's durations."""

from __future__ import annotations

from ... import format as fmt
from ...model import IterationRole, Iterations
from ...read.run import PhaseStats, RoleStats, Run
from . import RenderOptions
from .phases import buckets

#: The least share of a phase's wall time a child must hold to be taken for its loop: a child
#: entered often but brief (a ``log`` inside each iteration) is not the loop.
LOOP_SHARE_FROM = 0.25
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
    often that holds most of the time its children took and at least :data:`LOOP_SHARE_FROM` of
    its own wall time, while there is one: a trainer's ``epoch`` holds its loop ``epoch/step``,
    even where starting the DataLoader's workers at each epoch's first ``iter()`` takes half the
    epoch. None when the role entered no top-level phase."""
    if configured is not None and _entered(role, configured):
        return configured, "window_phase"
    top = [p for p in role.phases.values() if p.entries > 0 and "/" not in p.path]
    if not top:
        return None
    loop = max(top, key=lambda p: (p.entries, p.wall_ns, p.path))
    why = MOST_ENTERED_TOP
    while True:
        children = [p for p in role.phases.values() if p.path.startswith(loop.path + "/") and p.depth == loop.depth + 1]
        in_children = sum(p.wall_ns for p in children)
        inner = [
            p
            for p in children
            if p.entries > loop.entries
            and 2 * p.wall_ns > in_children
            and p.wall_ns >= LOOP_SHARE_FROM * loop.wall_ns
        ]
        if not inner:
            break
        outer = loop.path
        loop = inner[0]  # holding most of the children's time, it is the only one
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
