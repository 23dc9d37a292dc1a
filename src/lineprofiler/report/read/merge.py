"""Merge the worker files of a run into one object the report's blocks render.

What this module decides (docs/report.md says the same for users):

* **Attempts** (:mod:`.attempts`). The worker files of a run directory are grouped by
  ``(run_id, attempt)`` and the groups are told apart by time: the newest attempt is merged,
  with every group of generated ids whose lifetime overlaps it; another job's explicit id
  overlapping it is *concurrent* and an attempt that ended before it began is *superseded*:
  both named in the report, never merged, so a requeued job does not inflate the totals.
  ``load_run(..., attempt=ID)`` merges any other attempt instead.
* **Processes** are counted by worker file, not by pid (pids collide across nodes, and a
  restarted worker reuses its rank but not its file). Files that hold the same process (the
  same pid and uuid: a copied file) count once, from the newest snapshot, with a caveat.
* **Histograms** merge exactly: bucket counts are added; quantiles come from
  :mod:`lineprofiler.runfiles.histogram` over the merged buckets, clamped to the merged
  exact min and max.
* **Busy time** of a process is the sum of its top-level phases' wall time (all threads).
  A role's **imbalance** is the busiest process's busy time over the mean busy time of the
  role's processes that recorded data: 1.00 means even load; 1.50 means the slowest process
  works half again as long as the average one, and the rest wait for it at every sync point.
* **Staleness** is derived here, at report time: a worker whose status is still ``running``
  and whose last flush is more than ``max(3 x its snapshot interval, 10 s)`` before the run's
  end (the newest flush of any worker of the attempt) stopped writing early: killed, hung or
  unable to write. A worker with only its start file (status ``started``) that old was killed
  before any data.

The types are :mod:`.run`'s; one file is read by :mod:`.reading`, attempts are told apart by
:mod:`.attempts`, copies by :mod:`.duplicates`, and the CAVEATS lines come from :mod:`.caveats`.
This module reads only through :mod:`lineprofiler.runfiles.workerfile` and never imports the C modules, so the
report runs on a machine that only has the files. It never loads resource-sample sidecar
files: the blocks that need samples do that themselves, unless ``--no-samples`` was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from ...runfiles import layout, workerfile
from .. import format as fmt
from ..wording import CONCURRENT, FINAL_STATUSES, NEWEST, RESTARTED, SUPERSEDED
from . import attempts as attempts_mod
from . import duplicates as duplicates_mod
from . import parallel

# The ``name as name`` imports are re-exports, defined here first: tests take them from here.
from .caveats import STALE_INTERVALS as STALE_INTERVALS
from .caveats import STALE_MIN_NS as STALE_MIN_NS
from .caveats import derive_caveats, is_stale
from .progress import Progress
from .reading import read_worker
from .reading import worker_from_document as worker_from_document
from .run import PhaseStats, RoleStats, Run, UnreadableFile, Worker

#: Worker files per extra process when they are read in parallel: reading one (parse and
#: validate a 50-phase tree) takes about a millisecond, starting a process tens of them.
FILES_PER_JOB = 64


class ReportError(InputError):
    """Nothing can be reported: ``str()`` is the one line the CLI prints (exit status 2)."""


def _spread(counter: dict[str, Any]) -> tuple[int, int] | None:
    """The least and most one ``count()`` of a process added; None where its file did not
    record them (written before they were kept)."""
    low, high, calls = counter.get("min"), counter.get("max"), counter.get("calls")
    if not isinstance(low, int) or not isinstance(high, int) or not calls:
        return None
    return (low, high)


def _widen(so_far: tuple[int, int] | None, more: tuple[int, int] | None) -> tuple[int, int] | None:
    if so_far is None or more is None:
        return None
    return (min(so_far[0], more[0]), max(so_far[1], more[1]))


def _file_run_component(path: Path) -> str | None:
    """The sanitised run id a worker file's name carries (``w_<run>_<pid>_<uuid8>.json``)."""
    stem = path.name
    if not stem.startswith("w_") or not stem.endswith(".json"):
        return None
    parts = stem[2:-5].rsplit("_", 2)
    return parts[0] if len(parts) == 3 else None


def _collect_detail(run_dir: Path) -> str:
    """What Ray's collect recorded, for a run directory it left without worker files."""
    from ...runfiles import raycollect

    try:
        collect = raycollect.read_collect_file(run_dir)
    except raycollect.CollectFileError:
        return ""
    if collect is None or not collect.caveats:
        return ""
    more = f" (and {len(collect.caveats) - 1} more)" if len(collect.caveats) > 1 else ""
    return f"; Ray's collect recorded: {collect.caveats[0]}{more}"


def load_run(
    run_dir: str | Path, *, no_samples: bool = False, attempt: str | None = None, progress: Progress | None = None
) -> Run:
    """Read every worker file under ``run_dir`` and merge the newest attempt, or the one
    ``attempt`` names (``run_id`` or ``run_id#N``, as the header prints it).

    Raises :class:`ReportError` (one line) when nothing can be reported: the directory is
    missing, is not a directory, cannot be listed, holds no worker files, or none of them
    can be read, or ``attempt`` names none of its attempts. Files that cannot be read
    otherwise cost only themselves: they are listed in ``Run.unreadable`` and named under CAVEATS.
    ``progress`` is told each file read (see :mod:`.progress`).
    """
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise ReportError(f"no such directory: {run_dir}")
    if not run_dir.is_dir():
        raise ReportError(f"not a directory: {run_dir} (give the run directory that holds workers/)")
    try:
        next(iter(run_dir.iterdir()), None)
    except OSError as error:
        raise ReportError(f"cannot read {run_dir}: {error.strerror or error}") from None
    try:
        files, problems = workerfile.scan_worker_files(run_dir)
    except workerfile.WorkerFileError as error:
        raise ReportError(str(error)) from None
    if not files:
        where = run_dir / workerfile.WORKERS_DIR
        detail = f"; {problems[0]}" if problems else _collect_detail(run_dir)
        raise ReportError(f"no worker files under {where} (is {run_dir} a lineprofiler run directory?){detail}")

    workers: list[Worker] = []
    unreadable: list[UnreadableFile] = []
    jobs = parallel.jobs_for(len(files), len(files), FILES_PER_JOB)
    tasks = [(path, no_samples) for path in files]
    reading = f"reading the worker files of {run_dir}"
    for done, read in enumerate(
        parallel.ordered_map(read_worker, tasks, jobs, chunksize=max(1, len(files) // (8 * jobs))), 1
    ):
        if isinstance(read, Worker):
            workers.append(read)
        else:
            unreadable.append(read)
        if progress is not None:
            progress.update(reading, done, len(files))
    if progress is not None:
        progress.update(f"merging {len(workers)} workers of {run_dir}")
    return merge_workers(
        run_dir, workers, unreadable=unreadable, listing_problems=problems, no_samples=no_samples, attempt=attempt
    )


def merge_workers(
    run_dir: Path,
    workers: list[Worker],
    *,
    unreadable: list[UnreadableFile] | None = None,
    listing_problems: list[str] | None = None,
    no_samples: bool = False,
    attempt: str | None = None,
) -> Run:
    """Merge already-read workers: pick the attempt (the newest, or the one ``attempt``
    names), merge its roles, derive CAVEATS.

    Raises :class:`ReportError` when there is no worker to merge or ``attempt`` names none.
    """
    unreadable = list(unreadable or [])
    problems = list(listing_problems or [])
    workers, duplicates = duplicates_mod.drop_duplicates(workers)
    groups = attempts_mod.group_workers(workers)

    if not groups:
        first = unreadable[0].reason if unreadable else "no reason recorded"
        count = len(unreadable)
        raise ReportError(
            f"none of the {count} worker file{'s' if count != 1 else ''} under {run_dir} could be read; "
            f"first: {first}"
        )

    attempts = attempts_mod.partition(groups)
    chosen = attempts[0]
    if attempt is not None:
        found = attempts_mod.select(attempts, attempt)
        if found is None:
            raise ReportError(
                f"no attempt {fmt.printable(attempt.strip())!r} in {run_dir}; "
                f"its attempts: {attempts_mod.known_names(attempts)}"
            )
        chosen = found
    merged = sorted(
        chosen.workers, key=lambda w: (w.role, w.host, -1 if w.rank is None else w.rank, w.pid, w.uuid)
    )
    others = [a.summary() for a in attempts if a is not chosen]
    superseded = sorted(
        (a for a in others if a.status in (SUPERSEDED, RESTARTED)),
        key=lambda a: (a.start_ns, a.attempt, a.run_id),
        reverse=True,
    )
    concurrent = [a for a in others if a.status == CONCURRENT]
    newest = next((a for a in others if a.status == NEWEST), None)
    merged_groups = [
        attempts_mod.Attempt(group, [group], NEWEST).summary() for group in chosen.members[1:]
    ]

    # Unreadable files whose name says they belong to another attempt are not this
    # attempt's loss: count them there instead of under CAVEATS.
    own_components = {layout.sanitize_component(g.run_id) for g in chosen.members}
    other_components = {
        layout.sanitize_component(g.run_id) for a in attempts if a is not chosen for g in a.members
    }
    own_unreadable = []
    for bad in unreadable:
        component = _file_run_component(bad.path)
        if component in other_components and component not in own_components:
            continue
        own_unreadable.append(bad)

    mark_unprofiled_forks(merged)
    roles: dict[str, RoleStats] = {}
    for worker in merged:
        role = roles.get(worker.role)
        if role is None:
            role = roles[worker.role] = RoleStats(worker.role)
        role.workers.append(worker)
        for phase in worker.document["phases"]:
            stats = role.phases.get(phase["path"])
            if stats is None:
                stats = role.phases[phase["path"]] = PhaseStats(phase["path"])
            stats.add(phase)
        for counter in worker.document["counters"]:
            key = (counter["phase"], counter["name"])
            role.counters[key] = role.counters.get(key, 0) + counter["total"]
            spread = _spread(counter)
            if key in role.counter_spread:
                spread = _widen(role.counter_spread[key], spread)
            role.counter_spread[key] = spread
    ordered = dict(sorted(roles.items(), key=lambda item: (-item[1].busy_ns, item[0])))

    run = Run(
        run_dir=run_dir,
        run_id=chosen.primary.run_id,
        attempt=chosen.primary.attempt,
        workers=merged,
        roles=ordered,
        superseded=superseded,
        unreadable=own_unreadable,
        listing_problems=problems,
        caveats=[],
        no_samples=no_samples,
        concurrent=concurrent,
        merged=merged_groups,
        status=chosen.status,
        newest=newest,
    )
    run.duplicates = duplicates
    run.caveats = derive_caveats(run)
    return run


def mark_unprofiled_forks(workers: list[Worker]) -> None:
    """Mark the fork children that never profiled anything of their own.

    A process forked from a profiled one inherits its profiler, which writes the child's start
    file; a child that never enters a phase (a DataLoader worker that never made its own
    Profiler) leaves that file alone, or a final one with nothing in it. It ran, just not
    profiled: a final status says so, and so does a job that is over (its parent's file, or
    every file with data, is final) or that went on long after the child began (the start file
    is stale). A start file in a job still running, recent, is a process that just started.
    """
    by_process = {(w.host, w.pid): w for w in workers}
    end = max((w.last_flush_ns for w in workers), default=0)
    profiled = [w for w in workers if w.has_data and not w.recorded_nothing]
    others_final = bool(profiled) and all(w.status in FINAL_STATUSES for w in profiled)
    for worker in workers:
        parent_pid = worker.fork_parent_pid
        if parent_pid is None or not worker.recorded_nothing:
            continue
        if worker.status in FINAL_STATUSES:
            worker.forked_unprofiled = True
            continue
        if worker.status != "started":
            continue
        parent = by_process.get((worker.host, parent_pid))
        parent_final = parent is not None and parent.status in FINAL_STATUSES
        if parent_final or others_final or is_stale(worker, end):
            worker.forked_unprofiled = True


def busy_fraction(role: RoleStats) -> float | None:
    """Share of the role's process lifetime spent inside a top-level phase (at most 1)."""
    return role.busy_fraction
