"""What `make demo` runs: the actor/learner pipeline under the accounting profiler, with each
actor's games 100 to 109 line-profiled (backend="lines") and every process traced, its report
(with STORY: the critical path through the queue, and the findings), then the lines of the
actors' MCTS from that same run (`lineprofiler report --lines`).

    python examples/demo.py [--actors 4] [--run-dir profile] [--lines-window 100 110]
                            [--pipeline-args "--games 50"]

Exit status 0 when every step worked.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIPELINE = HERE / "rl_pipeline"
RULE = "\u2500" * 62


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 74 - len(text)), flush=True)


def lines_block(report: str) -> str:
    """The LINES block of a report's text: from its title to the next block's title."""
    lines = report.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("LINES  ("))
    except StopIteration:
        return ""
    end = len(lines)
    for i in range(start + 2, len(lines) - 1):
        if lines[i + 1] == RULE or lines[i] == "CAVEATS":
            end = i
            break
    return "\n".join(lines[start:end]).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--pipeline-args", default="", help="extra arguments for rl_pipeline/pipeline.py")
    parser.add_argument(
        "--lines-window", type=int, nargs=2, default=(100, 110), metavar=("START", "STOP"),
        help="each actor's games START..STOP-1 are line-profiled (default 100 110)",
    )
    args = parser.parse_args(argv)

    # A fresh run directory: the demo shows one run, not a rerun beside an older attempt.
    shutil.rmtree(args.run_dir, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("LINEPROFILER_RUN_ID", "LINEPROFILER_ATTEMPT")}

    banner(f"1. the RL pipeline: {args.actors} actors and a learner, profiled into {args.run_dir}/")
    command = [sys.executable, str(PIPELINE / "pipeline.py"), "--actors", str(args.actors), "--run-dir", args.run_dir]
    command += ["--lines-window", *map(str, args.lines_window), "--trace", *shlex.split(args.pipeline_args)]
    pipeline = subprocess.run(command, env=env)
    if pipeline.returncode != 0:
        print(f"demo: the pipeline failed (exit status {pipeline.returncode})", file=sys.stderr)
        return 1

    banner(f"2. lineprofiler report {args.run_dir}/")
    report = subprocess.run([sys.executable, "-m", "lineprofiler", "report", args.run_dir], env=env)
    if report.returncode != 0:
        print(f"demo: the report failed (exit status {report.returncode})", file=sys.stderr)
        return 1

    start, stop = args.lines_window
    banner(f"3. lineprofiler report {args.run_dir}/ --lines: the actors' lines in games {start}..{stop - 1}")
    command = [sys.executable, "-m", "lineprofiler", "report", args.run_dir, "--lines"]
    lines = subprocess.run(command, env=env, capture_output=True, text=True)
    if lines.returncode != 0:
        sys.stderr.write(lines.stderr)
        print(f"demo: the report failed (exit status {lines.returncode})", file=sys.stderr)
        return 1
    block = lines_block(lines.stdout)
    if not block:
        print(f"demo: the report has no LINES block (did the actors play {start} games?)", file=sys.stderr)
        return 1
    sys.stdout.write(block)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
