"""Slowdown of the line profiler against an unprofiled run, beside line_profiler 5 and pyinstrument.

All in one process, against the installed package (run it with the environment's python). The
workloads (in _lines_workloads.py; this folder is the project folder):

- loop:    a tight arithmetic loop (one line event per iteration, nothing else);
- fib:     naive recursive Fibonacci (a call, two line events and a return per call);
- stdlib:  a project loop whose body calls re and json (most time in the standard library);
- gen:     a chain of two generators (resumes and yields);
- threads: four threads running a project loop, started inside the profiled block.

Each workload's size is grown until its unprofiled run takes at least --min-seconds (0.5 s by
default), so one run is long enough that the ratios are stable. Each repetition then runs every
mode back to back in rotating order: unprofiled, lineprofiler, a C callback that does nothing
(the floor CPython sets for any tracer: on 3.12+ a C builtin registered for LINE events, on 3.11
a C trace function that returns at once, main thread only), line_profiler (add_function() on the
workload's functions) and pyinstrument. A mode's figure is the median over repetitions of its
time divided by the unprofiled time of the same repetition, so drift in the load of a shared
machine cancels out; the range beside it is the lowest and highest of those ratios. Times are the
process's CPU time (all threads). The unprofiled runs use a second copy of the workload module
that no profiler ever touches, so code that sys.monitoring instrumented once (which stays a
little slower on 3.12+) never serves as the baseline.

    .venv/bin/python benchmarks/bench_lines.py [--repeat 7] [--min-seconds 0.5] [--only fib]
        [--no-peers] [--quick] [--floors] [--regions] [--json out.json]

LINEPROFILER_CLOCK=monotonic in the environment measures the CLOCK_MONOTONIC fallback.

``--children``: the same workloads in 4 spawn workers started by a parent that is unprofiled,
or that runs LineProfiler(children=True) (so each worker is line-profiled from its start and
writes its file at exit). Reported: the wall time from start to join of all four, and each
worker's own CPU time in the workload, profiled over unprofiled, next to the in-process ratio
of the same workload; medians over repetitions, the two modes alternating.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import multiprocessing
import operator
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from lineprofiler import LineProfiler
from lineprofiler.lines import _tracer

HERE = Path(__file__).resolve().parent

try:
    import line_profiler as _peer_mod
    from line_profiler import LineProfiler as PeerLineProfiler
except ImportError:  # the test extra installs it
    _peer_mod = None
    PeerLineProfiler = None

try:
    import pyinstrument as _pyi_mod
    from pyinstrument import Profiler as PyiProfiler
except ImportError:  # the test extra installs it
    _pyi_mod = None
    PyiProfiler = None


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / "_lines_workloads.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


PROFILED = load("_lines_workloads_profiled")
PLAIN = load("_lines_workloads_plain")

# workload -> (first size, how to grow it, the functions of the workload line_profiler is given)
WORKLOADS: dict[str, tuple[int, Callable[[int], int], tuple[str, ...]]] = {
    "loop": (200_000, lambda n: n * 2, ("loop",)),
    "fib": (20, lambda n: n + 1, ("fib",)),
    "stdlib": (2_000, lambda n: n * 2, ("stdlib",)),
    "gen": (100_000, lambda n: n * 2, ("gen", "_numbers", "_evens")),
    "threads": (200_000, lambda n: n * 2, ("threads", "_worker")),
}

# CPU time of the whole process, not wall time: on a shared machine being descheduled is the
# largest noise, and every cost measured here is CPU work (the threads workload's included).
_now = time.process_time_ns

Mode = Callable[[str, int], int]


def calibrate(name: str, min_ns: int) -> int:
    """The first size (in the workload's own steps) whose unprofiled run takes min_ns."""
    size, grow, _ = WORKLOADS[name]
    fn = getattr(PLAIN, name)
    while True:
        t0 = _now()
        fn(size)
        if _now() - t0 >= min_ns:
            return size
        size = grow(size)


def run_plain(name: str, size: int) -> int:
    fn = getattr(PLAIN, name)
    t0 = _now()
    fn(size)
    return _now() - t0


class Ours:
    def __init__(self) -> None:
        self.prof = LineProfiler(project_folder=HERE)

    def __call__(self, name: str, size: int) -> int:
        fn = getattr(PROFILED, name)
        self.prof.clear()
        t0 = _now()
        with self.prof:
            fn(size)
        return _now() - t0

    def line_events(self) -> int:
        """Line events counted by the last run."""
        return sum(fs.hits for fs in self.prof.get_stats().values())


class OursInRegion(Ours):
    """lineprofiler with the workload inside ``profiler.region(...)``: every line then takes the
    tracer's region path."""

    def __call__(self, name: str, size: int) -> int:
        fn = getattr(PROFILED, name)
        self.prof.clear()
        t0 = _now()
        with self.prof, self.prof.region("bench"):
            fn(size)
        return _now() - t0


def _free_tool_id() -> int:
    for tool in (3, 4, 5, 0, 1, 2):
        if sys.monitoring.get_tool(tool) is None:  # type: ignore[attr-defined]
            return tool
    raise RuntimeError("no free sys.monitoring tool id")


def run_floor(name: str, size: int) -> int:
    """The same run with a C callback that does nothing on every line event."""
    fn = getattr(PROFILED, name)
    if _tracer.MONITORING:
        mon = sys.monitoring  # type: ignore[attr-defined]
        tool = _free_tool_id()
        mon.use_tool_id(tool, "bench-floor")
        t0 = _now()
        mon.register_callback(tool, mon.events.LINE, operator.is_)  # C, two arguments, no effect
        mon.set_events(tool, mon.events.LINE)
        fn(size)
        mon.set_events(tool, 0)
        t1 = _now()
        mon.register_callback(tool, mon.events.LINE, None)
        mon.free_tool_id(tool)
        return t1 - t0
    t0 = _now()
    _tracer._set_noop_trace(True)
    try:
        fn(size)
    finally:
        _tracer._set_noop_trace(False)
    return _now() - t0


def run_monitoring_floor(name: str, size: int, callback: Callable[..., object]) -> int:
    """The same run with ``callback`` (C) on the LINE and PY_RETURN events, the two our tracer
    cannot do without for per-line time; 3.12+ only."""
    fn = getattr(PROFILED, name)
    mon = sys.monitoring  # type: ignore[attr-defined]
    events = mon.events.LINE | mon.events.PY_RETURN
    tool = _free_tool_id()
    mon.use_tool_id(tool, "bench-floor")
    t0 = _now()
    mon.register_callback(tool, mon.events.LINE, callback)
    mon.register_callback(tool, mon.events.PY_RETURN, callback)
    mon.set_events(tool, events)
    fn(size)
    mon.set_events(tool, 0)
    t1 = _now()
    mon.register_callback(tool, mon.events.LINE, None)
    mon.register_callback(tool, mon.events.PY_RETURN, None)
    mon.free_tool_id(tool)
    return t1 - t0


class Peer:
    """line_profiler, given the workload's functions."""

    def __init__(self, name: str) -> None:
        assert PeerLineProfiler is not None
        self.prof = PeerLineProfiler()
        self.functions = WORKLOADS[name][2]
        for fname in self.functions:
            self.prof.add_function(getattr(PROFILED, fname))

    def __call__(self, name: str, size: int) -> int:
        fn = getattr(PROFILED, name)
        t0 = _now()
        self.prof.enable_by_count()
        try:
            fn(size)
        finally:
            self.prof.disable_by_count()
        return _now() - t0

    def untraced(self) -> list[str]:
        """The workload's functions in which line_profiler counted no hit (it did not trace them:
        on 3.11, threads it was not enabled in)."""
        hits = {name: sum(h for _, h, _ in lines) for (_, _, name), lines in self.prof.get_stats().timings.items()}
        return [fname for fname in self.functions if not hits.get(fname)]


def run_pyinstrument(name: str, size: int) -> int:
    assert PyiProfiler is not None
    fn = getattr(PROFILED, name)
    prof = PyiProfiler(interval=0.001)
    t0 = _now()
    prof.start()
    fn(size)
    prof.stop()
    return _now() - t0


def _ratio(times: dict[str, list[int]], mode: str) -> tuple[float, float, float]:
    """(median, lowest, highest) over repetitions of mode time / unprofiled time."""
    r = [t / p for t, p in zip(times[mode], times["plain"], strict=True)]
    return statistics.median(r), min(r), max(r)


def _cell(times: dict[str, list[int]], mode: str) -> str:
    if mode not in times:
        return f"{'n/a':>17}"
    med, lo, hi = _ratio(times, mode)
    return f"{med:5.2f}x {lo:4.2f}-{hi:4.2f}"


def run_workloads(opts: argparse.Namespace) -> dict[str, dict[str, object]]:
    ours = Ours()
    min_ns = int(opts.min_seconds * 1e9)
    header = (
        f"{'workload':<8} {'size':>9} {'unprof.':>8} {'lineprofiler':>17} {'ns/line':>7} {'C no-op':>17} "
        f"{'line_profiler':>17} {'pyinstrument':>17} {'ours vs l_p':>16}"
    )
    print(header)
    print("-" * len(header))
    results: dict[str, dict[str, object]] = {}
    for name in WORKLOADS:
        if opts.only and name not in opts.only:
            continue
        size = calibrate(name, min_ns)
        getattr(PROFILED, name)(size)  # warm up the profiled copy: imports, caches, specialisation
        modes: dict[str, Mode] = {"plain": run_plain, "ours": ours}
        if _tracer.MONITORING or (name != "threads" and hasattr(_tracer, "_set_noop_trace")):
            # On 3.11 the no-op trace function covers the calling thread only.
            modes["floor"] = run_floor
        if opts.regions:
            modes["region"] = OursInRegion()
        if opts.floors and _tracer.MONITORING:
            modes["noop_lr"] = functools.partial(run_monitoring_floor, callback=_tracer._floor_noop)
            modes["clock_lr"] = functools.partial(run_monitoring_floor, callback=_tracer._floor_clock)
        if not opts.no_peers and PeerLineProfiler is not None:
            modes["line_profiler"] = Peer(name)
        if not opts.no_peers and PyiProfiler is not None:
            modes["pyinstrument"] = run_pyinstrument
        order = list(modes)
        times: dict[str, list[int]] = {m: [] for m in modes}
        events = 0
        for rep in range(opts.repeat):
            rot = order[rep % len(order) :] + order[: rep % len(order)]
            for mode in rot:
                times[mode].append(modes[mode](name, size))
                if mode == "ours":
                    events = ours.line_events()
        base = statistics.median(times["plain"])
        extra = statistics.median(t - p for t, p in zip(times["ours"], times["plain"], strict=True))
        per_event = f"{extra / events:7.1f}" if events else f"{'n/a':>7}"
        untraced: list[str] = []
        if "line_profiler" in times:
            untraced = modes["line_profiler"].untraced()  # type: ignore[attr-defined]
            vs = [a / b for a, b in zip(times["line_profiler"], times["ours"], strict=True)]
            vs_cell = f"{statistics.median(vs):5.1f}x {min(vs):4.1f}-{max(vs):4.1f}"
            if untraced:
                vs_cell = f"{'not comparable':>16}"
        else:
            vs_cell = f"{'n/a':>16}"
        print(
            f"{name:<8} {size:>9} {base / 1e6:5.0f} ms {_cell(times, 'ours')} {per_event} {_cell(times, 'floor')} "
            f"{_cell(times, 'line_profiler')} {_cell(times, 'pyinstrument')} {vs_cell}",
            flush=True,
        )
        if untraced:
            print(f"  line_profiler counted no hit in {', '.join(untraced)}: it did not trace that code")
        if "region" in times:
            print(f"  inside a region: {_cell(times, 'region').strip()}")
        if "noop_lr" in times:
            print(
                f"  floors on LINE and PY_RETURN: a C no-op {_cell(times, 'noop_lr').strip()}, "
                f"a C clock read {_cell(times, 'clock_lr').strip()}",
                flush=True,
            )
        results[name] = {"size": size, "events": events, "times_ns": times, "peer_untraced": untraced}
    return results


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
            inproc = statistics.median(ours(name, args[0]) / run_plain(name, args[0]) for _ in range(repeat))
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
    ap.add_argument("--repeat", type=int, default=7, help="repetitions (medians reported)")
    ap.add_argument("--min-seconds", type=float, default=0.5, help="unprofiled CPU time of one run")
    ap.add_argument("--quick", action="store_true", help="0.1 s runs, 3 repetitions")
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="run only these workloads")
    ap.add_argument("--no-peers", action="store_true", help="skip line_profiler and pyinstrument")
    ap.add_argument(
        "--floors",
        action="store_true",
        help="3.12+: also time a C no-op and a C clock read on LINE and PY_RETURN (the events per-line time needs; "
        "a development build only)",
    )
    ap.add_argument("--regions", action="store_true", help="also time lineprofiler with the workload inside a region")
    ap.add_argument("--json", metavar="PATH", help="also write every measured time here")
    ap.add_argument("--children", action="store_true", help=f"the workloads in {N_WORKERS} spawn workers instead")
    opts = ap.parse_args()
    if opts.floors and not hasattr(_tracer, "_floor_noop"):
        ap.error("--floors needs a development build of the tracer (LINEPROFILER_DEV_BUILD=1; make bench has one)")
    if opts.quick:
        opts.repeat, opts.min_seconds = 3, 0.1
    if opts.repeat < 1 or opts.min_seconds <= 0:
        ap.error("--repeat must be >= 1 and --min-seconds > 0")
    if opts.children:
        return children_main(opts)
    print(
        f"bench_lines: CPython {platform.python_version()}, lineprofiler clock {LineProfiler(HERE).clock}, "
        f"line_profiler {getattr(_peer_mod, '__version__', 'not installed')}, "
        f"pyinstrument {getattr(_pyi_mod, '__version__', 'not installed')}; "
        f"median of {opts.repeat} repetitions (lowest-highest), process CPU time; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    results = run_workloads(opts)
    print(
        f"load average {os.getloadavg()[0]:.1f} at the end\n"
        "ratios: median over repetitions of (mode time / unprofiled time of the same repetition);\n"
        "ns/line: lineprofiler's median extra CPU time per line event it counted (calls, returns,\n"
        "enable and disable included); C no-op: a do-nothing C callback on every line event (3.12+)\n"
        "or a do-nothing C trace function (3.11); ours vs l_p: how many times faster than line_profiler."
    )
    if opts.json:
        meta = {"python": platform.python_version(), "repeat": opts.repeat, "min_seconds": opts.min_seconds}
        Path(opts.json).write_text(json.dumps({"meta": meta, "workloads": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
