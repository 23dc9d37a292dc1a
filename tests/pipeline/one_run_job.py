"""One job of the one-run tests: a parent that starts workers, each constructing its own
``Profiler(run_dir=..., role="actor")``, the most natural code there is.

    python one_run_job.py RUN_DIR --kind process|pool|executor|subprocess --method spawn|fork|forkserver|default
                          --workers N [--profiled] [--faults] [--barrier DIR --peers K] [--child INDEX]

``--profiled``: the parent constructs ``Profiler(role="learner")`` before starting workers;
otherwise it never imports lineprofiler. Every worker records ``STEPS`` x ``iteration`` with
``count("items", index + 1)``. ``--faults`` (process kind, N >= 2): the last worker raises
after its steps and the one before it flushes once, then SIGKILLs itself. ``--barrier``:
after its profiler exists, the parent (each subprocess child, for that kind) creates a file
in DIR and waits until K files are there, so that K processes are certainly alive at once.
``--child INDEX`` runs one worker as a plain script (what ``--kind subprocess`` starts).
The parent prints the workers' exit codes, comma-separated (for a pool or an executor: the
pids that ran a task).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STEPS = 5
_PROFILER = None


def barrier(folder: str | None, peers: int) -> None:
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / f"{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while len(os.listdir(folder)) < peers:
        if time.monotonic() > deadline:
            raise SystemExit("barrier: the other processes never came")
        time.sleep(0.01)


def record(profiler, index: int) -> None:
    for _ in range(STEPS):
        with profiler.phase("iteration"):
            profiler.count("items", index + 1)


def actor(run_dir: str, index: int, workers: int, faults: bool) -> None:
    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=run_dir, role="actor", snapshot_interval_s=60)
    record(profiler, index)
    if faults and workers >= 2 and index == workers - 2:
        profiler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    if faults and index == workers - 1:
        raise RuntimeError("worker failed on purpose")
    profiler.close()


def pool_init(run_dir: str) -> None:
    global _PROFILER
    from lineprofiler.accounting import Profiler

    _PROFILER = Profiler(run_dir=run_dir, role="actor", snapshot_interval_s=60)


def pool_task(index: int) -> int:
    record(_PROFILER, index)
    return os.getpid()


def child(args: argparse.Namespace) -> int:
    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=args.run_dir, role="actor", snapshot_interval_s=60)
    barrier(args.barrier, args.peers)
    record(profiler, args.child)
    profiler.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--kind", default="process", choices=["process", "pool", "executor", "subprocess"])
    parser.add_argument("--method", default="spawn", choices=["spawn", "fork", "forkserver", "default"])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--profiled", action="store_true")
    parser.add_argument("--faults", action="store_true")
    parser.add_argument("--barrier", default=None)
    parser.add_argument("--peers", type=int, default=1)
    parser.add_argument("--child", type=int, default=None)
    args = parser.parse_args()
    if args.child is not None:
        return child(args)

    learner = None
    if args.profiled:
        from lineprofiler.accounting import Profiler

        learner = Profiler(run_dir=args.run_dir, role="learner", snapshot_interval_s=60)
    if args.kind != "subprocess":
        barrier(args.barrier, args.peers)  # two jobs' parents, certainly alive at once
    ctx = mp.get_context(None if args.method == "default" else args.method)
    codes: list[int | None] = []
    if args.kind == "process":
        procs = [
            ctx.Process(target=actor, args=(args.run_dir, i, args.workers, args.faults)) for i in range(args.workers)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        codes = [p.exitcode for p in procs]
    elif args.kind == "pool":
        pool = ctx.Pool(args.workers, initializer=pool_init, initargs=(args.run_dir,))
        pids = pool.map(pool_task, range(2 * args.workers), chunksize=1)
        pool.close()
        pool.join()
        codes = sorted(set(pids))
    elif args.kind == "executor":
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers, mp_context=ctx, initializer=pool_init, initargs=(args.run_dir,)) as ex:
            pids = list(ex.map(pool_task, range(2 * args.workers)))
        codes = sorted(set(pids))
    else:
        command = [sys.executable, __file__, args.run_dir, "--barrier", args.barrier or ""]
        command += ["--peers", str(args.workers)]
        children = [subprocess.Popen([*command, "--child", str(i)]) for i in range(args.workers)]
        codes = [c.wait() for c in children]
    print(",".join(str(c) for c in codes), flush=True)
    if learner is not None:
        with learner.phase("launch"):
            pass
        learner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
