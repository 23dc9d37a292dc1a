"""How long the story of a traced run takes to report, and how much memory, at scale.

Generates a run of ``--workers`` traced processes (one learner, the rest actors) of ``--spans``
exact spans each (default 200,000: a full ring), each actor's iterations dealt round-robin over
``--threads`` threads (default 1), written with the real writer
(``workerfile.write_worker_file``): each actor signals a batch every 100 iterations, the learner
waits on some of each actor's batches (its links stay under the 50,000 a ring holds). One
actor's file is encoded once and copied with its identity and keys changed, so generating a
thousand files takes a minute, not an hour. Then runs, each in a child process, ``lineprofiler
report RUN`` (text: the story block is computed with the rest), ``report --json``, ``trace
--html`` and ``export --perfetto``, and prints for each its wall time and the child's peak RSS
(``ru_maxrss`` from ``os.wait4``), its CPU time with its pool's, and the machine's load then.

Targets: 64 workers x 200,000 spans <= 10 s and <= 300 MB; 1,024 workers <= 60 s and <= 1 GB.

    python benchmarks/bench_story.py                       # 64 workers x 200,000 spans
    python benchmarks/bench_story.py --threads 8           # the same over 8 threads per worker
    python benchmarks/bench_story.py --workers 1024 --dir /tmp/story1024
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lineprofiler.runfiles import histogram, spanfile, workerfile

S = 1_000_000_000
T0 = 1_786_660_860 * S
MONO0 = 5_000 * S
#: Placeholders replaced in the encoded template, one worker at a time (same widths).
PID, UUID, KEY = 999_999_999, "abcdef01", "Wxxxxx"
PHASES = ("iteration", "iteration/act", "iteration/send")


def _phase_entries(counts: dict[str, tuple[int, int]], ids: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "id": ids[path],
            "path": path,
            "entries": n,
            "wall_ns": wall,
            "self_ns": wall,
            "cpu_ns": wall // 2,
            "min_ns": 1,
            "max_ns": wall,
            "hist": [[histogram.bucket_index(max(1, wall // max(1, n))), n]],
            "io": False,
            "sync": False,
            "io_bytes": None,
            "overflow": False,
            "open_entries": 0,
            "open_ns": 0,
            "open_self_ns": 0,
        }
        for path, (n, wall) in counts.items()
    ]


def _document(
    role: str,
    spans: list[list[int]],
    links: list[list[Any]],
    counts: dict[str, tuple[int, int]],
    elapsed: int,
    threads: int = 1,
) -> dict[str, Any]:
    ids = {path: n + 2 for n, path in enumerate(PHASES)}
    identity = {
        "run_id": "20260813T2241-b1e5c0",
        "attempt": 0,
        "role": role,
        "host": "node00",
        "pid": PID,
        "uuid": UUID,
        "rank": None,
        "python": "3.12.1",
        "argv": ["bench.py"],
    }
    tree = {"phases": _phase_entries(counts, ids), "counters": [], "caps": {}, "repairs": {}, "own_io_subtracted": None}
    document = workerfile.build_document(
        identity=identity,
        status="exited",
        start_unix_ns=T0,
        now_unix_ns=T0 + elapsed,
        elapsed_ns=elapsed,
        final=True,
        signal=None,
        interval_s=5.0,
        writes=1,
        failures=0,
        last_error=None,
        config={"measure_cpu": True},
        tree=tree,
        own_io_excluded=None,
    )
    document["trace"] = {
        "clock": "monotonic",
        "clock_pairs": [[MONO0, T0, 1_000], [MONO0 + elapsed, T0 + elapsed, 1_000]],
        "capacity": 200_000,
        "recorded": len(spans),
        "dropped": 0,
        "threads": [
            {"ident": 1 + i, "native_id": PID + i, "name": "MainThread" if i == 0 else f"worker-{i}"}
            for i in range(threads)
        ],
        "spans": spanfile.columns_bytes(spans),
        "open": [],
        "links_capacity": 50_000,
        "links_recorded": len(links),
        "links_dropped": 0,
        "links": links,
    }
    return document


def actor_template(n_spans: int, threads: int = 1) -> tuple[bytes, bytes, int, list[int]]:
    """One actor's worker file and spans file: iterations of act (40 us) and send (10 us); a batch every 100.
    Iteration k runs on thread k % threads."""
    spans: list[list[int]] = []
    links: list[list[Any]] = []
    t, k, signals = MONO0, 0, []
    counts = {p: [0, 0] for p in PHASES}
    while len(spans) + 3 <= n_spans:
        start, thread = t, k % threads
        spans.append([start, 0, 2, thread, 25_000])
        spans.append([t, t + 40_000, 3, thread, 39_000])
        t += 40_000
        spans.append([t, t + 10_000, 4, thread, 9_000])
        if k % 100 == 0:
            links.append(["signal", "batches", f"{KEY}-{k // 100}", t + 9_000, thread, 4])
            signals.append(t + 9_000)
        t += 10_000
        spans[-3][1] = t
        for path, wall in zip(PHASES, (t - start, 40_000, 10_000), strict=True):
            counts[path][0] += 1
            counts[path][1] += wall
        k += 1
    doc = _document("actor", spans, links, {p: (n, w) for p, (n, w) in counts.items()}, t - MONO0, threads)
    with tempfile.TemporaryDirectory() as folder:  # the real writer: the worker file and its spans file
        path = Path(folder) / workerfile.worker_file_name("20260813T2241-b1e5c0", PID, UUID)
        workerfile.write_worker_file(path, doc)
        (spans_file,) = Path(folder).glob("*" + spanfile.SUFFIX)
        return path.read_bytes(), spans_file.read_bytes(), t - MONO0, signals


def generate(run_dir: Path, workers: int, n_spans: int, threads: int = 1) -> None:
    template, spans_template, elapsed, signals = actor_template(n_spans, threads)
    template_stem = workerfile.worker_file_name("20260813T2241-b1e5c0", PID, UUID).removesuffix(".json")
    folder = workerfile.worker_dir(run_dir, "node00")
    folder.mkdir(parents=True, exist_ok=True)
    actors = workers - 1
    for i in range(actors):
        pid, uuid = 100_000 + i, f"{i:08x}"
        data = template.replace(f'"pid":{PID}'.encode(), f'"pid":{pid}'.encode())
        data = data.replace(f'"uuid":"{UUID}"'.encode(), f'"uuid":"{uuid}"'.encode())
        data = data.replace(KEY.encode(), f"W{i:05d}".encode())
        name = workerfile.worker_file_name("20260813T2241-b1e5c0", pid, uuid)
        data = data.replace(template_stem.encode(), name.removesuffix(".json").encode())
        (folder / name).write_bytes(data)
        (folder / spanfile.file_name(name, 1)).write_bytes(spans_template)
    # The learner: waits on each actor's first batches, then trains 1 ms.
    per_actor = max(1, min(len(signals), 40_000 // max(1, actors)))
    spans, links = [], []
    t = MONO0
    for b in range(per_actor):
        start = t
        t = max(t, signals[b] + 50_000)
        for i in range(actors):
            links.append(["wait", "batches", f"W{i:05d}-{b}", t, 0, 3])
        spans.append([start, t, 3, 0, 1_000])
        spans.append([t, t + 1_000_000, 4, 0, 1_000_000])
        t += 1_000_000
    counts = {"iteration": (0, 0), "iteration/act": (per_actor, t - MONO0), "iteration/send": (per_actor, 0)}
    doc = _document("learner", spans, links, counts, max(elapsed, t - MONO0))
    doc["identity"]["pid"], doc["identity"]["uuid"] = 99, "0000ffff"
    workerfile.write_worker_file(folder / workerfile.worker_file_name("20260813T2241-b1e5c0", 99, "0000ffff"), doc)


def measure(args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (with the pool it starts) and peak RSS (MB, its own) of
    ``python -m lineprofiler ARGS`` in a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "lineprofiler", *args], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        raise SystemExit(f"lineprofiler {' '.join(args)} failed: status {status}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=1, help="threads per actor (its iterations round-robin)")
    parser.add_argument("--dir", help="where to write the run (default: a temporary folder, removed)")
    parser.add_argument(
        "--only",
        choices=("report", "json", "html", "perfetto"),
        action="append",
        help="run only these commands (repeatable; default all)",
    )
    args = parser.parse_args()
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-story-"))
    try:
        start = time.perf_counter()
        existing = list((root / "workers").glob("*/w_*.json"))
        if len(existing) != args.workers:  # --dir of a run this made before is reused as it is
            generate(root, args.workers, args.spans, args.threads)
        size = sum(p.stat().st_size for p in (root / "workers").rglob("w_*.json"))
        spans_size = sum(p.stat().st_size for p in (root / "workers").rglob("w_*" + spanfile.SUFFIX))
        print(
            f"{args.workers} workers x {args.spans:,} spans over {args.threads} thread(s): "
            f"{size / 1e6:,.0f} MB of worker files and "
            f"{spans_size / 1e6:,.0f} MB of spans files, "
            f"generated in {time.perf_counter() - start:.1f} s"
        )
        out = root / "out"
        out.mkdir(exist_ok=True)
        commands = {
            "report": ("report (text)", ["report", str(root)]),
            "json": ("report --json", ["report", str(root), "--json"]),
            "html": ("trace --html", ["trace", str(root), "--html", str(out / "trace.html"), "-q"]),
            "perfetto": ("export --perfetto", ["export", str(root), "--perfetto", str(out / "trace.json")]),
        }
        for key in args.only or list(commands):
            name, argv = commands[key]
            load = os.getloadavg()[0]
            wall, cpu, rss = measure(argv)
            print(f"  {name:<18} {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak RSS {rss:7.0f} MB  (load {load:.1f})")
        for name in ("trace.html", "trace.json"):
            if (out / name).exists():
                print(f"  {name}: {(out / name).stat().st_size / 1e6:.1f} MB")
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
