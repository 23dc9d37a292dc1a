"""The accounting layer's overhead, per phase enter+exit and per count(), in ns.

Prints the seed's table beside an empty Python-class ``with`` measured in the same run, and
the RSS growth over 10 million phase entries. Figures, not pass/fail: the machine may be
shared, so run it a few times and read the ratios.

    python benchmarks/bench_accounting.py [--number N] [--repeat R] [--entries M] [--io-bytes B]

With ``measure_cpu=True`` two boundaries of a thread less than 1 us apart share one read of its
CPU clock, so ``with phase(): pass`` in a tight loop reads it less than twice per phase. The
row "2 us inside" puts a 2 us busy wait inside each phase (sibling phases back to back: an exit
and the next entry share a read); the rows "2 us apart" put one inside and one after each phase,
so that every boundary reads the clock. Each is net of its waits, timed alone.

Each figure is the median over R rounds; a round times every row once (N iterations), so the
rows share the machine's noise, and each ratio is taken within its round. Figures are net of
the bare loop's cost (printed too, so the raw figure is one addition away).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import timeit

from _process import rss_bytes

from lineprofiler.accounting import Profiler, _phases


class Empty:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _gap(ns: int = 2000, clock=time.perf_counter_ns) -> None:
    """Busy-wait ``ns``: longer than the share window, so the boundaries either side read the clock."""
    end = clock() + ns
    while clock() < end:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--entries", type=int, default=10_000_000, help="phase entries for the RSS figure (0: skip)")
    parser.add_argument("--io-bytes", type=int, default=0, help="also write this many bytes under io=True and check")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        off = Profiler(enabled=False)
        nocpu = Profiler(run_dir=tmp, role="bench", measure_cpu=False, snapshot_interval_s=None)
        cpu = Profiler(run_dir=tmp, role="bench", measure_cpu=True, snapshot_interval_s=None)
        env = {"empty": Empty(), "off": off, "nocpu": nocpu, "cpu": cpu, "gap": _gap}
        rows = [
            ("empty Python-class with", "with empty: pass", 1),
            ("phase(), enabled=False", "with off.phase('step'): pass", 1),
            ("phase(), enabled=True, measure_cpu=False", "with nocpu.phase('step'): pass", 1),
            ("phase(), enabled=True, measure_cpu=True", "with cpu.phase('step'): pass", 1),
            ("(one 2 us busy wait)", "gap()", 10),
            ("measure_cpu=True, 2 us inside", "with cpu.phase('step'): gap()", 10),
            ("(two 2 us busy waits)", "gap(); gap()", 10),
            ("measure_cpu=False, 2 us apart", "with nocpu.phase('step'): gap()\ngap()", 10),
            ("measure_cpu=True, 2 us apart", "with cpu.phase('step'): gap()\ngap()", 10),
            ("phase(io=True)", "with nocpu.phase('ckpt', io=True): pass", 10),
            ("count()", "nocpu.count('sims', 64)", 1),
        ]
        env["thread_time_ns"] = time.thread_time_ns
        rows.append(("(one CLOCK_THREAD_CPUTIME_ID read)", "thread_time_ns()", 4))
        # Rounds interleave the rows, so a neighbour's burst on a shared machine hits all rows
        # alike; each ratio is taken within its round, then the median over rounds is printed.
        timers = {label: timeit.Timer(stmt, globals=env) for label, stmt, _d in rows}
        numbers = {label: max(1000, args.number // d) for label, _s, d in rows}
        loop_timer = timeit.Timer("pass", globals=env)
        per_round: dict[str, list[float]] = {label: [] for label, _s, _d in rows}
        loops = []
        gc.disable()
        try:
            for _ in range(args.repeat):
                loop = loop_timer.timeit(args.number) / args.number * 1e9
                loops.append(loop)
                for label, _s, _d in rows:
                    per_round[label].append(timers[label].timeit(numbers[label]) / numbers[label] * 1e9 - loop)
        finally:
            gc.enable()
        base_label = rows[0][0]
        print(f"lineprofiler.accounting overhead, Python {sys.version.split()[0]}, "
              f"thread CPU clock: {_phases.cpu_clock_source()}")
        print(f"(median of {args.repeat} interleaved rounds, net of the bare loop = "
              f"{statistics.median(loops):.1f} ns/iteration)")
        print(f"{'':44s}{'ns/call':>10s}{'x empty with':>14s}")
        wait = per_round["(one 2 us busy wait)"]
        per_round["measure_cpu=True, 2 us inside"] = [
            a - b for a, b in zip(per_round["measure_cpu=True, 2 us inside"], wait, strict=True)
        ]
        waits = per_round["(two 2 us busy waits)"]
        for label in ("measure_cpu=False, 2 us apart", "measure_cpu=True, 2 us apart"):
            per_round[label] = [a - b for a, b in zip(per_round[label], waits, strict=True)]
        for label, _s, _d in rows:
            ns = statistics.median(per_round[label])
            ratio = statistics.median(a / b for a, b in zip(per_round[label], per_round[base_label], strict=True))
            print(f"{label:44s}{ns:10.1f}{ratio:14.2f}")

        if args.io_bytes:
            path = os.path.join(tmp, "io_check.bin")
            chunk = os.urandom(1 << 20)
            with nocpu.phase("io_check", io=True):
                with open(path, "wb") as handle:
                    left = args.io_bytes
                    while left > 0:
                        left -= handle.write(chunk[: min(left, len(chunk))])
                    handle.flush()
                    os.fsync(handle.fileno())
            os.unlink(path)
            snap = nocpu.recorder.snapshot()
            io = next(p for p in snap["phases"] if p["path"] == "io_check")["io_bytes"]
            for key in ("wchar", "write_bytes"):
                print(f"io=True, {args.io_bytes:,} bytes written + fsync: {key} {io[key]:,} "
                      f"({(io[key] - args.io_bytes) / args.io_bytes * 100:+.3f} %)")

        if args.entries:
            phase = nocpu.phase
            for _ in range(100_000):  # warm: stacks, caches, allocator
                with phase("rss"):
                    pass
            gc.collect()
            before = rss_bytes()
            for _ in range(args.entries):
                with phase("rss"):
                    pass
            after = rss_bytes()
            print(f"RSS growth over {args.entries:,} phase entries: {(after - before) / 1024:.0f} KiB")
        nocpu.close()
        cpu.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
