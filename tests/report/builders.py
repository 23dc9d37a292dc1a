"""Worker documents for the report's tests, built the way the profiler builds them.

``SimWorker`` is a small simulation of one profiled process: a fake monotonic clock and a
fake thread-CPU clock advance only when the test says the process works (``work``) or waits
(``wait``). Phases nest as the real ones do; on exit each phase adds its duration to its
path's entries, wall, self (wall minus its children's wall), CPU, min, max and one histogram
bucket chosen by :func:`lineprofiler.runfiles.histogram.bucket_index`. ``document()``
assembles the worker document from that record with the profiler's own builder,
:func:`lineprofiler.runfiles.workerfile.build_document` (phases still open are reported as the
recorder reports them: ``open_entries``, ``open_ns``, ``open_self_ns``), and ``write()`` writes
it with :func:`lineprofiler.runfiles.workerfile.write_worker_file` where the profiler would;
``write_samples()`` writes its resource-sample file beside it with the real
:class:`lineprofiler.runfiles.samplefile.SampleWriter` and returns the ``samples`` object the
sampler would put in the document; :func:`gpu_document` is the ``gpu`` object the profiler's
GPU attachment writes.

So every number the report prints can be predicted exactly from the durations a test chose, and
the documents have every key a real worker file has: tests/report/test_builders.py checks them
against a file written by a real ``Profiler``, key by key, at every level.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import subprocess
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.env import clean_env
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
    id: int = 0


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
        self.run_id_source = "generated"
        self.fork_parent_pid: int | None = None
        self.clock_ns = 0
        self.cpu_clock_ns = 0
        self.nodes: dict[str, _Node] = {}
        self.counters: dict[tuple[str, str], int] = {}
        #: The worker file's ``source`` (the project's commit), as the profiler records it.
        self.source: dict[str, Any] = {
            "commit": None, "dirty_files": None, "diff_sha": None, "root": "/project",
            "unavailable_reason": "/project is not in a git repository git can read",
        }
        #: Per counter: count() calls, the least and the most one added.
        self.counter_spread: dict[tuple[str, str], tuple[int, int, int]] = {}
        #: Per phase path, the ``io_bytes`` object its document entry carries.
        self.io_bytes: dict[str, dict[str, int]] = {}
        # Node ids in order of first entry, as the recorder numbers them (1 is its root).
        self._ids: dict[str, int] = {}
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
        self._ids.setdefault(path, len(self._ids) + 2)
        self._stack.append([path, self.clock_ns, self.cpu_clock_ns, 0])
        try:
            yield
        finally:
            path, start, start_cpu, children = self._stack.pop()
            duration = self.clock_ns - start
            node = self.nodes.setdefault(path, _Node(id=self._ids[path]))
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
        calls, low, high = self.counter_spread.get(key, (0, n, n))
        self.counter_spread[key] = (calls + 1, min(low, n), max(high, n))

    # -- the document -----------------------------------------------------------------------

    def open(self, name: str) -> None:
        """Enter a phase and leave it open: the document then shows it as a snapshot of a
        process still inside it does. Call it where no ``with phase`` is left to close."""
        path = f"{self._stack[-1][0]}/{name}" if self._stack else name
        self._ids.setdefault(path, len(self._ids) + 2)
        self._stack.append([path, self.clock_ns, self.cpu_clock_ns, 0])

    def _phase_entries(self, elapsed: int) -> list[dict[str, Any]]:
        """The ``phases`` list as the recorder's snapshot gives it at ``elapsed`` on the clock."""
        opened: dict[str, list[int]] = {}  # path -> [open_entries, open_ns, open_self_ns]
        for depth, (path, start, _cpu, children) in enumerate(self._stack):
            open_ns = elapsed - start
            inner = elapsed - self._stack[depth + 1][1] if depth + 1 < len(self._stack) else 0
            totals = opened.setdefault(path, [0, 0, 0])
            totals[0] += 1
            totals[1] += open_ns
            totals[2] += open_ns - children - inner
        phases = []
        for path in sorted(set(self.nodes) | set(opened)):
            node = self.nodes.get(path) or _Node(id=self._ids[path])
            open_entries, open_ns, open_self_ns = opened.get(path, [0, 0, 0])
            io_bytes = self.io_bytes.get(path)
            if io_bytes is None and node.io:
                # What an io=True phase records when its entries moved no byte.
                io_bytes = {name: 0 for name in samplefile.IO_FIELDS}
                io_bytes.update(measured_entries=node.entries, failed_reads=0)
            phases.append(
                {
                    "id": node.id,
                    "path": path,
                    "entries": node.entries,
                    "wall_ns": node.wall_ns,
                    "self_ns": node.self_ns,
                    "cpu_ns": node.cpu_ns if self.measure_cpu and node.entries else None,
                    "cpu_missing": 0,
                    "min_ns": node.min_ns,
                    "max_ns": node.max_ns,
                    "hist": [[k, v] for k, v in sorted(node.hist.items())],
                    "io": node.io,
                    "sync": node.sync,
                    "io_bytes": io_bytes,
                    "overflow": False,
                    "open_entries": open_entries,
                    "open_ns": open_ns,
                    "open_self_ns": open_self_ns,
                }
            )
        return phases

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
        (default: now on the fake clock). ``status="started"`` gives the start file: no data.

        ``samples`` and ``gpu`` are what the sampler and the GPU attachment would add (null:
        none attached, as when a process runs without them): see :meth:`write_samples` and
        :func:`gpu_document`.
        """
        elapsed = self.clock_ns if flush_at_ns is None else flush_at_ns
        started_only = status == "started"
        if started_only:
            elapsed = 0
        last_flush = self.start_unix_ns + elapsed
        final = status in ("exited", "signalled")
        counters = [] if started_only else [
            {"phase": phase, "name": name, "total": total,
             **dict(zip(("calls", "min", "max"), self.counter_spread[(phase, name)], strict=True))}
            for (phase, name), total in sorted(self.counters.items())
        ]
        writes = 1 if started_only else max(1, int(elapsed / (self.interval_s * S)) + 1)
        io_zero = {name: 0 for name in samplefile.IO_FIELDS}
        tree = {
            "phases": [] if started_only else self._phase_entries(elapsed),
            "counters": counters,
            # The recorder's defaults; ``caps`` changes some of them.
            "caps": {"max_paths": 10_000, "paths_overflowed": 0, "max_counters": 10_000, "counters_overflowed": 0,
                     "max_depth": 256, "depth_overflowed": 0, **(caps or {})},
            "repairs": {"mismatched_exits": mismatched_exits, "stale_exits": 0, "dropped_entries": 0,
                        "cross_stack_exits": 0},
            "own_io_subtracted": dict(io_zero),
        }
        document = workerfile.build_document(
            identity={
                "run_id": self.run_id,
                "attempt": self.attempt,
                "run_id_source": self.run_id_source,
                "role": self.role,
                "host": self.host,
                "pid": self.pid,
                "parent_pid": 1,
                "uuid": self.uuid,
                "rank": self.rank,
                "local_rank": None if self.rank is None else self.rank % 8,
                "node_rank": None,
                "world_size": None,
                "job_id": self.job_id,
                "launcher": self.launcher,
                "python": "3.12.1",
                "argv": ["train.py"],
                "fork_parent_pid": self.fork_parent_pid,
            },
            status=status,
            start_unix_ns=self.start_unix_ns,
            now_unix_ns=last_flush,
            elapsed_ns=elapsed,
            final=final,
            signal=signal,
            interval_s=self.interval_s,
            writes=writes,
            failures=snapshot_failures,
            last_error=last_error,
            config={
                "measure_cpu": self.measure_cpu,
                "window_phase": self.window_phase,
                "backend": None,
                "backend_window": None,
                "lines_project": None,
                "annotate": False,
                "max_paths": 10_000,
                "max_counters": 10_000,
                "cpu_clock": "clock_gettime" if self.measure_cpu else None,
            },
            tree=tree,
            own_io_excluded=dict(io_zero),
        )
        document["samples"] = samples
        document["gpu"] = gpu
        # Where git could not say (the profiler's shape when the project is no repository);
        # tests that want a commit set ``source``.
        document["source"] = self.source
        # No live file beside it (the profiler writes null when it could not make one): the
        # report reads the document's own numbers.
        document["live_file"] = None
        document["errors"] = list(errors or []) + document["errors"]
        return document

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
            "pss_bytes": [-1] * rows,  # not measured, unless a test gives it
        }
        names = [*samplefile.NATIVE_COLUMNS, *(c for c in columns if c not in samplefile.NATIVE_COLUMNS)]
        values = [columns.get(name) or filled.get(name) or [0] * rows for name in names]
        data = array("q", (int(row[k]) for k in range(rows) for row in values))
        path = self.path_in(run_dir).with_suffix(samplefile.SUFFIX)
        writer = samplefile.SampleWriter(
            path, names, interval_ns, monotonic_ref_ns=0, unix_ref_ns=self.start_unix_ns, pid=self.pid
        )
        writer.append(data.tobytes())
        gpus = sum(1 for name in names if name.startswith("gpu") and name.endswith("_busy"))
        # The keys the sampler adds to the object (see docs/resources.md), with their values
        # for a sampler that read everything it tried.
        sampler = {
            "failed_reads": {"io": 0, "rss": 0, "stat": 0},
            "overwritten": 0,
            "pending_rows": 0,
            "write_failures": 0,
            "last_write_error": None,
            "file_restarts": 0,
            "io_unavailable_reason": None,
            "rss_unavailable_reason": None,
            "reap_unavailable_reason": None,
            "phase_unavailable_reason": None,
            "gpu": {
                "devices": gpus,
                "reads": rows if gpus else 0,
                "reads_skipped": 0,
                "unavailable_reason": None if gpus else "NVML sees no GPU",
            },
            "own_io_excluded": {name: 0 for name in samplefile.IO_FIELDS},
            "own_io_unmeasured": 0,
            "thread_cpu_ns": 0,
            "errors": [],
            # Why threads waited, the process's CPU and the machine's, as the sampler writes them
            # for a process whose phases no tick fell in (tests give rows: tests/report/test_off_cpu.py).
            "off_cpu": {
                "resolution_s": 0.1, "phases": [], "unattributed_ns": 0, "threads": 0, "unavailable_reason": None,
                "throttle_unavailable_reason": None, "throttle_source": "/sys/fs/cgroup/cpu.stat",
            },
            "process_cpu": {"cpu_ns": self.cpu_clock_ns, "threads": 2, "threads_max": 2, "unavailable_reason": None},
            "cpus": {"online": 2, "affinity": 2, "quota_cpus": None, "quota_source": "/sys/fs/cgroup/cpu.max",
                     "unavailable_reason": None},
            # The timeline's part of a real samples object, with no timeline file written.
            "timeline": {
                "file": None, "format": samplefile.FORMAT, "columns": list(samplefile.TIMELINE_COLUMNS),
                "hz": 10.0, "rows": 0, "bytes": 0, "clock": {"monotonic_ns": 0, "unix_ns": self.start_unix_ns},
                "write_failures": 0, "pending_rows": 0,
                "unavailable_reason": None, "ticks": 0, "skipped_ticks": 0, "overwritten": 0,
                "threads_unpublished": 0,
            },
        }
        return samplefile.samples_document(
            file=path.name,
            columns=names,
            rows=writer.rows,
            size=writer.size,
            interval_s=interval_s,
            source="proc",
            counts=samplefile.IntervalCounts(),
            clock=(0, self.start_unix_ns),
            **{**sampler, **extra},
        )

    def write(self, run_dir: Path, **document_args: Any) -> Path:
        """Write this worker's file under ``run_dir`` with the real writer; returns its path."""
        path = self.path_in(run_dir)
        workerfile.write_worker_file(path, self.document(**document_args))
        return path


def off_cpu_split(rows: Sequence[Mapping[str, Any]], **over: Any) -> dict[str, Any]:
    """A ``samples.off_cpu`` object with these per-phase rows (``path``, ``elapsed_ns``,
    ``on_cpu_ns``, ``runqueue_ns``, ``throttled_ns``, ``blocked_ns``), for ``write_samples``."""
    return {
        "resolution_s": 0.1, "phases": [dict(row) for row in rows], "unattributed_ns": 0, "threads": 1,
        "unavailable_reason": None, "throttle_unavailable_reason": None, "throttle_source": "/sys/fs/cgroup/cpu.stat",
        **over,
    }


def expected_quantile(durations: Sequence[int], q: float) -> float:
    """The q-quantile the report should print for these entry durations, worked out from the
    durations alone as runfiles/histogram.py documents it, without its functions: the nearest
    rank of the sorted durations, reported as the geometric midpoint of the bucket holding it
    (bucket k holds ``edge(k-1) <= ns < edge(k)``, ``edge(k) = round(1000 * 2 ** (k / 8))``, up
    to edge 266), clamped to the exact min and max; checked within the documented 4.45 %."""

    def edge(k: int) -> int:
        return math.floor(1000 * 2 ** (k / 8) + 0.5)

    ordered = sorted(durations)
    exact = ordered[max(1, math.ceil(q * len(ordered))) - 1]
    k = 0
    while k <= 266 and edge(k) <= exact:
        k += 1
    value = float(edge(0)) if k == 0 else float(edge(266)) if k > 266 else math.sqrt(edge(k - 1) * edge(k))
    value = min(max(value, float(ordered[0])), float(ordered[-1]))
    if edge(0) <= exact < edge(266):
        assert abs(value - exact) <= 0.0445 * exact, (value, exact)
    return value


#: ``gpu.phase_time`` of a process that entered no ``gpu=True`` phase, as the profiler writes it.
NO_GPU_PHASES: Mapping[str, Any] = {
    "available": False, "unavailable_reason": "no phase(..., gpu=True) was entered in this process",
    "source": None, "pool_pairs": 1024, "ended": True, "errors": 0, "last_error": None, "phases": [],
}


def gpu_document(
    *,
    devices: Sequence[int] = (),
    nvml_reason: str | None = None,
    vram: Mapping[str, Any] | None = None,
    vram_reason: str = "torch is not imported by this process",
    phase_time: Mapping[str, Any] | None = NO_GPU_PHASES,
) -> dict[str, Any]:
    """The ``gpu`` object the profiler's GPU attachment writes: NVML available with ``devices``
    (indices, named as the NVML stub names them) unless ``nvml_reason`` says why not; VRAM
    unavailable for ``vram_reason`` unless ``vram`` gives its peaks (``allocated_peak``,
    ``reserved_peak`` and, optionally, ``samples``: one device's worth). ``phase_time``: the
    ``gpu=True`` phases' GPU time (accounting/gpu_events.py): by default what a process that
    entered none writes, left out when None (a file written before it existed)."""
    nvml = {
        "available": nvml_reason is None,
        "unavailable_reason": nvml_reason,
        "devices": [] if nvml_reason is not None else [{"index": i, "name": f"Stub GPU {i}"} for i in devices],
        "driver": None,
    }
    if vram is None:
        memory: dict[str, Any] = {
            "available": False, "unavailable_reason": vram_reason, "samples": 0, "devices": {},
            "cuda_visible_devices": None, "allocated_peak": None, "reserved_peak": None,
            "allocated_last": None, "reserved_last": None,
        }
    else:
        peaks = {"allocated_peak": vram["allocated_peak"], "reserved_peak": vram["reserved_peak"],
                 "allocated_last": vram["allocated_peak"], "reserved_last": vram["reserved_peak"]}
        memory = {
            "available": True, "unavailable_reason": None, "samples": vram.get("samples", 1), "devices": {"0": peaks},
            "cuda_visible_devices": None, **peaks,
        }
    return {"vram": memory, "nvml": nvml, **({"phase_time": dict(phase_time)} if phase_time is not None else {})}


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


# -- what a real worker file holds --------------------------------------------------------------

REAL_RUN = """
import ctypes, os, sys, time
from lineprofiler.accounting import Profiler

if os.environ.get("LINEPROFILER_NVML_LIBRARY"):  # the NVML test stub, scripted with one device
    ctypes.CDLL(os.environ["LINEPROFILER_NVML_LIBRARY"]).lpstub_set_device_count(1)

profiler = Profiler(run_dir=sys.argv[1], role="actor", sample_interval_s=0.02, timeline_hz=100)
for _ in range(3):
    with profiler.phase("iteration"):
        with profiler.phase("mcts"):
            time.sleep(0.01)
            profiler.count("mcts_simulations", 64)
        with profiler.phase("checkpoint", io=True):
            with open(os.path.join(sys.argv[1], "ckpt.bin"), "wb") as handle:
                handle.write(b"x" * 4096)
profiler.count("episodes")
profiler.phase("serve").__enter__()  # still open when the process ends
time.sleep(0.05)
"""


def real_worker_document(folder: Path, nvml_stub: Path | None = None) -> dict[str, Any]:
    """The worker file a real ``Profiler`` writes (nested, io=True, counted and open phases,
    the sampler and the GPU attachment on, NVML seeing one device through the test stub of
    tests/gpu, ``nvml_stub``), as parsed JSON, untouched by the report's reader."""
    import json

    run_dir = folder / "real-run"
    env = clean_env()
    if nvml_stub is not None:  # without it NVML is absent, and its devices list empty
        env["LINEPROFILER_NVML_LIBRARY"] = str(nvml_stub)
    result = subprocess.run([sys.executable, "-c", REAL_RUN, str(run_dir)], capture_output=True, text=True,
                            env=env, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"the real profiler failed:\n{result.stderr}")
    (path,) = workerfile.find_worker_files(run_dir)
    return json.loads(path.read_bytes())


def key_shape(value: Any) -> Any:
    """The keys of a JSON value at every level: a dict maps each key to its value's shape; a list
    of objects is one shape, the union over its items; anything else (and null) is None."""
    if isinstance(value, dict):
        return {key: key_shape(item) for key, item in value.items()}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = _merge_shapes(merged, key_shape(item))
        return [merged] if isinstance(merged, dict) else None
    return None


def _merge_shapes(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {key: _merge_shapes(a.get(key), b.get(key)) for key in {**a, **b}}
    return a if a is not None else b


def key_paths(shape: Any, prefix: str = "") -> set[str]:
    """Every key of a :func:`key_shape` as a dotted path (``phases[].open_ns``)."""
    out: set[str] = set()
    if isinstance(shape, dict):
        for key, item in shape.items():
            out.add(prefix + key)
            out |= key_paths(item, prefix + key + ".")
    elif isinstance(shape, list):
        out |= key_paths(shape[0], prefix[:-1] + "[].")
    return out
