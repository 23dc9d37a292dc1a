"""The run as the report reads it: its workers, their merged phases and roles, its attempts.

These are the types every other part of the report starts from (merge builds them from the
worker files; the blocks compute the report's model from them). This module reads no file
itself and imports nothing else of the report but :mod:`..format` and :mod:`..wording`.
A worker's document is held without its bulk samples (:class:`WorkerDocument`): merge reads
worker files without their inline ``samples`` (or drops them from large files read whole), so a
run of thousands of processes holds only their phase trees; the samples are read again from the
file, on purpose and one worker at a time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...runfiles import histogram, workerfile
from .. import format as fmt
from ..wording import NEWEST, SUPERSEDED


class WorkerDocument(Mapping[str, Any]):
    """A validated worker document, read-only.

    Merge does not parse or keep inline ``samples`` (it reads files with ``skip_samples``, and
    drops them from large files read whole); :meth:`read_samples` then re-reads and re-validates
    the file, every time, so a block that handles one worker at a time holds one worker's
    samples at a time: read them once per worker. ``document["samples"]`` is the same call.
    """

    __slots__ = ("_data", "_path", "_samples_on_disk")

    def __init__(self, data: dict[str, Any], path: Path, samples_on_disk: bool) -> None:
        self._data = data
        self._path = path
        self._samples_on_disk = samples_on_disk

    def __getitem__(self, key: str) -> Any:
        if key == "samples":
            return self.read_samples()
        return self._data[key]

    def read_samples(self) -> Any:
        """The document's inline ``samples``: from the file again when they are kept on disk.

        Raises :class:`~lineprofiler.runfiles.workerfile.WorkerFileError` when the file can no
        longer be read.
        """
        if self._samples_on_disk:
            return workerfile.read_worker_file(self._path).get("samples")
        return self._data.get("samples")  # optional: a file without the key has no samples

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


def int_field(phase: Mapping[str, Any], key: str) -> int:
    """A non-negative int field a writer may leave out (older files: 0); anything else is 0."""
    value = phase.get(key, 0)
    if type(value) is int:  # what a parsed file holds: one type test (this runs per phase and key)
        return value if 0 <= value < 2**63 else 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        return 0
    return value


def attempt_name(run_id: str, attempt: int) -> str:
    """``run_id``, with ``#attempt`` appended for a requeued attempt."""
    text = fmt.printable(run_id)
    return f"{text} #{attempt}" if attempt else text


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
    #: Where its ``line_sampling`` section came from: ``"json"`` (the worker file), ``"live"``
    #: (the live copy beside it, with more windows than its last snapshot), or
    #: ``"json: <why the live copy was not used>"``.
    sampled_lines_from: str = "json"
    #: The latest moment it is known to have lived, from its live file, when past its last flush.
    alive_until_ns: int | None = None
    #: Only its start file was written: it died before its first snapshot.
    before_first_snapshot: bool = False
    #: False when ``elapsed_ns`` is the phase time it recorded, for want of a later sign of
    #: life (see :mod:`.live`): it is then left out of its role's time in phases.
    lifetime_measured: bool = True
    #: A fork child of a profiled process that never profiled anything of its own (set by
    #: :func:`~.merge.merge_workers`): its file comes from the profiler it inherited. Not a process of
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
        return not self.document["counters"] and not any(p["entries"] or int_field(p, "open_entries") for p in phases)

    @property
    def fork_parent_pid(self) -> int | None:
        """The pid of the profiled process it was forked from, when it is a fork child."""
        value = self.document["identity"].get("fork_parent_pid")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def parent_pid(self) -> int | None:
        """The pid of the process that started it: the one it was forked from, else its parent."""
        if self.fork_parent_pid is not None:
            return self.fork_parent_pid
        value = self.document["identity"].get("parent_pid")
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
        self.open_entries += int_field(phase, "open_entries")
        self.open_ns += int_field(phase, "open_ns")
        self.open_self_ns += int_field(phase, "open_self_ns")
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
    #: The same keys -> the least and the most one ``count()`` added, over the role's processes;
    #: None where a process's file did not record them (written before they were kept).
    counter_spread: dict[tuple[str, str], tuple[int, int] | None] = field(default_factory=dict)

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
class DuplicateFiles:
    """Worker files that hold one process (the same pid and uuid): ``kept`` is counted."""

    kept: Worker
    dropped: list[Worker]


class AttemptSpan:
    """The name and the time span of one attempt's worker files: a :class:`Group` while
    attempts are sorted out, the merged ``Run`` after."""

    run_id: str
    attempt: int
    workers: list[Worker]

    @property
    def name(self) -> str:
        return attempt_name(self.run_id, self.attempt)

    @property
    def start_ns(self) -> int:
        return min(w.start_ns for w in self.workers)

    @property
    def end_ns(self) -> int:
        """The newest flush (or end) of any of its workers."""
        return max(w.stop_ns for w in self.workers)


@dataclass
class AttemptSummary:
    """An attempt the report names but does not merge (or, in ``Run.merged``, a group it merged)."""

    run_id: str
    attempt: int
    start_ns: int
    end_ns: int
    files: int
    roles: dict[str, int]
    #: ``newest``, ``concurrent`` (another job overlapping the newest attempt), ``superseded``
    #: (ended before the newest began) or ``restarted`` (a launcher restarted the job since).
    status: str = SUPERSEDED
    generated: bool = False
    #: The names of the other groups merged into this attempt (generated ids overlapping it).
    merged: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return attempt_name(self.run_id, self.attempt)

    @property
    def span_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)


@dataclass
class Run(AttemptSpan):
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
    status: str = NEWEST
    #: The newest attempt when another one was chosen with ``attempt=``.
    newest: AttemptSummary | None = None
    #: Processes found in more than one worker file, each counted once.
    duplicates: list[DuplicateFiles] = field(default_factory=list)

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
