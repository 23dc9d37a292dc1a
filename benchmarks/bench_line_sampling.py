"""What ``Profiler(line_sampling=...)`` costs and how close its estimates come.

Three measurements, each printed with the Python that ran it:

- switch: the cost of one window's switch on and off, as the sampler makes it (the sampler's
  LineProfiler enabled, then stopped: on 3.12+ a sys.monitoring tool id taken with its
  callbacks and events and given back, and the code that runs next re-instrumented; on 3.11 the
  C trace function installed on every thread and removed). Measured as the extra CPU time of
  ``--switches`` rounds of (on, off, a 1 ms workload of project and standard-library code) over
  the same rounds without the switch, on 3.11 also with 8 idle threads more.
- overhead: the throughput of an actor loop with phases (a tight project loop in ``act``, json
  and re in ``learn``, both under ``step``), iterations per CPU second of the process, with
  ``Profiler(line_sampling=f)`` against the same ``Profiler`` without, for f in 0.01, 0.02,
  0.05; each run a fresh process of ``--seconds``, the modes in rotating order, the median of
  ``--repeat`` ratios.
- interleaved (``--only interleaved``): the same loop and the same ratio measured inside one
  process per fraction, in ``--periods`` alternating periods of ``--period-seconds`` with and
  without sampling (a fresh ``LineSampling`` attached for each period with it). Processes of one
  setting differ by several % here whatever they run (memory layout, the host), more than the
  2 % aimed at; periods of one process do not, so this one resolves the cost the other only
  locates. It also prints the share of the sampled periods' wall time the windows recorded.
  With ``--workloads``, the same at 0.02 for each of bench_lines' workloads.
- workloads (``--workloads``): the same ratio at 0.02 for each workload of ``bench_lines.py``
  (``_lines_workloads.py``: loop, fib, stdlib, gen, threads), each call inside a phase.
- truth: a phase whose two lines take a known share of it (``sum(range(3 n))`` and
  ``sum(range(n))``, each timed by the program), run for ``--truth-seconds`` at 0.02: the share
  the sampled stats estimate for the hot line, its stated 95 % interval, and the true share.

    .venv/bin/python benchmarks/bench_line_sampling.py [--repeat 5] [--seconds 4]
        [--truth-seconds 60] [--only switch|overhead|interleaved|workloads|truth] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FRACTIONS = (0.01, 0.02, 0.05)

# ---- the workloads (this folder is the project) ----


def spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def chatter(n: int) -> int:
    import re

    found = 0
    for i in range(n):
        text = json.dumps({"id": i, "email": f"user.{i}@host.com"})
        match = re.search(r"@(\w+)\.com", json.loads(text)["email"])
        found += len(match.group(1)) if match else 0
    return found


def actor_step(prof: Any) -> None:
    """One iteration of the actor loop: a tight project loop in ``act``, json and re in ``learn``."""
    with prof.phase("step"):
        with prof.phase("act"):
            spin(2000)
        with prof.phase("learn"):
            chatter(20)


def actor_loop(seconds: float, fraction: float | None, run_dir: str) -> float:
    """Iterations per CPU second of this process over ``seconds`` of wall time."""
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="actor", line_sampling=fraction, snapshot_interval_s=None)
    iterations = 0
    cpu0 = time.process_time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        actor_step(prof)
        iterations += 1
    cpu = time.process_time() - cpu0
    prof.close()
    return iterations / cpu


def _load_workload(name: str) -> tuple[Any, int]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_lines_workloads", HERE / "_lines_workloads.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), WORKLOAD_SIZES[name]


def interleaved_loop(fraction: float, periods: int, period_s: float, run_dir: str, name: str) -> dict[str, float]:
    """Iterations per CPU second of the actor loop (``name`` "actor") or of one of bench_lines'
    workloads, each call in a phase, in periods with sampling and without, one process; and the
    share of the sampled periods' wall time that windows recorded."""
    from lineprofiler.accounting import Profiler
    from lineprofiler.accounting.line_sampling import LineSampling

    prof = Profiler(run_dir, role="actor", snapshot_interval_s=None)
    fn, size = _load_workload(name) if name != "actor" else (None, 0)
    totals = {True: [0, 0.0], False: [0, 0.0]}  # sampled: [iterations, cpu seconds]
    windows = 0
    sampled_wall = 0.0
    for period in range(periods):
        sampled = period % 2 == 1
        sampling = LineSampling(fraction, str(HERE)) if sampled else None
        if sampling is not None:
            sampling.start()
        iterations = 0
        cpu0, wall0 = time.process_time(), time.monotonic()
        end = wall0 + period_s
        while time.monotonic() < end:
            if fn is None:
                actor_step(prof)
            else:
                with prof.phase(name):
                    fn(size)
            iterations += 1
        if sampling is not None:
            sampling.stop()
            windows += sampling.windows
            sampled_wall += time.monotonic() - wall0
        totals[sampled][0] += iterations
        totals[sampled][1] += time.process_time() - cpu0
    prof.close()
    on, off = (totals[key][0] / totals[key][1] for key in (True, False))
    return {"loss": 1 - on / off, "recorded": windows * 0.010 / sampled_wall, "windows": windows}


#: bench_lines' workloads, each at a size that makes one call a few milliseconds.
WORKLOAD_SIZES = {"loop": 20_000, "fib": 15, "stdlib": 200, "gen": 10_000, "threads": 20_000}


def workload_loop(name: str, seconds: float, fraction: float | None, run_dir: str) -> float:
    """Calls of one of bench_lines' workloads per CPU second, each call inside a phase."""
    from lineprofiler.accounting import Profiler

    fn, size = _load_workload(name)
    prof = Profiler(run_dir, role="actor", line_sampling=fraction, snapshot_interval_s=None)
    calls = 0
    cpu0 = time.process_time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with prof.phase(name):
            fn(size)
        calls += 1
    cpu = time.process_time() - cpu0
    prof.close()
    return calls / cpu


def planted(seconds: float, run_dir: str) -> dict[str, float]:
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="actor", line_sampling=0.02, snapshot_interval_s=None)
    hot = cold = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with prof.phase("act"):
            t0 = time.perf_counter()
            sum(range(30000))  # HOT
            t1 = time.perf_counter()
            sum(range(10000))  # COLD
            t2 = time.perf_counter()
        hot += t1 - t0
        cold += t2 - t1
    prof.close()
    return {"truth": hot / (hot + cold)}


# ---- switch ----


def switch_cost(rounds: int, idle_threads: int) -> float:
    """Microseconds of CPU one window's on and off adds, the re-instrumentation it causes included."""
    from lineprofiler.accounting import _phases
    from lineprofiler.lines.profiler import LineProfiler

    profiler = LineProfiler(HERE)
    profiler.make_background()
    profiler.follow_phases(_phases, 64)
    stop = threading.Event()
    idle = [threading.Thread(target=stop.wait) for _ in range(idle_threads)]
    for thread in idle:
        thread.start()

    def work() -> None:
        spin(300)
        chatter(3)

    try:
        work()
        best_plain = best_switched = float("inf")
        for _ in range(5):
            t0 = time.process_time_ns()
            for _ in range(rounds):
                work()
            best_plain = min(best_plain, time.process_time_ns() - t0)
            t0 = time.process_time_ns()
            for _ in range(rounds):
                profiler.enable()
                profiler.stop_recording()
                work()
            best_switched = min(best_switched, time.process_time_ns() - t0)
    finally:
        stop.set()
        for thread in idle:
            thread.join()
    return (best_switched - best_plain) / rounds / 1e3


# ---- driving the children ----


def child(argv: list[str]) -> None:
    kind = argv[0]
    with tempfile.TemporaryDirectory() as run_dir:
        if kind == "overhead":
            fraction = None if argv[1] == "off" else float(argv[1])
            print(json.dumps({"rate": actor_loop(float(argv[2]), fraction, run_dir)}))
        elif kind == "interleaved":
            print(json.dumps(interleaved_loop(float(argv[1]), int(argv[2]), float(argv[3]), run_dir, argv[4])))
        elif kind == "workload":
            fraction = None if argv[2] == "off" else float(argv[2])
            print(json.dumps({"rate": workload_loop(argv[1], float(argv[3]), fraction, run_dir)}))
        elif kind == "truth":
            said = planted(float(argv[1]), run_dir)
            (worker,) = Path(run_dir, "workers").rglob("w_*.json")
            section = json.loads(worker.read_text())["line_sampling"]
            print(json.dumps({**said, "section": section}))


def _spawn(*args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env, cwd=HERE, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def overhead(repeat: int, seconds: float) -> dict[str, dict[str, float]]:
    modes = ["off", *map(str, FRACTIONS)]
    ratios: dict[str, list[float]] = {m: [] for m in modes[1:]}
    for index in range(repeat):
        order = modes[index % len(modes) :] + modes[: index % len(modes)]
        rates = {mode: float(_spawn("overhead", mode, str(seconds))["rate"]) for mode in order}  # type: ignore[arg-type]
        for mode in modes[1:]:
            ratios[mode].append(rates[mode] / rates["off"])
    return {
        mode: {"loss": 1 - statistics.median(values), "low": 1 - max(values), "high": 1 - min(values)}
        for mode, values in ratios.items()
    }


def interleaved(periods: int, period_s: float, with_workloads: bool) -> dict[str, dict[str, float]]:
    """Per fraction for the actor loop; then, with ``with_workloads``, per workload at 0.02."""
    runs = [(str(fraction), "actor") for fraction in FRACTIONS]
    runs += [("0.02", name) for name in WORKLOAD_SIZES] if with_workloads else []
    return {
        f"{name} at {fraction}": _spawn("interleaved", fraction, str(periods), str(period_s), name)  # type: ignore[misc]
        for fraction, name in runs
    }


def workloads(repeat: int, seconds: float) -> dict[str, dict[str, float]]:
    out = {}
    for name in WORKLOAD_SIZES:
        ratios = []
        for index in range(repeat):
            modes = ("off", "0.02") if index % 2 == 0 else ("0.02", "off")
            rates = {mode: float(_spawn("workload", name, mode, str(seconds))["rate"]) for mode in modes}  # type: ignore[arg-type]
            ratios.append(rates["0.02"] / rates["off"])
        out[name] = {"loss": 1 - statistics.median(ratios), "low": 1 - max(ratios), "high": 1 - min(ratios)}
    return out


def truth(seconds: float) -> dict[str, object]:
    from lineprofiler.report.compute.blocks.sampled_lines import interval

    said = _spawn("truth", str(seconds))
    section = said["section"]
    assert isinstance(section, dict)
    (act,) = [p for p in section["phases"] if p["path"] == "act"]
    source = Path(__file__).read_text().splitlines()
    hot_line = next(n for n, text in enumerate(source, 1) if text.rstrip().endswith("# HOT"))
    (row,) = [r for r in act["lines"] if r[2] == hot_line]
    share = row[5] / act["time_ns"]
    return {
        "estimate": share,
        "interval": interval(share, act["windows"]),
        "truth": said["truth"],
        "windows": act["windows"],
        "coverage": section["sampled_ns"] / section["wall_ns"],
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--truth-seconds", type=float, default=60.0)
    parser.add_argument("--switches", type=int, default=200)
    parser.add_argument("--periods", type=int, default=20)
    parser.add_argument("--period-seconds", type=float, default=2.0)
    parser.add_argument("--only", choices=("switch", "overhead", "interleaved", "workloads", "truth"))
    parser.add_argument("--workloads", action="store_true", help="also bench_lines' workloads at 0.02")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    out: dict[str, object] = {"python": platform.python_version()}
    print(f"Python {platform.python_version()} ({sys.platform}, {os.cpu_count()} CPUs)")
    if args.only in (None, "switch"):
        cost = switch_cost(args.switches, 0)
        out["switch_us"] = cost
        line = f"switch: one window on and off costs {cost:.0f} us of CPU"
        if sys.version_info < (3, 12):
            crowded = switch_cost(args.switches, 8)
            out["switch_us_8_threads"] = crowded
            line += f" ({crowded:.0f} us with 8 idle threads more)"
        print(line)
    if args.only in (None, "overhead"):
        losses = overhead(args.repeat, args.seconds)
        out["overhead"] = losses
        for mode, loss in losses.items():
            print(
                f"overhead at {mode}: {loss['loss'] * 100:.1f} % throughput "
                f"(range {loss['low'] * 100:.1f} .. {loss['high'] * 100:.1f} %)"
            )
    if args.only in (None, "interleaved"):
        per_run = interleaved(args.periods, args.period_seconds, args.workloads)
        out["interleaved"] = per_run
        for mode, result in per_run.items():
            print(
                f"interleaved, {mode}: {result['loss'] * 100:.1f} % throughput, windows recorded "
                f"{result['recorded'] * 100:.2f} % of the sampled periods ({result['windows']:.0f} windows)"
            )
    if args.only == "workloads" or (args.only is None and args.workloads):
        per = workloads(args.repeat, args.seconds)
        out["workloads"] = per
        for name, loss in per.items():
            print(
                f"{name} at 0.02: {loss['loss'] * 100:.1f} % throughput "
                f"(range {loss['low'] * 100:.1f} .. {loss['high'] * 100:.1f} %)"
            )
    if args.only in (None, "truth"):
        result = truth(args.truth_seconds)
        out["truth"] = result
        print(
            f"truth after {args.truth_seconds:g} s at 0.02: hot line {result['estimate'] * 100:.1f} % "  # type: ignore[operator]
            f"\u00b1 {result['interval'] * 100:.1f} % of its phase, true {result['truth'] * 100:.1f} % "  # type: ignore[operator]
            f"({result['windows']} windows, coverage {result['coverage'] * 100:.2f} %)"  # type: ignore[operator]
        )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
