"""Slowdown of the line profiler against an unprofiled run, line_profiler 5.x and cProfile.

All in one process, one workload at a time, the runs of the four modes interleaved so that drift
on a shared machine hits them alike; each figure is the median of --repeat runs. The workloads
are the functions below (this folder is the project folder):

- loop:   a tight arithmetic loop (one line event per statement, nothing else);
- fib:    naive recursive Fibonacci (a call, two or three lines and a return per call);
- stdlib: a loop whose iterations spend their time in `re` and `json` (code outside the project
          folder, which must run at full speed).

line_profiler is given the same functions with add_function(). Run:

    .venv/bin/python benchmarks/bench_lines.py [--repeat 9] [--quick]

LINEPROFILER_CLOCK=monotonic in the environment measures the CLOCK_MONOTONIC fallback instead of
the TSC.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from lineprofiler import LineProfiler  # noqa: E402

try:
    import line_profiler as _lp_mod
    from line_profiler import LineProfiler as PeerLineProfiler
except ImportError:  # the test extra installs it
    _lp_mod = None
    PeerLineProfiler = None


# -- workloads --------------------------------------------------------------------------------


def loop(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


WORDS = re.compile(r"\b(\w+)@(\w+)\.com\b")
TEXT = " ".join(f"user{i}@host{i % 7}.com and some filler text {i}" for i in range(200))
DOC = {"users": [{"id": i, "name": f"user{i}", "tags": ["a", "b", "c"], "score": i * 0.5} for i in range(60)]}


def stdlib(n):
    found = 0
    for _ in range(n):
        found += len(WORDS.findall(TEXT))
        blob = json.dumps(DOC, sort_keys=True)
        found += len(json.loads(blob)["users"])
    return found


WORKLOADS = {
    "loop": (loop, (400_000,)),
    "fib": (fib, (24,)),
    "stdlib": (stdlib, (300,)),
}


# -- modes ------------------------------------------------------------------------------------

# CPU time of this thread, not wall time: the machines these figures come from are shared, and
# being descheduled is the largest noise there. Every cost measured here is CPU work.
_now = time.thread_time_ns


def run_plain(fn, args):
    t0 = _now()
    fn(*args)
    return _now() - t0


def make_ours():
    prof = LineProfiler(project_folder=HERE)

    def run(fn, args):
        prof.clear()
        t0 = _now()
        with prof:
            fn(*args)
        return _now() - t0

    run.prof = prof  # type: ignore[attr-defined]
    return run


def make_peer(fn):
    if PeerLineProfiler is None:
        return None
    prof = PeerLineProfiler()
    prof.add_function(fn)

    def run(fn, args):
        t0 = _now()
        prof.enable_by_count()
        try:
            fn(*args)
        finally:
            prof.disable_by_count()
        return _now() - t0

    return run


def run_cprofile(fn, args):
    prof = cProfile.Profile()
    t0 = _now()
    prof.enable()
    fn(*args)
    prof.disable()
    return _now() - t0


def line_events(prof, fn) -> int:
    code = fn.__code__
    fs = prof.get_stats().get((code.co_filename, code.co_firstlineno, code.co_qualname))
    return fs.hits if fs else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=9, help="runs per mode (median reported)")
    ap.add_argument("--quick", action="store_true", help="smaller workloads, 3 runs")
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="run only these workloads")
    opts = ap.parse_args()
    if opts.repeat < 1:
        ap.error("--repeat must be >= 1")
    repeat = 3 if opts.quick else opts.repeat
    work = {
        name: (fn, tuple(a // 4 if name != "fib" else a - 3 for a in args) if opts.quick else args)
        for name, (fn, args) in WORKLOADS.items()
        if not opts.only or name in opts.only
    }
    for fn, args in work.values():  # warm up: imports, caches, specialisation
        fn(*args)
    # The unprofiled baseline, measured before any profiler has run in this process: on 3.12+
    # code that has once been instrumented by sys.monitoring (any tool: cProfile is one) stays
    # slower after the tool is gone, which would flatter every ratio measured against it.
    pristine: dict[str, list[int]] = {name: [] for name in work}
    for _ in range(repeat):
        for name, (fn, args) in work.items():
            pristine[name].append(run_plain(fn, args))
    ours = make_ours()
    peer_version = getattr(_lp_mod, "__version__", None)
    print(
        f"bench_lines: CPython {platform.python_version()}, clock {ours.prof.clock}, "
        f"median CPU time of {repeat} runs; line_profiler {peer_version or 'not installed'}"
    )
    header = (
        f"{'workload':<8} {'unprofiled':>11} {'lineprofiler':>21} {'ns/event':>8} {'line_profiler':>21} "
        f"{'cProfile':>8} {'ours vs l_p':>12} {'plain after':>11}"
    )
    print(header)
    print("-" * len(header))
    for name, (fn, args) in work.items():
        peer = make_peer(fn)
        modes = {"plain": run_plain, "ours": ours, "cprofile": run_cprofile}
        if peer is not None:
            modes["peer"] = peer
        times: dict[str, list[int]] = {m: [] for m in modes}
        for _ in range(repeat):
            for mode, runner in modes.items():
                times[mode].append(runner(fn, args))
        med = {m: statistics.median(v) for m, v in times.items()}
        base = statistics.median(pristine[name])
        events = line_events(ours.prof, fn)
        per_event = (med["ours"] - base) / events if events else float("nan")

        def cell(mode):
            if mode not in med:
                return "n/a"
            return f"{med[mode] / base:5.2f}x ({med[mode] / 1e6:6.1f} ms)"

        vs = f"{med['peer'] / med['ours']:5.1f}x" if "peer" in med else "n/a"
        print(
            f"{name:<8} {base / 1e6:8.1f} ms {cell('ours'):>21} {per_event:8.1f} {cell('peer'):>21} "
            f"{med['cprofile'] / base:7.2f}x {vs:>12} {med['plain'] / base:10.2f}x"
        )
    print(
        "ratios are against the unprofiled run measured before any profiler ran; ns/event is the\n"
        "extra CPU time per line event of the workload's own function; 'ours vs l_p' is how many\n"
        "times faster than line_profiler; 'plain after' is the unprofiled run again, after\n"
        "sys.monitoring has been used in the process (CPython leaves such code slower on 3.12+)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
