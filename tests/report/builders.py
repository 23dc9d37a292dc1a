"""Worker documents for the report's tests, built the way the profiler builds them.

``SimWorker`` is a small simulation of one profiled process: a fake monotonic clock and a
fake thread-CPU clock advance only when the test says the process works (``work``) or waits
(``wait``). Phases nest as the real ones do; on exit each phase adds its duration to its
path's entries, wall, self (wall minus its children's wall), CPU, min, max and one histogram
bucket chosen by :func:`lineprofiler.runfiles.histogram.bucket_index`. ``document()``
assembles a schema-v1 worker document from that record, and ``write()`` writes it with
:func:`lineprofiler.runfiles.workerfile.write_worker_file` where the profiler would;
``write_samples()`` writes its resource-sample file beside it with the real
:class:`lineprofiler.runfiles.samplefile.SampleWriter`.

So every number the report prints can be predicted exactly from the durations a test chose.
"""

from __future__ import annotations

import contextlib
import itertools
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lineprofiler.runfiles import histogram, samplefile, workerfile

NS = 1
US = 1_000
MS = 1_000_000
S = 1_000_000_000
#: 2026-08-13 22:41:00 UTC, the seed's run id's date.
T0 = 1_786_660_860 * S

_uuid_counter = itertools.count(1)
_pid_counter = itertools.count(41_000)


@dataclass
class _Node:
    entries: int = 0
    wall_ns: int = 0
    self_ns: int = 0
    cpu_ns: int = 0
    min_ns: int | None = None
    max_ns: int | None = None
    hist: dict[int, int] = field(default_factory=dict)
    io: bool = False
    sync: bool = False


class SimWorker:
    """One simulated process of a run, recording phases and counters on a fake clock."""

    def __init__(
        self,
        role: str = "actor",
        *,
        host: str = "node07",
        pid: int | None = None,
        rank: int | None = None,
        run_id: str = "20260813T2241-471c94",
        attempt: int = 0,
        start_unix_ns: int = T0,
        measure_cpu: bool = True,
        window_phase: str | None = None,
        interval_s: float = 5.0,
        job_id: str | None = None,
        launcher: str | None = None,
    ) -> None:
        self.role = role
        self.host = host
        self.pid = pid if pid is not None else next(_pid_counter)
        self.rank = rank
        self.run_id = run_id
        self.attempt = attempt
        self.start_unix_ns = start_unix_ns
        self.measure_cpu = measure_cpu
        self.window_phase = window_phase
        self.interval_s = interval_s
        self.job_id = job_id
        self.launcher = launcher
        self.uuid = f"{next(_uuid_counter):08x}"
        self.clock_ns = 0
        self.cpu_clock_ns = 0
        self.nodes: dict[str, _Node] = {}
        self.counters: dict[tuple[str, str], int] = {}
        #: Per phase path, the ``io_bytes`` object its document entry carries.
        self.io_bytes: dict[str, dict[str, int]] = {}
        # Open phases: [path, start, start_cpu, children_wall]
        self._stack: list[list[Any]] = []

    # -- recording --------------------------------------------------------------------------

    def work(self, ns: int, cpu_ns: int | None = None) -> None:
        """Advance the clock by ``ns``, of which ``cpu_ns`` (default: all) on a CPU."""
        self.clock_ns += ns
        self.cpu_clock_ns += ns if cpu_ns is None else cpu_ns

    def wait(self, ns: int) -> None:
        """Advance the clock by ``ns`` off-CPU (blocked on a queue, a lock, I/O)."""
        self.work(ns, 0)

    @contextlib.contextmanager
    def phase(self, name: str, *, io: bool = False, sync: bool = False) -> Iterator[None]:
        path = f"{self._stack[-1][0]}/{name}" if self._stack else name
        self._stack.append([path, self.clock_ns, self.cpu_clock_ns, 0])
        try:
            yield
        finally:
            path, start, start_cpu, children = self._stack.pop()
            duration = self.clock_ns - start
            node = self.nodes.setdefault(path, _Node())
            node.entries += 1
            node.wall_ns += duration
            node.self_ns += duration - children
            node.cpu_ns += self.cpu_clock_ns - start_cpu
            node.min_ns = duration if node.min_ns is None else min(node.min_ns, duration)
            node.max_ns = duration if node.max_ns is None else max(node.max_ns, duration)
            index = histogram.bucket_index(duration)
            node.hist[index] = node.hist.get(index, 0) + 1
            node.io = node.io or io
            node.sync = node.sync or sync
            if self._stack:
                self._stack[-1][3] += duration

    def count(self, name: str, n: int = 1) -> None:
        key = (self._stack[-1][0] if self._stack else "", name)
        self.counters[key] = self.counters.get(key, 0) + n

    # -- the document -----------------------------------------------------------------------

    def document(
        self,
        *,
        status: str = "exited",
        signal: str | None = None,
        snapshot_failures: int = 0,
        last_error: str | None = None,
        caps: dict[str, int] | None = None,
        mismatched_exits: int = 0,
        errors: list[str] | None = None,
        samples: dict[str, Any] | None = None,
        gpu: dict[str, Any] | None = None,
        flush_at_ns: int | None = None,
    ) -> dict[str, Any]:
        """The worker file as the profiler writes it at a flush ``flush_at_ns`` after start
        (default: now on the fake clock). ``status="started"`` gives the start file: no data."""
        elapsed = self.clock_ns if flush_at_ns is None else flush_at_ns
        started_only = status == "started"
        if started_only:
            elapsed = 0
        last_flush = self.start_unix_ns + elapsed
        final = status in ("exited", "signalled")
        phases = []
        if not started_only:
            for path, node in sorted(self.nodes.items()):
                phases.append(
                    {
                        "path": path,
                        "entries": node.entries,
                        "wall_ns": node.wall_ns,
                        "self_ns": node.self_ns,
                        "cpu_ns": node.cpu_ns if self.measure_cpu else None,
                        "min_ns": node.min_ns,
                        "max_ns": node.max_ns,
                        "hist": [[k, v] for k, v in sorted(node.hist.items())],
                        "io": node.io,
                        "sync": node.sync,
                        "io_bytes": self.io_bytes.get(path),
                        "overflow": False,
                    }
                )
        counters = [] if started_only else [
            {"phase": phase, "name": name, "total": total} for (phase, name), total in sorted(self.counters.items())
        ]
        writes = 1 if started_only else max(1, int(elapsed / (self.interval_s * S)) + 1)
        return {
            "schema_version": workerfile.SCHEMA_VERSION,
            "kind": workerfile.KIND,
            "identity": {
                "run_id": self.run_id,
                "attempt": self.attempt,
                "role": self.role,
                "host": self.host,
                "pid": self.pid,
                "uuid": self.uuid,
                "rank": self.rank,
                "local_rank": None if self.rank is None else self.rank % 8,
                "node_rank": None,
                "world_size": None,
                "job_id": self.job_id,
                "launcher": self.launcher,
                "python": "3.12.1",
                "argv": ["train.py"],
                "parent_pid": 1,
            },
            "times": {
                "start_unix_ns": self.start_unix_ns,
                "last_flush_unix_ns": last_flush,
                "elapsed_ns": elapsed,
                "end_unix_ns": last_flush if final else None,
                "status": status,
                "signal": signal,
            },
            "snapshot": {
                "interval_s": self.interval_s,
                "writes": writes,
                "failures": snapshot_failures,
                "last_error": last_error,
                "last_success_unix_ns": last_flush,
            },
            "config": {
                "measure_cpu": self.measure_cpu,
                "window_phase": self.window_phase,
                "backend": None,
                "annotate": False,
            },
            "histogram": {"scheme": histogram.SCHEME, "n_buckets": histogram.N_BUCKETS},
            "phases": phases,
            "counters": counters,
            "caps": caps
            or {"max_paths": 10_000, "paths_overflowed": 0, "max_counters": 10_000, "counters_overflowed": 0},
            "repairs": {"mismatched_exits": mismatched_exits},
            "samples": samples,
            "gpu": gpu,
            "errors": errors or [],
        }

    def path_in(self, run_dir: Path) -> Path:
        folder = workerfile.worker_dir(run_dir, self.host)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / workerfile.worker_file_name(self.run_id, self.pid, self.uuid)

    def write_samples(
        self,
        run_dir: Path,
        columns: Mapping[str, Sequence[int]],
        *,
        interval_s: float = 1.0,
        **extra: Any,
    ) -> dict[str, Any]:
        """Write this worker's sample file under ``run_dir`` with the real writer; returns the
        ``samples`` object its document names it with (``extra`` adds keys to that object).

        ``columns`` holds values per row; the sampler's base columns it lacks are filled in:
        ``t_ns`` one interval apart from the worker's start (the sample clock's zero is the
        start), ``flags`` marking the first row as a segment start, the rest 0. Columns not
        among the base ones (``gpu0_busy``...) follow them, in the given order.
        """
        rows = len(next(iter(columns.values())))
        interval_ns = int(interval_s * S)
        filled = {
            "t_ns": [k * interval_ns for k in range(rows)],
            "flags": [samplefile.FLAG_SEGMENT_START] + [0] * (rows - 1),
        }
        names = [*samplefile.BASE_COLUMNS, *(c for c in columns if c not in samplefile.BASE_COLUMNS)]
        values = [columns.get(name) or filled.get(name) or [0] * rows for name in names]
        data = array("q", (int(row[k]) for k in range(rows) for row in values))
        path = self.path_in(run_dir).with_suffix(samplefile.SUFFIX)
        writer = samplefile.SampleWriter(
            path, names, interval_ns, monotonic_ref_ns=0, unix_ref_ns=self.start_unix_ns, pid=self.pid
        )
        writer.append(data.tobytes())
        return samplefile.samples_document(
            file=path.name,
            columns=names,
            rows=writer.rows,
            size=writer.size,
            interval_s=interval_s,
            source="test",
            counts=samplefile.IntervalCounts(),
            clock=(0, self.start_unix_ns),
            **extra,
        )

    def write(self, run_dir: Path, **document_args: Any) -> Path:
        """Write this worker's file under ``run_dir`` with the real writer; returns its path."""
        path = self.path_in(run_dir)
        workerfile.write_worker_file(path, self.document(**document_args))
        return path


def actor_loop(worker: SimWorker, iterations: int, *, mcts_ns: int, env_ns: int, sims: int = 64,
               mcts_wait_ns: int = 0, jitter: list[int] | None = None) -> None:
    """The seed's actor: ``iteration/self_play/{mcts, env_step}``, counting simulations in mcts.

    Entry ``i`` of mcts lasts ``mcts_ns + jitter[i % len(jitter)]``, of which ``mcts_wait_ns``
    is spent off-CPU.
    """
    jitter = jitter or [0]
    for i in range(iterations):
        with worker.phase("iteration"), worker.phase("self_play"):
            with worker.phase("mcts"):
                worker.work(mcts_ns + jitter[i % len(jitter)] - mcts_wait_ns)
                worker.wait(mcts_wait_ns)
                worker.count("mcts_simulations", sims)
            with worker.phase("env_step"):
                worker.work(env_ns)


def learner_loop(worker: SimWorker, steps: int, *, train_ns: int, wait_ns: int, checkpoint_every: int = 0,
                 checkpoint_ns: int = 0) -> None:
    """A learner: waits for a batch, trains on it, now and then checkpoints."""
    for i in range(steps):
        with worker.phase("iteration"):
            with worker.phase("load_batch"):
                worker.wait(wait_ns)
            with worker.phase("train_step"):
                worker.work(train_ns)
                worker.count("samples", 256)
        if checkpoint_every and (i + 1) % checkpoint_every == 0:
            with worker.phase("checkpoint", io=True):
                worker.work(checkpoint_ns // 4)
                worker.wait(checkpoint_ns - checkpoint_ns // 4)
