"""A training-loop stand-in for the launcher and preemption tests: one rank of a job.

    python worker.py RUN_DIR [--steps N] [--step-s S] [--progress FILE] [--snapshot-s S]
                     [--on-sigterm default|keep-going]

Each step is ``iteration/compute`` with ``count("steps")``, the compute a sleep of ``--step-s``
(sleeping, so ranks on two busy cores still take their nominal time). After each step the
worker appends ``<completed steps> <time.time_ns()>`` to ``--progress`` with one unbuffered
``os.write``: the ground truth the tests hold the worker file against, written by the
process itself and surviving SIGKILL. ``--steps 0`` runs until a signal ends it. The line
``ready`` on stdout says the first step is done.

``--on-sigterm keep-going`` installs, before the profiler, a Python SIGTERM handler that logs
``sigterm <completed steps>`` and lets the loop go on (a job that ignores the polite signal
and is then SIGKILLed after the grace period). The profiler chains to it after its flush.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from lineprofiler.accounting import Profiler


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--step-s", type=float, default=0.01)
    parser.add_argument("--progress", default=None)
    parser.add_argument("--snapshot-s", type=float, default=5.0)
    parser.add_argument("--on-sigterm", choices=["default", "keep-going"], default="default")
    parser.add_argument("--role", default="trainer")
    args = parser.parse_args()

    fd = os.open(args.progress, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if args.progress else None
    completed = 0

    def log(text: str) -> None:
        if fd is not None:
            os.write(fd, text.encode() + b"\n")

    if args.on_sigterm == "keep-going":
        def on_sigterm(signum, frame):  # installed first: the profiler flushes, then calls it
            log(f"sigterm {completed}")

        signal.signal(signal.SIGTERM, on_sigterm)

    profiler = Profiler(run_dir=args.run_dir, role=args.role, snapshot_interval_s=args.snapshot_s)
    with profiler:
        step = 0
        while args.steps == 0 or step < args.steps:
            with profiler.phase("iteration"):
                with profiler.phase("compute"):
                    time.sleep(args.step_s)
                profiler.count("steps")
            completed += 1
            log(f"{completed} {time.time_ns()}")
            if completed == 1:
                print("ready", flush=True)
            step += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
