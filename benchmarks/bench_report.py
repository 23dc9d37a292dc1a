"""How long ``lineprofiler report`` takes, and how much memory, on a large run.

Generates the worker files of a run with ``--workers`` processes (default 64: 48 actors, 15
loaders, 1 learner over 8 nodes) that ran for ``--hours`` (default 12), each with a phase tree
of ``--phases`` nodes (default 50), written with the real writer
(``workerfile.write_worker_file``), then runs ``python -m lineprofiler report`` on them in a
subprocess, with and without ``--no-samples`` and with ``--html``, and prints for each the
median wall time, the
CPU time of the report and of the processes it started (``os.wait4``), the peak RSS of the
report process (``ru_maxrss``) and the peak memory of the report with its pool together (the
sum of their PSS, read from ``/proc`` every 50 ms: a forked pool shares pages with its parent,
so RSS would count them twice).

Targets: 64 workers x 12 h: <= 300 MB and <= 10 s with samples, <= 100 MB and <= 3 s with
--no-samples, the same as with samples for ``--html``, whose file must stay under 5 MB.
1,024 workers x 24 h: <= 60 s and <= 1 GB with samples, <= 10 s with --no-samples, time
growing linearly with the workers.

Each worker's resource samples (one row a second) are written to its ``.samples`` file by the
sampler's own writer (``_synthetic.write_synthetic_history``), so ``report`` renders the I/O and
MEMORY blocks from them and ``--no-samples`` skips them. Generation runs on every usable core;
a day of samples is about 1.7 MB per worker (9 MB before the file was compressed), and the
benchmark refuses a run the disk cannot hold.
``--jobs N`` sets ``LINEPROFILER_REPORT_JOBS`` for the report (1: the serial path).

    python benchmarks/bench_report.py                 # 64 workers x 12 h, sidecar samples, 3 repeats
    python benchmarks/bench_report.py --workers 8 --hours 1 --repeat 1
    python benchmarks/bench_report.py --workers 1024 --hours 24 --repeat 1 --dir /tmp/run1024
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from _synthetic import write_synthetic_history

from lineprofiler.runfiles import histogram, layout, workerfile

S = 1_000_000_000
T0 = 1_786_660_860 * S

# (role, phase paths with (typical duration in ns, share of entries)), counters per phase.
ROLES: dict[str, dict[str, Any]] = {
    "actor": {
        "phases": {
            "iteration": 12_000_000,
            "iteration/self_play": 11_500_000,
            "iteration/self_play/mcts": 9_400_000,
            "iteration/self_play/mcts/expand": 800_000,
            "iteration/self_play/mcts/evaluate": 6_000_000,
            "iteration/self_play/env_step": 2_000_000,
            "iteration/self_play/env_step/render": 300_000,
            "iteration/send": 150_000,
            "reset": 40_000_000,
        },
        "counters": {"iteration/self_play/mcts": ["mcts_simulations", "nodes_expanded"], "": ["episodes"]},
    },
    "loader": {
        "phases": {
            "batch": 50_000_000,
            "batch/read_shard": 30_000_000,
            "batch/decode": 15_000_000,
            "batch/augment": 4_000_000,
            "batch/enqueue": 500_000,
        },
        "counters": {"batch/read_shard": ["bytes_read", "shards"], "batch/decode": ["samples"]},
    },
    "learner": {
        "phases": {
            "iteration": 250_000_000,
            "iteration/load_batch": 60_000_000,
            "iteration/forward": 70_000_000,
            "iteration/backward": 100_000_000,
            "iteration/optimizer": 15_000_000,
            "checkpoint": 4_000_000_000,
            "eval": 30_000_000_000,
            "eval/rollout": 29_000_000_000,
        },
        "counters": {"iteration/forward": ["samples", "tokens"], "checkpoint": ["bytes_written"]},
    },
}


def role_of(index: int, workers: int) -> str:
    if index == workers - 1:
        return "learner"
    return "actor" if index % 4 != 3 else "loader"


def role_phases(role: str, nodes: int) -> dict[str, int]:
    """The role's phase paths with their typical durations, grown to ``nodes`` paths: steps
    ``op<k>`` under the existing phases in turn, at most five levels deep, each an eighth of its
    parent's duration."""
    phases = dict(ROLES[role]["phases"])
    parents = list(phases)
    k = 0
    while len(phases) < nodes:
        parent = parents[k % len(parents)]
        if parent.count("/") < 4:
            child = f"{parent}/op{k:02d}"
            phases[child] = max(2_000, phases[parent] // 8)
            parents.append(child)
        k += 1
    return phases


def phase_records(
    rng: random.Random, role: str, runtime_ns: int, nodes: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A phase tree with histograms as a process running ``runtime_ns`` would have recorded.

    Durations are log-normal around each phase's typical duration; the histogram is made from
    a few hundred drawn durations scaled to the entry count (a 12-hour actor enters its
    phases millions of times; drawing each would take longer than the report).
    """
    spec = ROLES[role]
    top = role_phases(role, nodes)
    records = []
    for path, typical in top.items():
        share = 0.9 if "/" not in path and path in ("iteration", "batch") else 0.05
        entries = max(1, int(runtime_ns * share / typical)) if "/" not in path else 0
        parent = path.rsplit("/", 1)[0] if "/" in path else None
        if parent is not None:
            entries = next(r["entries"] for r in records if r["path"] == parent)
        draws = [max(1_000, int(rng.lognormvariate(0, 0.35) * typical)) for _ in range(300)]
        scale = entries / len(draws)
        counts: dict[int, int] = {}
        for d in draws:
            counts[histogram.bucket_index(d)] = counts.get(histogram.bucket_index(d), 0) + 1
        hist = [[k, max(1, round(v * scale))] for k, v in sorted(counts.items())]
        wall = int(sum(draws) * scale)
        records.append(
            {
                "path": path, "entries": sum(c for _, c in hist), "wall_ns": wall, "self_ns": wall,
                "cpu_ns": int(wall * rng.uniform(0.5, 0.95)), "min_ns": min(draws), "max_ns": max(draws),
                "hist": hist, "io": path == "checkpoint", "sync": False, "io_bytes": None, "overflow": False,
            }
        )
    by_path = {r["path"]: r for r in records}
    for r in records:
        if "/" in r["path"]:
            parent = by_path[r["path"].rsplit("/", 1)[0]]
            parent["self_ns"] = max(0, parent["self_ns"] - r["wall_ns"])
    counters = [
        {"phase": phase, "name": name, "total": rng.randrange(10**6, 10**10)}
        for phase, names in spec["counters"].items()
        for name in names
    ]
    return records, counters


SAMPLE_COLUMNS = ("t_ns", "rss", "rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes", "phase")


def make_samples(folder: Path, worker_file: str, hours: float, interval_s: float, seed: int, pid: int) -> Any:
    """The resource samples of one worker, written by the sampler's real writer
    (``_synthetic.write_synthetic_history``) to the sidecar beside the worker file; returns the
    document's ``samples`` value naming it."""
    return write_synthetic_history(
        folder / layout.sidecar_name(worker_file),
        start_unix_ns=T0, hours=hours, interval_s=interval_s, seed=seed, pid=pid,
    )


def write_worker(run_dir: Path, index: int, workers: int, hours: float, samples: str, nodes: int, seed: int = 1) -> int:
    """Write worker ``index`` of the run (its phase tree from its own seeded generator, so any
    process can write any worker); returns the bytes written."""
    rng = random.Random(seed * 1_000_003 + index)
    runtime = int(hours * 3600 * S)
    role = role_of(index, workers)
    host = f"node{index // 8:02d}"
    pid = 10_000 + index
    uuid8 = f"{index:08x}"
    run_id = "20260813T2241-471c94"
    folder = layout.worker_dir(run_dir, host)
    folder.mkdir(parents=True, exist_ok=True)
    name = layout.worker_file_name(run_id, pid, uuid8)
    phases, counters = phase_records(rng, role, runtime, nodes)
    end = T0 + runtime - rng.randrange(0, 3 * S)
    document = {
        "schema_version": workerfile.SCHEMA_VERSION,
        "kind": workerfile.KIND,
        "identity": {"run_id": run_id, "attempt": 0, "role": role, "host": host, "pid": pid, "uuid": uuid8,
                     "rank": index, "local_rank": index % 8, "node_rank": index // 8, "world_size": workers,
                     "job_id": "4242", "launcher": "slurm", "python": "3.12.1", "argv": ["train.py"],
                     "parent_pid": 1},
        "times": {"start_unix_ns": T0, "last_flush_unix_ns": end, "elapsed_ns": end - T0, "end_unix_ns": end,
                  "status": "exited", "signal": None},
        "snapshot": {"interval_s": 5.0, "writes": int(hours * 720), "failures": 0, "last_error": None,
                     "last_success_unix_ns": end},
        "config": {"measure_cpu": True, "window_phase": None, "backend": None, "annotate": False},
        "histogram": {"scheme": histogram.SCHEME, "n_buckets": histogram.N_BUCKETS},
        "phases": phases,
        "counters": counters,
        "caps": {"max_paths": 10_000, "paths_overflowed": 0, "max_counters": 10_000, "counters_overflowed": 0},
        "repairs": {"mismatched_exits": 0},
        "samples": make_samples(folder, name, hours, 1.0, index, pid) if samples != "none" else None,
        "gpu": None,
        "errors": [],
    }
    size = workerfile.write_worker_file(folder / name, document)
    sidecar = folder / layout.sidecar_name(name)
    if sidecar.exists():
        size += sidecar.stat().st_size
    return size


def _write_batch(args: tuple[Path, range, int, float, str, int]) -> int:
    run_dir, indices, workers, hours, samples, nodes = args
    return sum(write_worker(run_dir, i, workers, hours, samples, nodes) for i in indices)


def generate(run_dir: Path, workers: int, hours: float, samples: str, nodes: int = 50) -> tuple[int, int]:
    """Write the run, on every usable core; returns (files, bytes)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    step = max(1, min(64, workers // (4 * cpus) or 1))
    batches = [
        (run_dir, range(a, min(workers, a + step)), workers, hours, samples, nodes) for a in range(0, workers, step)
    ]
    if cpus == 1 or len(batches) == 1:
        return workers, sum(map(_write_batch, batches))
    with ProcessPoolExecutor(cpus) as pool:
        return workers, sum(pool.map(_write_batch, batches))


def needed_bytes(workers: int, hours: float, samples: str) -> int:
    """About what the run takes on disk: 24 bytes a compressed sample row, 40 kB a worker file."""
    rows = int(hours * 3600) if samples != "none" else 0
    return workers * (rows * 24 + 40_000)


_MEASURE = r"""
import os, subprocess, sys, threading, time

def tree(root):
    # The process and its descendants, from /proc (a pool's processes come and go).
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found

def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

peak = [0]
def watch(pid, stop):
    while not stop.wait(0.05):
        peak[0] = max(peak[0], sum(pss_kib(p) for p in tree(pid)))

start = time.perf_counter()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
stop = threading.Event()
watcher = threading.Thread(target=watch, args=(process.pid, stop), daemon=True)
watcher.start()
err = process.stderr.read()
_, status, usage = os.wait4(process.pid, 0)
wall = time.perf_counter() - start
stop.set()
watcher.join()
sys.stderr.write(err.decode())
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, wall, usage.ru_utime + usage.ru_stime, peak[0])
"""


def measure(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, float]:
    """(wall s, CPU s, peak RSS of the report process in MB, peak PSS of it and its pool in MB)
    of one ``python -m lineprofiler`` run.

    The report runs as the child of a small intermediate Python that reads that child's own
    rusage with ``os.wait4`` (its CPU time includes the pool it reaped; its ``ru_maxrss`` is the
    largest single process): a child forked straight from this process would start its
    ``ru_maxrss`` at this process's size (Linux keeps the high-water mark across exec).
    """
    command = [sys.executable, "-m", "lineprofiler", *args]
    result = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, env=env)
    code_text, maxrss_text, wall_text, cpu_text, pss_text = result.stdout.split()
    code, maxrss_kib, wall = int(code_text), int(maxrss_text), float(wall_text)
    if code != 0:
        raise SystemExit(f"report failed ({code}): {result.stderr}")
    return wall, float(cpu_text), maxrss_kib / 1024.0, int(pss_text) / 1024.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--hours", type=float, default=12.0)
    parser.add_argument("--phases", type=int, default=50, help="phase paths per worker (default 50)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--samples", choices=("sidecar", "none"), default="sidecar",
                        help="write a sample file per worker (default) or none")
    parser.add_argument("--jobs", type=int, help="LINEPROFILER_REPORT_JOBS for the report (1: serial)")
    parser.add_argument("--dir", type=Path, help="keep the generated run here (reused if it exists)")
    options = parser.parse_args()

    base = options.dir or Path(tempfile.mkdtemp(prefix="lp-bench-report-"))
    run_dir = base / "profile"
    env = dict(os.environ)
    if options.jobs is not None:
        env["LINEPROFILER_REPORT_JOBS"] = str(options.jobs)
    try:
        if not (run_dir / "workers").exists():
            base.mkdir(parents=True, exist_ok=True)
            need, free = needed_bytes(options.workers, options.hours, options.samples), shutil.disk_usage(base).free
            if need > free * 0.9:
                raise SystemExit(f"the run needs about {need / 1e9:.1f} GB and {base} has {free / 1e9:.1f} GB free")
            started = time.perf_counter()
            files, size = generate(run_dir, options.workers, options.hours, options.samples, options.phases)
            print(f"generated {files} worker files, {size / 1e6:.1f} MB, in {time.perf_counter() - started:.1f}s "
                  f"({options.workers} workers x {options.hours:g} h, {options.phases} phases each, "
                  f"samples: {options.samples}, 1 per second)")
        sidecars = [path.stat().st_size for path in run_dir.glob("workers/*/*.samples")]
        if sidecars:
            rows = len(sidecars) * options.hours * 3600
            per_day = sum(sidecars) / (len(sidecars) * options.hours / 24)
            print(f"sample files: {sum(sidecars) / 1e6:.1f} MB, {per_day / 1e6:.2f} MB per worker-day, "
                  f"{sum(sidecars) / rows:.1f} bytes per row")
        baseline = measure(["--version"])
        print(f"python -m lineprofiler --version: {baseline[0]:.2f}s, {baseline[2]:.1f} MB (interpreter floor)")
        print(f"{'command':<26}{'wall median':>12}{'wall max':>10}{'CPU':>9}{'peak RSS':>11}{'with pool':>11}   target")
        html = base / "report.html"
        cases = (
            ([], "<= 10 s, <= 300 MB at 64 x 12 h"),
            (["--no-samples"], "<= 3 s, <= 100 MB"),
            (["--html", str(html)], "as report, file < 5 MB"),
        )
        for flags, target in cases:
            runs = [measure(["report", str(run_dir), *flags], env) for _ in range(options.repeat)]
            label = " ".join(["report", *flags[:1]])
            walls = [r[0] for r in runs]
            cpu = statistics.median(r[1] for r in runs)
            rss, pss = max(r[2] for r in runs), max(r[3] for r in runs)
            print(f"{label:<26}{statistics.median(walls):>11.2f}s{max(walls):>9.2f}s{cpu:>8.2f}s{rss:>8.1f} MB"
                  f"{pss:>8.1f} MB   {target}")
        print(f"report --html wrote {html.stat().st_size / 1e6:.2f} MB")
        load = os.getloadavg()
        print(f"({os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load[0]:.1f} {load[1]:.1f} "
              f"{load[2]:.1f}; a shared machine: take medians)")
    finally:
        if options.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
