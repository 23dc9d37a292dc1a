"""What one PSS read costs beside the RSS read the sampler always made: a pread at offset 0 of a
kept-open /proc/self/smaps_rollup against one of /proc/self/statm, in this process as it grows.

    python benchmarks/bench_pss.py [--reads 2000] [--sizes 0,256,1024,4096] [--mappings 0,10000]

smaps_rollup walks every mapping's page tables at each read, so its cost grows with resident
memory and with the number of mappings; statm is a few counters. Figures, not pass/fail: the
median ns per read of each file at each size (MiB resident, touched), and the share of one core
that a 1 Hz read of smaps_rollup costs. A shared machine makes absolutes noisy.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import time


def ns_per_read(fd: int, reads: int) -> float:
    """Median over 5 batches of the ns one pread of the whole file takes."""
    batches = []
    per_batch = max(1, reads // 5)
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(per_batch):
            os.pread(fd, 8192, 0)
        batches.append((time.perf_counter_ns() - start) / per_batch)
    return statistics.median(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--sizes", default="0,256,1024,4096", help="MiB of anonymous memory to touch, in order")
    parser.add_argument("--mappings", default="0,10000", help="extra small mappings to add at the largest size")
    args = parser.parse_args()
    try:
        smaps = os.open("/proc/self/smaps_rollup", os.O_RDONLY)
    except OSError as error:
        raise SystemExit(
            f"bench_pss: cannot open /proc/self/smaps_rollup ({error.strerror}): PSS is not measured here"
        ) from None
    statm = os.open("/proc/self/statm", os.O_RDONLY)
    held: list[mmap.mmap] = []
    touched = 0
    print(f"{'resident':>10} {'mappings':>9} {'statm ns':>10} {'smaps_rollup ns':>16} {'ratio':>7} {'1 Hz core %':>12}")

    def report(mappings: int) -> None:
        a, b = ns_per_read(statm, args.reads), ns_per_read(smaps, args.reads)
        print(f"{touched:>7} MiB {mappings:>9} {a:>10.0f} {b:>16.0f} {b / a:>6.1f}x {b / 1e9 * 100:>11.4f}%")

    for size in (int(s) for s in args.sizes.split(",")):
        if size > touched:
            block = mmap.mmap(-1, (size - touched) << 20)
            for offset in range(0, len(block), mmap.PAGESIZE):
                block[offset] = 1
            held.append(block)
            touched = size
        report(0)
    for extra in (int(s) for s in args.mappings.split(",")):
        if extra <= 0:
            continue
        for _ in range(extra):
            small = mmap.mmap(-1, mmap.PAGESIZE)
            small[0] = 1
            held.append(small)
        report(extra)


if __name__ == "__main__":
    main()
