"""The accounting profiler's cost on a whole pipeline: the 16-actor RL pipeline of
examples/rl_pipeline with the profiler on, against the same pipeline with
LINEPROFILER_PROFILE=0, in the same run of this script.

    python benchmarks/bench_pipeline.py [--actors 16] [--games 60] [--pairs 5]

Both arms run exactly the same work (the same seeds, games and simulations; the profiler
off is the same code with every phase and count a C no-op and nothing written). The arms
alternate, on-off then off-on, so a drift in the machine's load falls on both. Printed per
run: wall time, and the CPU time of the whole process tree (user + system of the learner
and every actor, from RUSAGE_CHILDREN). The overhead is the ratio of the medians, and the
median of the per-pair ratios; CPU time is the steadier figure on a shared machine, wall
time the one the target is stated in (within 3 %). Figures, not pass/fail.

The last profiled run's worker files are checked as the tests check them (17 processes,
one run, every game counted) and its report's header is printed.

On a machine shared with other work the run-to-run noise is far larger than 3 %, so the
script also prints the profiler's cost as *accounted*: the profiled run's own numbers of
phase entries, io=True entries, count() calls and snapshot writes (from its worker files),
each times its unit cost measured here in this process, over the unprofiled CPU time. That
figure does not depend on the load; it leaves out what is not one of those operations (the
import of lineprofiler, paid by both arms; the start and exit files).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIPELINE = REPO / "examples" / "rl_pipeline" / "pipeline.py"


def clean_env(profile: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    env["LINEPROFILER_PROFILE"] = "1" if profile else "0"
    return env


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(args: argparse.Namespace, profile: bool, run_dir: Path, summary: Path) -> tuple[float, float]:
    command = [
        sys.executable, str(PIPELINE), "--actors", str(args.actors), "--games", str(args.games),
        "--simulations", str(args.simulations), "--backend", args.backend, "--start-method", args.start_method,
        "--run-dir", str(run_dir), "--summary", str(summary),
    ]
    cpu0 = children_cpu_s()
    t0 = time.perf_counter()
    result = subprocess.run(command, env=clean_env(profile), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = children_cpu_s() - cpu0
    if result.returncode != 0:
        raise SystemExit(f"bench_pipeline: the pipeline failed (exit {result.returncode}): {result.stderr[-2000:]}")
    return wall, cpu


def check_profiled_run(run_dir: Path, summary_path: Path, args: argparse.Namespace) -> list[str]:
    """The checks the tests make, on the benchmark's own run; returns the report's header."""
    from lineprofiler.runfiles import workerfile

    summary = json.loads(summary_path.read_text())
    docs = [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]
    roles = sorted(d["identity"]["role"] for d in docs)
    problems = []
    if roles != ["actor"] * args.actors + ["learner"]:
        problems.append(f"roles {roles}")
    if {d["identity"]["run_id"] for d in docs} != {summary["run_id"]}:
        problems.append("more than one run id")
    games = sum(c["total"] for d in docs for c in d["counters"] if c["name"] == "games")
    if games != args.actors * args.games:
        problems.append(f"{games} games counted, {args.actors * args.games} played")
    simulations = sum(c["total"] for d in docs for c in d["counters"] if c["name"] == "mcts_simulations")
    if simulations != summary["samples"] * args.simulations:
        problems.append(f"{simulations} simulations counted, {summary['samples'] * args.simulations} run")
    if any(d["times"]["status"] != "exited" or d["errors"] for d in docs):
        problems.append("a worker did not exit cleanly or recorded errors")
    report = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "report", str(run_dir)], capture_output=True, text=True
    )
    if report.returncode != 0:
        problems.append(f"report failed: {report.stderr.strip()}")
    if "CAVEATS" in report.stdout:
        problems.append("the report has CAVEATS")
    if problems:
        raise SystemExit("bench_pipeline: the profiled run is wrong: " + "; ".join(problems))
    return report.stdout.splitlines()[:3]


def operations(run_dir: Path) -> dict[str, int]:
    """How many of each profiler operation the profiled run performed, from its worker files."""
    from lineprofiler.runfiles import workerfile

    ops = {"phase": 0, "phase_io": 0, "count": 0, "snapshot": 0}
    for path in workerfile.find_worker_files(run_dir):
        doc = workerfile.read_worker_file(path)
        entries = {p["path"]: p["entries"] for p in doc["phases"]}
        for phase in doc["phases"]:
            ops["phase_io" if phase.get("io_bytes") is not None else "phase"] += phase["entries"]
        # every counter here is counted once per entry of the phase it is counted under
        ops["count"] += sum(entries.get(c["phase"], 0) for c in doc["counters"])
        ops["snapshot"] += doc["snapshot"]["writes"]
    return ops


def unit_costs_s() -> dict[str, float]:
    """Seconds per operation, measured in this process: median of 5 rounds."""
    from lineprofiler.accounting import Profiler

    with tempfile.TemporaryDirectory(prefix="bench_pipeline_units_") as tmp:
        profiler = Profiler(run_dir=tmp, role="bench", snapshot_interval_s=None)
        for name in ("iteration", "self_play", "mcts", "env_step", "send_trajectory"):  # a tree like an actor's
            with profiler.phase(name):
                profiler.count("games")
        phase, count = profiler.phase, profiler.count
        rows = {
            "phase": ("with phase('mcts'): pass", 100_000),
            "phase_io": ("with phase('checkpoint', io=True): pass", 5_000),
            "count": ("count('mcts_simulations', 256)", 100_000),
            "snapshot": ("profiler.flush()", 200),
        }
        costs = {}
        for key, (statement, number) in rows.items():
            timer = timeit.Timer(statement, globals={"phase": phase, "count": count, "profiler": profiler})
            costs[key] = statistics.median(timer.repeat(5, number)) / number
        profiler.close()
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=16)
    parser.add_argument("--games", type=int, default=60, help="games per actor (default 60)")
    parser.add_argument("--simulations", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=5, help="on/off pairs, alternating order (default 5)")
    parser.add_argument("--backend", default="auto", choices=["auto", "torch", "numpy", "python"])
    parser.add_argument("--start-method", default="spawn", choices=["spawn", "fork", "forkserver"])
    args = parser.parse_args(argv)

    print(f"bench_pipeline: {args.actors} actors x {args.games} games x {args.simulations} simulations, "
          f"{args.start_method}, backend {args.backend}; Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="bench_pipeline_") as tmp:
        base = Path(tmp)
        last_on: tuple[Path, Path] | None = None
        for pair in range(args.pairs):
            order = (True, False) if pair % 2 == 0 else (False, True)
            for profile in order:
                run_dir = base / f"run_{pair}_{'on' if profile else 'off'}"
                summary = base / f"summary_{pair}_{'on' if profile else 'off'}.json"
                wall, cpu = run_once(args, profile, run_dir, summary)
                times[profile].append((wall, cpu))
                if profile:
                    last_on = (run_dir, summary)
                print(f"  pair {pair + 1}  profiler {'on ' if profile else 'off'}  wall {wall:7.2f} s   "
                      f"cpu {cpu:7.2f} s", flush=True)
        assert last_on is not None
        header = check_profiled_run(*last_on, args)
        ops = operations(last_on[0])

    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    for label, index in (("wall", 0), ("cpu", 1)):
        on = [t[index] for t in times[True]]
        off = [t[index] for t in times[False]]
        ratio_of_medians = statistics.median(on) / statistics.median(off) - 1
        pair_ratios = [a / b - 1 for a, b in zip(on, off, strict=True)]
        print(
            f"{label:>4}: median on {statistics.median(on):7.2f} s, off {statistics.median(off):7.2f} s   "
            f"overhead {100 * ratio_of_medians:+.2f} % (ratio of medians), "
            f"{100 * statistics.median(pair_ratios):+.2f} % (median of pairs; "
            f"pairs {', '.join(f'{100 * r:+.1f}' for r in pair_ratios)})"
        )
    costs = unit_costs_s()
    accounted = sum(ops[k] * costs[k] for k in ops)
    off_cpu = statistics.median(t[1] for t in times[False])
    print(
        "accounted: " + ", ".join(f"{ops[k]:,} {k} x {costs[k] * 1e6:.2f} us" for k in ops)
        + f" = {accounted:.3f} s of CPU, {100 * accounted / off_cpu:.2f} % of the unprofiled run's CPU"
    )
    print(f"the profiled run's report (checked: {args.actors + 1} processes, one run, "
          "every game and simulation counted):")
    for line in header:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
