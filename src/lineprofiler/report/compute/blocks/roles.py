"""Who ran: the header's model (the run's name, span, processes, hosts and ranks, and the
attempts it names without merging them: superseded, concurrent, merged by time), and one model
per role (its processes, imbalance, busiest process, straggler or uneven work, time in phases and
phase shares, each phase named by its shortest unambiguous suffix, and a training loop's step
parts, :mod:`.step_parts`)."""

from __future__ import annotations

from ... import format as fmt
from ...model import STRAGGLER_FROM, Attempt, Header, PhaseShare, Process, Role, Source, Split
from ...read.run import AttemptSummary, RoleStats, Run, Worker
from ...wording import short_names
from . import RenderOptions
from .step_parts import step_parts
from .stragglers import stragglers, uneven_work
from .unphased_collectives import unphased_collectives


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
        sources=sources(run),
    )


def sources(run: Run) -> list[Source]:
    """The distinct source commits the worker files recorded (``source``), most processes first."""
    seen: dict[tuple[str, int | None, str | None], tuple[int, set[str]]] = {}
    for worker in run.workers:
        source = worker.document.get("source")
        if not isinstance(source, dict) or not isinstance(source.get("commit"), str):
            continue
        key = (source["commit"], source.get("dirty_files"), source.get("diff_sha"))
        count, roles = seen.get(key, (0, set()))
        seen[key] = (count + 1, roles | {worker.role})
    ordered = sorted(seen.items(), key=lambda item: (-item[1][0], item[0][0]))
    return [Source(commit, dirty, sha, sorted(roles)) for (commit, dirty, sha), (_, roles) in ordered]


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


def _role(role: RoleStats, run: Run) -> Role:
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
    found = stragglers(role, run)
    members = []
    straggler = busiest = None
    for worker in role.workers:
        if worker.forked_unprofiled:
            continue
        member = process(worker)
        member.work, member.per_unit_ns = found.work.get(id(worker), (None, None))
        members.append(member)
        if worker is found.straggler:
            straggler = member
        if worker is slowest:
            busiest = member
    unit = found.unit
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
        busiest=busiest,
        members=members,
        unprofiled=unprofiled,
        unit=unit.kind if unit is not None else None,
        unit_phase=unit.phase if unit is not None else None,
        unit_counter=unit.counter if unit is not None else None,
        straggler_bar=unit.bar if unit is not None else STRAGGLER_FROM,
        straggler=straggler,
        straggler_ratio=found.ratio,
        uneven_work=uneven_work(found),
        split=first_split(role),
        step_parts=step_parts(role, run),
        collectives=unphased_collectives(role),
    )


#: 0.10.0 left out an ``Other`` share under a tenth of a percent.
OTHER_FROM = 0.001


def first_split(role: RoleStats) -> Split | None:
    """Down from a single top-level phase through phases with one child each, the first whose
    time divides among two or more children: their shares of its wall time, and ``Other``, the
    time it held in none of them. None where the top level itself has several phases (the role
    block lists them) or no phase divides."""
    def children(prefix: str) -> list[str]:
        return [p for p in role.phases if p.startswith(prefix + "/") and "/" not in p[len(prefix) + 1 :]]

    tops = [p for p in role.phases if "/" not in p]
    if len(tops) != 1:
        return None
    parent = tops[0]
    below = children(parent)
    while len(below) == 1:
        parent, below = below[0], children(below[0])
    stats = role.phases[parent]
    if len(below) < 2 or stats.wall_ns <= 0:
        return None
    shares = sorted(((p.rsplit("/", 1)[1], role.phases[p].wall_ns / stats.wall_ns) for p in below), key=lambda s: -s[1])
    other = max(stats.self_ns, 0) / stats.wall_ns
    return Split(parent, shares, other if other > OTHER_FROM else 0.0)


def roles(run: Run, options: RenderOptions) -> list[Role]:
    blocks = [_role(role, run) for role in run.roles.values()]
    open_entries = sum(p.open_entries for role in run.roles.values() for p in role.phases.values())
    if open_entries:
        options.add_caveat(
            f"{fmt.count(open_entries)} phase entr{'y was' if open_entries == 1 else 'ies were'} still open at "
            "the last snapshot: the role blocks count their time so far; DOMINANT PHASES, wait% and the "
            "percentiles cover closed entries only"
        )
    return blocks
