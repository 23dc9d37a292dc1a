"""What tracing costs: ns per phase enter+exit untraced and with ``trace=True``, in the same run,
the ratio, the live file's size, the RSS growth over many traced entries (the ring is fixed), and
what ``trace="auto"`` adds to a call of a project function (3.12+).
Figures, not pass/fail: the machine may be shared, so run it a few times and read the ratios.

    python benchmarks/bench_trace.py [--number N] [--repeat R] [--spans M] [--capacity C]

Each figure is the median over R rounds; a round times every row once (N iterations), so the
rows share the machine's noise, and each ratio is taken within its round. Figures are net of the
bare loop's cost. The target: a traced phase at most 1.3x an untraced one (measure_cpu=False).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import timeit

from _process import rss_bytes

from lineprofiler.accounting import Profiler


def _allocated(path: os.PathLike[str]) -> int:
    return os.stat(path).st_blocks * 512


def callee() -> None:
    """A project function (this file is in the project): each call an auto-traced phase entry."""


def auto_trace_cost(number: int, repeat: int) -> None:
    """ns per call of a project function: plain, and under ``trace="auto"``, rounds interleaved."""
    import sys

    if not hasattr(sys, "monitoring"):
        print("  trace='auto': needs sys.monitoring (3.12+), not measured")
        return
    timer = timeit.Timer("callee()", globals={"callee": callee})
    plain, auto = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            plain.append(timer.timeit(number) / number * 1e9)
            profiler = Profiler(tmp, role="bench", measure_cpu=False, trace="auto", snapshot_interval_s=None)
            auto.append(timer.timeit(number) / number * 1e9)
            profiler.close()
    added = statistics.median(a - p for a, p in zip(auto, plain, strict=True))
    print(f"  a project function's call: {statistics.median(plain):.1f} ns plain, "
          f"{statistics.median(auto):.1f} ns under trace='auto' (+{added:.1f} ns per call)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--spans", type=int, default=10_000_000, help="traced entries for the RSS figure (0: skip)")
    parser.add_argument("--capacity", type=int, default=200_000, help="trace_capacity of the traced profilers")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        common = {"run_dir": tmp, "role": "bench", "snapshot_interval_s": None}
        plain = Profiler(measure_cpu=False, **common)
        traced = Profiler(measure_cpu=False, trace=True, trace_capacity=args.capacity, **common)
        plain_cpu = Profiler(measure_cpu=True, **common)
        traced_cpu = Profiler(measure_cpu=True, trace=True, trace_capacity=args.capacity, **common)
        env = {"plain": plain, "traced": traced, "plain_cpu": plain_cpu, "traced_cpu": traced_cpu}
        rows = [
            ("untraced, measure_cpu=False", "with plain.phase('step'): pass"),
            ("trace=True, measure_cpu=False", "with traced.phase('step'): pass"),
            ("untraced, measure_cpu=True", "with plain_cpu.phase('step'): pass"),
            ("trace=True, measure_cpu=True", "with traced_cpu.phase('step'): pass"),
            ("untraced, two nested, measure_cpu=False", "with plain.phase('a'):\n with plain.phase('b'): pass"),
            ("trace=True, two nested, measure_cpu=False", "with traced.phase('a'):\n with traced.phase('b'): pass"),
            ("signal(), trace=True", "traced.signal('queue', 7)"),
            ("signal(), untraced (a no-op)", "plain.signal('queue', 7)"),
        ]
        timers = [timeit.Timer(stmt, globals=env) for _, stmt in rows]
        bare = timeit.Timer("pass")
        per_row: list[list[float]] = [[] for _ in rows]
        ratios: dict[str, list[float]] = {"measure_cpu=False": [], "measure_cpu=True": [], "two nested": []}
        gc.disable()
        for _ in range(args.repeat):
            base = bare.timeit(args.number) / args.number * 1e9
            got = [max(t.timeit(args.number) / args.number * 1e9 - base, 0.0) for t in timers]
            for i, ns in enumerate(got):
                per_row[i].append(ns)
            ratios["measure_cpu=False"].append(got[1] / got[0])
            ratios["measure_cpu=True"].append(got[3] / got[2])
            ratios["two nested"].append(got[5] / got[4])
        gc.enable()
        print(f"(median of {args.repeat} interleaved rounds of {args.number:,}, net of the bare loop)")
        for (label, _), samples in zip(rows, per_row, strict=True):
            print(f"  {label:<44} {statistics.median(samples):8.1f} ns")
        for label, values in ratios.items():
            print(f"  traced / untraced, {label:<25} {statistics.median(values):8.2f}x")
        assert traced.live_path is not None and plain.live_path is not None
        print(f"  live file, untraced: {os.path.getsize(plain.live_path):,} bytes; "
              f"trace_capacity={args.capacity:,}: {os.path.getsize(traced.live_path):,} bytes")  # fmt: skip
        # What it costs on disk (du): the blocks allocated, which the rings take as they fill.
        print(f"  live file on disk (st_blocks * 512), untraced: {_allocated(plain.live_path):,} bytes; "
              f"trace_capacity={args.capacity:,}: {_allocated(traced.live_path):,} bytes")  # fmt: skip

        if args.spans:
            phase = traced.phase("rss")
            for _ in range(args.capacity):  # the ring's pages touched once before the first reading
                with phase:
                    pass
            before = rss_bytes()
            marks = []
            step = max(args.spans // 5, 1)
            for done in range(0, args.spans, step):
                for _ in range(min(step, args.spans - done)):
                    with phase:
                        pass
                marks.append(rss_bytes() - before)
            recorded = traced.recorder.trace_snapshot()["recorded"]  # type: ignore[union-attr]
            shown = ", ".join(f"{m / 1024:+.0f}" for m in marks)
            print(f"  RSS growth over {args.spans:,} more traced entries (KiB, every {step:,}): {shown}; "
                  f"spans recorded {recorded:,}, kept {args.capacity:,}")  # fmt: skip
        for profiler in (plain, traced, plain_cpu, traced_cpu):
            profiler.close()
    auto_trace_cost(args.number, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
