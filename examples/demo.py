"""What `make demo` runs: the actor/learner pipeline under the accounting profiler, its
report, then the MCTS under the line profiler.

    python examples/demo.py [--actors 4] [--run-dir profile]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIPELINE = HERE / "rl_pipeline"


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 74 - len(text)), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--pipeline-args", default="", help="extra arguments for pipeline.py")
    args = parser.parse_args(argv)

    # A fresh run directory: the demo shows one run, not a rerun beside an older attempt.
    shutil.rmtree(args.run_dir, ignore_errors=True)
    env = dict(os.environ)
    env.pop("LINEPROFILER_RUN_ID", None)

    banner(f"1. the RL pipeline: {args.actors} actors and a learner, profiled into {args.run_dir}/")
    command = [sys.executable, str(PIPELINE / "pipeline.py"), "--actors", str(args.actors), "--run-dir", args.run_dir]
    command += args.pipeline_args.split()
    if subprocess.run(command, env=env).returncode != 0:
        print("demo: the pipeline failed", file=sys.stderr)
        return 1

    banner(f"2. lineprofiler report {args.run_dir}/")
    report = subprocess.run([sys.executable, "-m", "lineprofiler", "report", args.run_dir], env=env)
    if report.returncode != 0:
        return report.returncode

    banner("3. the MCTS under LineProfiler (hits and time per line)")
    sys.path.insert(0, str(PIPELINE))
    import mcts
    from game import Board

    from lineprofiler import LineProfiler

    profiler = LineProfiler(project_folder=PIPELINE)
    profiler.clear()
    rng = random.Random(0)
    with profiler:
        for _ in range(20):
            board = Board()
            while board.winner() is None:
                visits = mcts.search(board, 64, rng)
                board.play(rng.choices(range(9), weights=visits)[0])
    profiler.print_global_top_stats(top_n=15, min_time_us=0.01)
    profiler.print_stats(min_time_us=1, top_n_lines=8, sort_by="time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
