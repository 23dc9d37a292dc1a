"""Slowdown of the line profiler against an unprofiled run, line_profiler 5.x and cProfile.

All in one process. The workloads (in _lines_workloads.py; this folder is the project folder):

- loop:   a tight arithmetic loop (one line event per statement, nothing else);
- fib:    naive recursive Fibonacci (a call, two line events and a return per call);
- stdlib: a loop whose iterations spend their time in `re` and `json` (code outside the project
          folder, which must run at full speed).

Each repetition runs the four modes back to back in rotating order: unprofiled, lineprofiler,
line_profiler (add_function() on the same functions) and cProfile. A mode's figure is the median
over repetitions of its time divided by the unprofiled time of the same repetition, so slow drift
in the load of a shared machine cancels out. Times are this thread's CPU time. The unprofiled runs
use a second copy of the workload module that no profiler ever touches, so code that has been
instrumented once by sys.monitoring (which stays a little slower on 3.12+) never serves as the
baseline.

    .venv/bin/python benchmarks/bench_lines.py [--repeat 11] [--quick] [--only fib]

LINEPROFILER_CLOCK=monotonic in the environment measures the CLOCK_MONOTONIC fallback.

``--children``: the same workloads in 4 spawn workers started by a parent that is unprofiled,
or that runs LineProfiler(children=True) (so each worker is line-profiled from its start and
writes its file at exit). Reported: the wall time from start to join of all four, and each
worker's own CPU time in the workload, profiled over unprofiled, next to the in-process ratio
of the same workload; medians over repetitions, the two modes alternating.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import multiprocessing
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
# lineprofiler as installed (editable or not): the C modules are never built inside src/.

from lineprofiler import LineProfiler  # noqa: E402

try:
    import line_profiler as _peer_mod
    from line_profiler import LineProfiler as PeerLineProfiler
except ImportError:  # the test extra installs it
    _peer_mod = None
    PeerLineProfiler = None


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / "_lines_workloads.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


PROFILED = load("_lines_workloads_profiled")
PLAIN = load("_lines_workloads_plain")

WORKLOADS = {"loop": (400_000,), "fib": (25,), "stdlib": (300,)}
QUICK = {"loop": (100_000,), "fib": (21,), "stdlib": (75,)}

# CPU time of this thread, not wall time: on a shared machine being descheduled is the largest
# noise, and every cost measured here is CPU work.
_now = time.thread_time_ns


def run_plain(name, args):
    fn = getattr(PLAIN, name)
    t0 = _now()
    fn(*args)
    return _now() - t0


class Ours:
    def __init__(self) -> None:
        self.prof = LineProfiler(project_folder=HERE)

    def __call__(self, name, args):
        fn = getattr(PROFILED, name)
        self.prof.clear()
        t0 = _now()
        with self.prof:
            fn(*args)
        return _now() - t0

    def line_events(self, name) -> int:
        code = getattr(PROFILED, name).__code__
        fs = self.prof.get_stats().get((code.co_filename, code.co_firstlineno, code.co_qualname))
        return fs.hits if fs else 0


class Peer:
    def __init__(self, name) -> None:
        assert PeerLineProfiler is not None
        self.prof = PeerLineProfiler()
        self.prof.add_function(getattr(PROFILED, name))

    def __call__(self, name, args):
        fn = getattr(PROFILED, name)
        t0 = _now()
        self.prof.enable_by_count()
        try:
            fn(*args)
        finally:
            self.prof.disable_by_count()
        return _now() - t0


def run_cprofile(name, args):
    fn = getattr(PROFILED, name)
    prof = cProfile.Profile()
    t0 = _now()
    prof.enable()
    fn(*args)
    prof.disable()
    return _now() - t0


N_WORKERS = 4
CHILD_WORKLOADS = {"loop": (2_000_000,), "fib": (27,), "stdlib": (1500,)}
CHILD_QUICK = {"loop": (400_000,), "fib": (23,), "stdlib": (300,)}


def _child(profiled: bool, name: str, args: tuple, results) -> None:
    fn = getattr(PROFILED if profiled else PLAIN, name)
    t0 = _now()
    fn(*args)
    results.put(_now() - t0)


def _run_workers(profiled: bool, name: str, args: tuple, out_dir: str) -> tuple[int, list[int]]:
    """Wall ns from the first start to the last join, and each worker's CPU ns in the workload."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    prof = LineProfiler(project_folder=HERE, children=True, output_dir=out_dir) if profiled else None
    if prof is not None:
        prof.enable()
    try:
        t0 = time.perf_counter_ns()
        workers = [ctx.Process(target=_child, args=(profiled, name, args, results)) for _ in range(N_WORKERS)]
        for w in workers:
            w.start()
        cpu = [results.get() for _ in workers]
        for w in workers:
            w.join()
        wall = time.perf_counter_ns() - t0
    finally:
        if prof is not None:
            prof.disable()
    if any(w.exitcode != 0 for w in workers):
        raise SystemExit(f"a worker failed: exit codes {[w.exitcode for w in workers]}")
    return wall, cpu


def children_main(opts: argparse.Namespace) -> int:
    repeat = 3 if opts.quick else min(opts.repeat, 5)
    sizes = CHILD_QUICK if opts.quick else CHILD_WORKLOADS
    print(
        f"bench_lines --children: CPython {platform.python_version()}, {N_WORKERS} spawn workers, "
        f"median of {repeat} repetitions (modes alternating)"
    )
    header = (
        f"{'workload':<8} {'wall unprof.':>13} {'wall prof.':>11} {'wall x':>7} "
        f"{'child CPU x':>12} {'in-process x':>13}"
    )
    print(header)
    print("-" * len(header))
    ours = Ours()
    out_dir = tempfile.mkdtemp(prefix="bench-lines-children-")
    try:
        for name in sizes:
            if opts.only and name not in opts.only:
                continue
            args = sizes[name]
            walls: dict[bool, list[int]] = {False: [], True: []}
            cpus: dict[bool, list[int]] = {False: [], True: []}
            for rep in range(repeat):
                for profiled in ((False, True) if rep % 2 == 0 else (True, False)):
                    wall, cpu = _run_workers(profiled, name, args, out_dir)
                    walls[profiled].append(wall)
                    cpus[profiled].append(int(statistics.median(cpu)))
            getattr(PLAIN, name)(*args)
            getattr(PROFILED, name)(*args)
            inproc = statistics.median(ours(name, args) / run_plain(name, args) for _ in range(repeat))
            w0, w1 = statistics.median(walls[False]), statistics.median(walls[True])
            c_ratio = statistics.median(p / u for p, u in zip(cpus[True], cpus[False], strict=True))
            print(
                f"{name:<8} {w0 / 1e6:10.0f} ms {w1 / 1e6:8.0f} ms {w1 / w0:6.2f}x {c_ratio:11.2f}x {inproc:12.2f}x"
            )
        files = sorted(Path(out_dir).glob("l_*.json"))
        print(
            f"wall: start of the first worker to the join of the last (spawn start-up included);\n"
            f"child CPU: each worker's CPU time in the workload, profiled over unprofiled (median worker);\n"
            f"in-process: the same workload profiled in this process over unprofiled (CPU time).\n"
            f"{len(files)} line-stats files were written by the profiled repetitions."
        )
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=11, help="repetitions (medians reported)")
    ap.add_argument("--quick", action="store_true", help="smaller workloads, 3 repetitions")
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="run only these workloads")
    ap.add_argument("--children", action="store_true", help=f"the workloads in {N_WORKERS} spawn workers instead")
    opts = ap.parse_args()
    if opts.repeat < 1:
        ap.error("--repeat must be >= 1")
    if opts.children:
        return children_main(opts)
    repeat = 3 if opts.quick else opts.repeat
    sizes = QUICK if opts.quick else WORKLOADS
    ours = Ours()
    print(
        f"bench_lines: CPython {platform.python_version()}, lineprofiler clock {ours.prof.clock}, "
        f"line_profiler {getattr(_peer_mod, '__version__', 'not installed')}; "
        f"median of {repeat} repetitions, CPU time"
    )
    header = (
        f"{'workload':<8} {'unprofiled':>11} {'lineprofiler':>13} {'extra':>9} {'ns/line':>8} "
        f"{'line_profiler':>14} {'cProfile':>9} {'ours vs l_p':>12}"
    )
    print(header)
    print("-" * len(header))
    for name in sizes:
        if opts.only and name not in opts.only:
            continue
        args = sizes[name]
        modes = {"plain": run_plain, "ours": ours, "cprofile": run_cprofile}
        if PeerLineProfiler is not None:
            modes["peer"] = Peer(name)
        getattr(PLAIN, name)(*args)  # warm up both copies: imports, caches, specialisation
        getattr(PROFILED, name)(*args)
        order = list(modes)
        times: dict[str, list[int]] = {m: [] for m in modes}
        for rep in range(repeat):
            rot = order[rep % len(order) :] + order[: rep % len(order)]
            for mode in rot:
                times[mode].append(modes[mode](name, args))
        ratio = {m: statistics.median(t / p for t, p in zip(times[m], times["plain"], strict=True)) for m in modes}
        base = statistics.median(times["plain"])
        events = ours.line_events(name)
        extra = statistics.median(t - p for t, p in zip(times["ours"], times["plain"], strict=True))
        per_event = f"{extra / events:8.1f}" if events else f"{'n/a':>8}"
        peer = f"{ratio['peer']:13.2f}x" if "peer" in ratio else f"{'n/a':>14}"
        vs = (
            f"{statistics.median(a / b for a, b in zip(times['peer'], times['ours'], strict=True)):11.1f}x"
            if "peer" in times
            else f"{'n/a':>12}"
        )
        print(
            f"{name:<8} {base / 1e6:8.1f} ms {ratio['ours']:12.2f}x {extra / 1e6:6.2f} ms {per_event} {peer} "
            f"{ratio['cprofile']:8.2f}x {vs}"
        )
    print(
        "ratios: median over repetitions of (mode time / unprofiled time of the same repetition);\n"
        "extra: median extra CPU time of lineprofiler per run (enable and disable included);\n"
        "ns/line: that extra per line event of the workload's own function (for fib it carries the\n"
        "call and return events too; for stdlib it is mostly the fixed cost of each enable);\n"
        "ours vs l_p: how many times faster than line_profiler."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
