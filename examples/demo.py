"""What `make demo` runs: the actor/learner pipeline under the accounting profiler, its
report, then the MCTS under the line profiler.

    python examples/demo.py [--actors 4] [--run-dir profile] [--pipeline-args "--games 50"]

Exit status 0 when every step worked.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIPELINE = HERE / "rl_pipeline"


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 74 - len(text)), flush=True)


def line_profile_mcts(games: int, simulations: int) -> int:
    """Step 3: the MCTS of one actor, line by line."""
    from lineprofiler import LineProfiler

    sys.path.insert(0, str(PIPELINE))
    import mcts
    from game import Board

    profiler = LineProfiler(project_folder=PIPELINE)
    profiler.clear()
    rng = random.Random(0)
    with profiler:
        for _ in range(games):
            board = Board()
            while board.winner() is None:
                visits = mcts.search(board, simulations, rng)
                board.play(rng.choices(range(9), weights=visits)[0])
    profiler.print_global_top_stats(top_n=15, min_time_us=0.01)
    profiler.print_stats(min_time_us=1, top_n_lines=6, sort_by="time")
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--pipeline-args", default="", help="extra arguments for rl_pipeline/pipeline.py")
    parser.add_argument("--line-games", type=int, default=10, help="games the line profiler watches in step 3")
    args = parser.parse_args(argv)

    # A fresh run directory: the demo shows one run, not a rerun beside an older attempt.
    shutil.rmtree(args.run_dir, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("LINEPROFILER_RUN_ID", "LINEPROFILER_ATTEMPT")}

    banner(f"1. the RL pipeline: {args.actors} actors and a learner, profiled into {args.run_dir}/")
    command = [sys.executable, str(PIPELINE / "pipeline.py"), "--actors", str(args.actors), "--run-dir", args.run_dir]
    command += shlex.split(args.pipeline_args)
    pipeline = subprocess.run(command, env=env)
    if pipeline.returncode != 0:
        print(f"demo: the pipeline failed (exit status {pipeline.returncode})", file=sys.stderr)
        return 1

    banner(f"2. lineprofiler report {args.run_dir}/")
    report = subprocess.run([sys.executable, "-m", "lineprofiler", "report", args.run_dir], env=env)
    if report.returncode != 0:
        print(f"demo: the report failed (exit status {report.returncode})", file=sys.stderr)
        return 1

    banner("3. the MCTS under LineProfiler: the top lines")
    return line_profile_mcts(args.line_games, 128)


if __name__ == "__main__":
    sys.exit(main())
