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

This module reads only through :mod:`..workerfile` and never imports the C modules, so the
report runs on a machine that only has the files. It never loads resource-sample sidecar
files: the blocks that need samples do that themselves, unless ``--no-samples`` was given.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..runfiles import histogram, layout, workerfile
from . import attempts as attempts_mod
from . import duplicates as duplicates_mod
from . import format as fmt
from . import live, parallel

# Re-exported: blocks and tests import them from here.
from .attempts import AttemptSummary as AttemptSummary
from .attempts import attempt_name as attempt_name

#: A worker is stale when it stopped flushing this many snapshot intervals before the run's end...
STALE_INTERVALS = 3
#: ...and at least this long before it (short intervals must not make every jitter a caveat).
STALE_MIN_NS = 10 * 1_000_000_000
#: The snapshot interval assumed for a file that does not say.
DEFAULT_INTERVAL_S = 5.0
#: Files larger than this keep their inline ``samples`` on disk, not in memory: reading
#: ``document["samples"]`` re-reads the file. Phase trees are far smaller than this.
LARGE_FILE_BYTES = 1 << 20
#: How many workers a caveat names before it says "and N more".
CAVEAT_NAMES = 5
#: Worker files per extra process when they are read in parallel: reading one (parse and
#: validate a 50-phase tree) takes about a millisecond, starting a process tens of them.
FILES_PER_JOB = 64

_FINAL = ("exited", "signalled")


class ReportError(InputError):
    """Nothing can be reported: ``str()`` is the one line the CLI prints (exit status 2)."""


class WorkerDocument(Mapping[str, Any]):
    """A validated worker document, read-only.

    Merge does not parse or keep inline ``samples`` (it reads files with ``skip_samples``, and
    drops them from large files read whole); reading ``document["samples"]`` then re-reads and
    re-validates the file, every time, so a block that handles one worker at a time holds one
    worker's samples at a time: read it once per worker. Raises
    :class:`~lineprofiler.runfiles.workerfile.WorkerFileError` when the file can no longer
    be read.
    """

    __slots__ = ("_data", "_path", "_samples_on_disk")

    def __init__(self, data: dict[str, Any], path: Path, samples_on_disk: bool) -> None:
        self._data = data
        self._path = path
        self._samples_on_disk = samples_on_disk

    def __getitem__(self, key: str) -> Any:
        if key == "samples" and self._samples_on_disk:
            return workerfile.read_worker_file(self._path).get("samples")
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        # Mapping's default would call __getitem__ and re-read the samples just to answer.
        return key in self._data

    @property
    def samples_on_disk(self) -> bool:
        """True when ``samples`` is re-read from the file on access instead of held."""
        return self._samples_on_disk


@dataclass
class Worker:
    """One worker file of the merged attempt: its identity, times and validated document."""

    path: Path
    document: WorkerDocument
    run_id: str
    attempt: int
    role: str
    host: str
    pid: int
    uuid: str
    rank: int | None
    local_rank: int | None
    job_id: str | None
    launcher: str | None
    start_ns: int
    last_flush_ns: int
    end_ns: int | None
    elapsed_ns: int
    status: str
    signal: str | None
    interval_s: float
    busy_ns: int
    #: Which rule chose the run id (``identity.run_id_source``); None in files that do not say.
    run_id_source: str | None = None
    #: Where the phase and counter numbers came from: ``"json"`` (the worker file), ``"live"``
    #: (the live file, newer than its last snapshot), or ``"json: <why the live file was not used>"``.
    numbers_from: str = "json"
    #: What CAVEATS says about the live file beside it (its problems, how the lifetime was found).
    live_notes: list[str] = field(default_factory=list)
    #: The latest moment it is known to have lived, from its live file, when past its last flush.
    alive_until_ns: int | None = None
    #: Only its start file was written: it died before its first snapshot.
    before_first_snapshot: bool = False
    #: False when ``elapsed_ns`` is the phase time it recorded, for want of a later sign of
    #: life (see :mod:`.live`): it is then left out of its role's time in phases.
    lifetime_measured: bool = True
    #: A fork child of a profiled process that never profiled anything of its own (set by
    #: :func:`merge_workers`): its file comes from the profiler it inherited. Not a process of
    #: its role's numbers, and not one that "just started".
    forked_unprofiled: bool = False

    @property
    def has_data(self) -> bool:
        """False for a start file only: the process was known to exist, nothing more."""
        return self.status != "started"

    @property
    def recorded_nothing(self) -> bool:
        """No phase entered (closed or open) and no counter counted."""
        phases = self.document["phases"]
        return not self.document["counters"] and not any(p["entries"] or _count(p, "open_entries") for p in phases)

    @property
    def fork_parent_pid(self) -> int | None:
        """The pid of the profiled process it was forked from, when it is a fork child."""
        value = self.document["identity"].get("fork_parent_pid")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def stop_ns(self) -> int:
        """When this worker's numbers stop: its end, else its last flush or, later, the last
        sign of life its live file gives."""
        if self.end_ns is not None:
            return self.end_ns
        return max(self.last_flush_ns, self.alive_until_ns or 0)

    @property
    def label(self) -> str:
        """How CAVEATS names a worker: ``actor pid 4242 on node07 (rank 3)``."""
        text = f"{fmt.printable(self.role)} pid {self.pid} on {fmt.printable(self.host)}"
        if self.rank is not None:
            text += f" (rank {self.rank})"
        return text


@dataclass
class PhaseStats:
    """One phase path merged over a set of processes."""

    path: str
    entries: int = 0
    wall_ns: int = 0
    self_ns: int = 0
    #: Thread CPU time and the wall time of the same entries, over the processes that measured
    #: CPU; ``cpu_wall_ns == 0`` with ``wall_ns > 0`` means CPU was never measured (n/a).
    cpu_ns: int = 0
    cpu_wall_ns: int = 0
    min_ns: int | None = None
    max_ns: int | None = None
    hist: dict[int, int] = field(default_factory=dict)
    processes: int = 0
    io: bool = False
    sync: bool = False
    overflow: bool = False
    #: Entries still open at the worker's last snapshot (a process killed inside a long phase):
    #: their time so far, and its self part. Never part of the totals above.
    open_entries: int = 0
    open_ns: int = 0
    open_self_ns: int = 0

    def add(self, phase: Mapping[str, Any]) -> None:
        self.open_entries += _count(phase, "open_entries")
        self.open_ns += _count(phase, "open_ns")
        self.open_self_ns += _count(phase, "open_self_ns")
        self.entries += phase["entries"]
        self.wall_ns += phase["wall_ns"]
        self.self_ns += phase["self_ns"]
        cpu = phase.get("cpu_ns")
        if cpu is not None:
            self.cpu_ns += cpu
            self.cpu_wall_ns += phase["wall_ns"]
        low, high = phase.get("min_ns"), phase.get("max_ns")
        if low is not None and phase["entries"]:
            self.min_ns = low if self.min_ns is None else min(self.min_ns, low)
        if high is not None and phase["entries"]:
            self.max_ns = high if self.max_ns is None else max(self.max_ns, high)
        histogram.merge(self.hist, phase["hist"])
        self.processes += 1
        self.io = self.io or bool(phase.get("io"))
        self.sync = self.sync or bool(phase.get("sync"))
        self.overflow = self.overflow or bool(phase.get("overflow"))

    def merge(self, other: PhaseStats) -> None:
        """Add another merged phase (same path, other processes) into this one."""
        self.entries += other.entries
        self.wall_ns += other.wall_ns
        self.self_ns += other.self_ns
        self.cpu_ns += other.cpu_ns
        self.cpu_wall_ns += other.cpu_wall_ns
        for attr, pick in (("min_ns", min), ("max_ns", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            if theirs is not None:
                setattr(self, attr, theirs if mine is None else pick(mine, theirs))
        histogram.merge(self.hist, other.hist)
        self.processes += other.processes
        self.io = self.io or other.io
        self.sync = self.sync or other.sync
        self.overflow = self.overflow or other.overflow
        self.open_entries += other.open_entries
        self.open_ns += other.open_ns
        self.open_self_ns += other.open_self_ns

    @property
    def self_with_open_ns(self) -> int:
        """Self time including the entries still open: what the role blocks rank and share."""
        return max(0, self.self_ns) + self.open_self_ns

    @property
    def depth(self) -> int:
        return self.path.count("/")

    @property
    def leaf(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def wait_fraction(self) -> float | None:
        """Share of the phase's wall time (children included) its thread was off-CPU; None when
        CPU time was not measured."""
        if self.cpu_wall_ns <= 0:
            return None
        return min(1.0, max(0.0, 1.0 - self.cpu_ns / self.cpu_wall_ns))

    @property
    def mean_ns(self) -> float | None:
        return self.wall_ns / self.entries if self.entries else None

    def quantile(self, q: float) -> float | None:
        """The merged histogram's ``q``-quantile in ns (bucket midpoint, clamped to min/max)."""
        return histogram.quantile(self.hist, q, min_ns=self.min_ns, max_ns=self.max_ns)


@dataclass
class RoleStats:
    """All the processes of one role, merged."""

    name: str
    workers: list[Worker] = field(default_factory=list)
    phases: dict[str, PhaseStats] = field(default_factory=dict)
    #: ``(phase path, counter name) -> total``; the phase is ``""`` when none was open.
    counters: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def data_workers(self) -> list[Worker]:
        return [w for w in self.workers if w.has_data and not w.forked_unprofiled]

    @property
    def unprofiled_workers(self) -> list[Worker]:
        """Fork children that inherited a profiler and recorded nothing ("forked, not profiled")."""
        return [w for w in self.workers if w.forked_unprofiled]

    @property
    def busy_ns(self) -> int:
        return sum(w.busy_ns for w in self.data_workers)

    @property
    def lifetime_ns(self) -> int:
        return sum(w.elapsed_ns for w in self.data_workers)

    @property
    def busy_fraction(self) -> float | None:
        """Share of the role's process lifetime spent inside a top-level phase, at most 1: a
        process whose phases add up to more than its lifetime (threads in phases at once)
        counts as busy for its whole lifetime. Processes whose lifetime is not known (killed
        before a snapshot, with no later sign of life) are left out; None when none is left."""
        measured = [w for w in self.data_workers if w.lifetime_measured]
        lifetime = sum(w.elapsed_ns for w in measured)
        if lifetime <= 0:
            return None
        value = sum(min(w.busy_ns, w.elapsed_ns) for w in measured) / lifetime
        return min(1.0, value) if math.isfinite(value) else None

    @property
    def mean_busy_ns(self) -> float | None:
        workers = self.data_workers
        return self.busy_ns / len(workers) if workers else None

    @property
    def imbalance(self) -> float | None:
        """Busiest process's busy time over the role's mean busy time (None: no busy time)."""
        mean = self.mean_busy_ns
        if not mean:
            return None
        return max(w.busy_ns for w in self.data_workers) / mean

    @property
    def slowest(self) -> Worker | None:
        workers = self.data_workers
        return max(workers, key=lambda w: (w.busy_ns, -w.pid)) if workers else None

    @property
    def phase_time_ns(self) -> int:
        """The sum of the role's self times, open entries included: what its phase shares are
        shares of."""
        return sum(p.self_with_open_ns for p in self.phases.values())


@dataclass
class UnreadableFile:
    path: Path
    #: The one-line reason, starting with the file's path.
    reason: str

    def describe(self, run_dir: Path) -> str:
        """The reason with the path shortened to be relative to the run directory."""
        try:
            short = str(self.path.relative_to(run_dir))
        except ValueError:
            return self.reason
        prefix = f"{self.path}: "
        rest = self.reason.removeprefix(prefix)
        return f"{short}: {rest}"


@dataclass
class Run(attempts_mod.AttemptSpan):
    """The newest attempt of a run directory, merged; what every report block renders."""

    run_dir: Path
    run_id: str
    attempt: int
    workers: list[Worker]
    roles: dict[str, RoleStats]
    superseded: list[AttemptSummary]
    unreadable: list[UnreadableFile]
    #: Lines about folders that could not be listed.
    listing_problems: list[str]
    #: CAVEATS lines derived while merging (the text report adds the blocks' own after these).
    caveats: list[str]
    no_samples: bool
    #: Other jobs (explicit ids) whose lifetimes overlap this attempt's: named, not merged.
    concurrent: list[AttemptSummary] = field(default_factory=list)
    #: The groups of generated ids merged into this attempt because they overlap it in time
    #: (the primary group, which names the run, is not listed).
    merged: list[AttemptSummary] = field(default_factory=list)
    #: ``newest``, or what the attempt chosen with ``attempt=`` is: ``concurrent``,
    #: ``superseded`` or ``restarted``.
    status: str = attempts_mod.NEWEST
    #: The newest attempt when another one was chosen with ``attempt=``.
    newest: AttemptSummary | None = None
    #: Processes found in more than one worker file, each counted once.
    duplicates: list[duplicates_mod.DuplicateFiles] = field(default_factory=list)

    @property
    def runtime_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    @property
    def hosts(self) -> list[str]:
        return sorted({w.host for w in self.workers})

    @property
    def ranks(self) -> list[int]:
        return sorted({w.rank for w in self.workers if w.rank is not None})

    @property
    def job_ids(self) -> list[str]:
        return sorted({w.job_id for w in self.workers if w.job_id})

    @property
    def window_phase(self) -> str | None:
        """The ``window_phase`` most workers were configured with, if any."""
        names = Counter(
            w.document.get("config", {}).get("window_phase")
            for w in self.workers
            if isinstance(w.document.get("config"), dict)
        )
        names.pop(None, None)
        if not names:
            return None
        name: str = min(names.items(), key=lambda item: (-item[1], str(item[0])))[0]
        return name

    def all_phases(self) -> dict[str, PhaseStats]:
        """Every phase path merged over all roles."""
        merged: dict[str, PhaseStats] = {}
        for role in self.roles.values():
            for path, stats in role.phases.items():
                target = merged.get(path)
                if target is None:
                    target = merged[path] = PhaseStats(path)
                target.merge(stats)
        return merged


def _count(phase: Mapping[str, Any], key: str) -> int:
    """A non-negative int field a writer may leave out (older files: 0); anything else is 0."""
    value = phase.get(key, 0)
    if type(value) is int:  # what a parsed file holds: one type test (this runs per phase and key)
        return value if 0 <= value < 2**63 else 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        return 0
    return value


def utc_time(unix_ns: int) -> str:
    """A wall-clock instant for people: ``2026-08-13 22:41:07 UTC``."""
    try:
        moment = datetime.fromtimestamp(unix_ns / 1e9, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{unix_ns} ns since the epoch"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def worker_from_document(path: Path, document: dict[str, Any], *, no_samples: bool = False, size: int = 0) -> Worker:
    """A :class:`Worker` from a document :func:`~..workerfile.validate` accepted.

    ``size`` is the file's size: a file larger than :data:`LARGE_FILE_BYTES` (or any file when
    ``no_samples``) keeps its inline samples on disk rather than in memory.
    """
    identity = document["identity"]
    times = document["times"]
    snapshot = document["snapshot"]
    # Top-level phases, with the time so far of entries still open at the last snapshot.
    busy = sum(p["wall_ns"] + _count(p, "open_ns") for p in document["phases"] if "/" not in p["path"])
    interval = snapshot.get("interval_s")
    samples = document.get("samples")
    samples_on_disk = samples is workerfile.SAMPLES_SKIPPED or (
        samples is not None and (no_samples or size > LARGE_FILE_BYTES)
    )
    if samples_on_disk:
        # Keep the phase tree, not the bulk: the samples are re-read from the file if a block asks.
        document = {k: v for k, v in document.items() if k != "samples"}
        document["samples"] = None
    return Worker(
        path=path,
        document=WorkerDocument(document, path, samples_on_disk),
        run_id=identity["run_id"],
        attempt=identity.get("attempt", 0),
        role=identity["role"],
        host=identity["host"],
        pid=identity["pid"],
        uuid=identity["uuid"],
        rank=identity.get("rank"),
        local_rank=identity.get("local_rank"),
        job_id=identity.get("job_id"),
        launcher=identity.get("launcher"),
        start_ns=times["start_unix_ns"],
        last_flush_ns=times["last_flush_unix_ns"],
        end_ns=times.get("end_unix_ns"),
        elapsed_ns=times["elapsed_ns"],
        status=times["status"],
        signal=times.get("signal"),
        interval_s=float(interval) if interval else DEFAULT_INTERVAL_S,
        busy_ns=busy,
        run_id_source=source if isinstance(source := identity.get("run_id_source"), str) else None,
    )


def read_worker(task: tuple[Path, bool]) -> Worker | UnreadableFile:
    """One worker file, read and validated: ``task`` is ``(path, no_samples)``. What
    :func:`load_run` does for each file, in a pool's process or in its own."""
    path, no_samples = task
    try:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        # Merge never needs the samples: stop before them where the layout allows.
        document = workerfile.read_worker_file(path, skip_samples=True)
        numbers = live.prefer_live_numbers(path, document)
        worker = worker_from_document(path, numbers.document, no_samples=no_samples, size=size)
        worker.numbers_from = numbers.source
        worker.live_notes = numbers.notes
        worker.alive_until_ns = numbers.alive_until_ns
        worker.before_first_snapshot = numbers.before_first_snapshot
        worker.lifetime_measured = numbers.lifetime_measured
        return worker
    except workerfile.WorkerFileError as error:
        return UnreadableFile(path, str(error))


# ---------------------------------------------------------------------------------------------
# The live file or the worker file: which numbers a process is reported with
# ---------------------------------------------------------------------------------------------


def _file_run_component(path: Path) -> str | None:
    """The sanitised run id a worker file's name carries (``w_<run>_<pid>_<uuid8>.json``)."""
    stem = path.name
    if not stem.startswith("w_") or not stem.endswith(".json"):
        return None
    parts = stem[2:-5].rsplit("_", 2)
    return parts[0] if len(parts) == 3 else None


def _collect_detail(run_dir: Path) -> str:
    """What Ray's collect recorded, for a run directory it left without worker files."""
    from ..runfiles import raycollect

    try:
        collect = raycollect.read_collect_file(run_dir)
    except raycollect.CollectFileError:
        return ""
    if collect is None or not collect.caveats:
        return ""
    more = f" (and {len(collect.caveats) - 1} more)" if len(collect.caveats) > 1 else ""
    return f"; Ray's collect recorded: {collect.caveats[0]}{more}"


def load_run(run_dir: str | Path, *, no_samples: bool = False, attempt: str | None = None) -> Run:
    """Read every worker file under ``run_dir`` and merge the newest attempt, or the one
    ``attempt`` names (``run_id`` or ``run_id#N``, as the header prints it).

    Raises :class:`ReportError` (one line) when nothing can be reported: the directory is
    missing, is not a directory, cannot be listed, holds no worker files, or none of them
    can be read, or ``attempt`` names none of its attempts. Files that cannot be read
    otherwise cost only themselves: they are listed in ``Run.unreadable`` and named under CAVEATS.
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
    for read in parallel.ordered_map(read_worker, tasks, jobs, chunksize=max(1, len(files) // (8 * jobs))):
        if isinstance(read, Worker):
            workers.append(read)
        else:
            unreadable.append(read)
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
        (a for a in others if a.status in (attempts_mod.SUPERSEDED, attempts_mod.RESTARTED)),
        key=lambda a: (a.start_ns, a.attempt, a.run_id),
        reverse=True,
    )
    concurrent = [a for a in others if a.status == attempts_mod.CONCURRENT]
    newest = next((a for a in others if a.status == attempts_mod.NEWEST), None)
    merged_groups = [
        attempts_mod.Attempt(group, [group], attempts_mod.NEWEST).summary() for group in chosen.members[1:]
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
    others_final = bool(profiled) and all(w.status in _FINAL for w in profiled)
    for worker in workers:
        parent_pid = worker.fork_parent_pid
        if parent_pid is None or not worker.recorded_nothing:
            continue
        if worker.status in _FINAL:
            worker.forked_unprofiled = True
            continue
        if worker.status != "started":
            continue
        parent = by_process.get((worker.host, parent_pid))
        parent_final = parent is not None and parent.status in _FINAL
        if parent_final or others_final or is_stale(worker, end):
            worker.forked_unprofiled = True


def busy_fraction(role: RoleStats) -> float | None:
    """Share of the role's process lifetime spent inside a top-level phase (at most 1)."""
    return role.busy_fraction


# The CAVEATS lines live in their own module, which reads this one's types (imported last).
from .caveats import derive_caveats as derive_caveats  # noqa: E402
from .caveats import is_stale as is_stale  # noqa: E402
