"""The process that test_fork_stress.py runs: forks from threads while other threads use the profiler.

    python fork_stress_child.py MODE RUN_DIR PROGRESS_FILE [--forks N] [--forkers K] [--workers W]
                                [--snapshot S] [--sample S] [--stall S] [--backend B]

MODE ``sampler``: a stand-alone ResourceSampler (--backend) with its fork hooks
(sampling.install_fork_hooks); other threads drain, sample, read stats and contribute snapshots in
loops.
MODE ``profiler``: an accounting Profiler; W threads open phases and count, one thread flushes in
a loop, and the main thread flushes too; the snapshot thread and the sampler run at the given
intervals (0 keeps the defaults).

K threads fork N times in all; each child leaves at once with os._exit(0) (after the fork hooks
have run in it) and the parent reaps it before the next fork. Every completed fork is appended to
PROGRESS_FILE, so the test can tell a hang (no progress) from a slow machine. If nothing
progresses for --stall seconds, faulthandler prints every thread's stack to stderr (it needs no
GIL, so it works in a deadlock). At the end it prints one JSON line of results.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import threading
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: "use of fork() may lead to deadlocks"

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=["sampler", "profiler"])
parser.add_argument("run_dir")
parser.add_argument("progress")
parser.add_argument("--forks", type=int, default=300)
parser.add_argument("--forkers", type=int, default=1)
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--snapshot", type=float, default=0.0)
parser.add_argument("--sample", type=float, default=0.0)
parser.add_argument("--stall", type=float, default=60.0)
parser.add_argument("--backend", default="auto")
args = parser.parse_args()

faulthandler.dump_traceback_later(args.stall, repeat=True)
stop = threading.Event()
progress = open(args.progress, "a", buffering=1)
progress_lock = threading.Lock()
errors: list[str] = []


def forker(n: int) -> None:
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            errors.append(f"child {pid} exited with status {status}")
        with progress_lock:
            progress.write("f\n")
        # Let the other threads at the GIL: on a loaded machine the forks would otherwise
        # come back to back and the others would barely run between them.
        time.sleep(0.001)


def loop(fn) -> None:
    while not stop.is_set():
        fn()
        time.sleep(0.0005)


threads: list[threading.Thread] = []
if args.mode == "sampler":
    from lineprofiler.accounting import sampling

    sampler = sampling.ResourceSampler(
        args.run_dir, interval_s=args.sample or 0.002, capacity=64, source=args.backend
    )
    assert sampler.source == args.backend or args.backend == "auto", sampler.unavailable_reason
    # The hooks a Profiler installs for its sampler, without the rest of the Profiler.
    os.register_at_fork(
        before=sampler.before_fork,
        after_in_parent=sampler.after_fork_parent,
        after_in_child=sampler.after_fork_child,
    )
    sampler.start()
    impl = sampler._impl
    document = {"identity": {"run_id": "stress", "pid": os.getpid(), "uuid": "00000000", "host": "h"}}
    for fn in (impl.drain, impl.sample, impl.stats, lambda: sampler.contribute(dict(document))):
        threads.append(threading.Thread(target=loop, args=(fn,), daemon=True))
    flush = impl.drain
else:
    from lineprofiler.accounting import Profiler

    options = {}
    if args.snapshot:
        options["snapshot_interval_s"] = args.snapshot
    if args.sample:
        options["sample_interval_s"] = args.sample
    profiler = Profiler(run_dir=args.run_dir, role="stress", **options)

    def work(i: int) -> None:
        while not stop.is_set():
            with profiler.phase(f"worker{i}"):
                with profiler.phase("inner"):
                    profiler.count("items")
            time.sleep(0.0005)

    threads += [threading.Thread(target=work, args=(i,), daemon=True) for i in range(args.workers)]
    threads.append(threading.Thread(target=loop, args=(profiler.flush,), daemon=True))
    flush = profiler.flush

for t in threads:
    t.start()
forkers = [
    threading.Thread(target=forker, args=(args.forks // args.forkers + (i < args.forks % args.forkers),))
    for i in range(args.forkers)
]
for t in forkers:
    t.start()
while any(t.is_alive() for t in forkers):
    flush()  # the main thread takes part too, as a training loop's snapshot would
for t in forkers:
    t.join()
stop.set()
for t in threads:
    t.join()

result: dict[str, object] = {"pid": os.getpid(), "errors": errors}
if args.mode == "sampler":
    result["running"] = sampler.running
    result["restarts"] = sampler.stats().get("restarts")
    sampler.close()
else:
    profiler.close()
    result["path"] = str(profiler.path)
faulthandler.cancel_dump_traceback_later()
print(json.dumps(result), flush=True)
