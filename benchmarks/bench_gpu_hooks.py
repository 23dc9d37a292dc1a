"""What the GPU work's hooks cost per phase, on the CPU: figures, not pass/fail.

    python benchmarks/bench_gpu_hooks.py [--repeat 5]

A phase that sets neither sync=True nor annotate=True, with no backend window on its name, calls
none of these: the core holds None for each hook and checks it with one branch, so this issue adds
nothing to it (bench_accounting.py measures the phase itself). What is printed here is what a
phase pays when it does opt in, beside an empty Python call for scale. The median of --repeat
runs is reported; the machine may be shared, so read ratios rather than absolutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import timeit

from lineprofiler.accounting import gpu, windows


def per_call_ns(fn, number: int, repeat: int) -> float:
    runs = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e9


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--torch", action="store_true", help="import torch first (CPU build)")
    args = parser.parse_args()
    if args.torch:
        import torch  # noqa: F401
    n, r = args.number, args.repeat
    rows: list[tuple[str, float]] = []

    def empty() -> None:
        pass

    rows.append(("empty Python call (scale)", per_call_ns(empty, n, r)))

    sync = gpu.make_sync()
    if sync is None:
        rows.append(("sync=True hook: None (torch absent or CPU build)", 0.0))
    else:
        rows.append((f"sync=True hook: {type(sync).__name__}, no CUDA initialised", per_call_ns(sync, n, r)))

    bare = gpu.Annotator(nvtx=False, record_function=False)
    bare_ns = per_call_ns(lambda: (bare.enter("p"), bare.exit("p")), n, r)
    rows.append(("annotate enter+exit, no NVTX, no torch", bare_ns))
    if importlib.util.find_spec("nvtx") is not None:
        with_nvtx = gpu.Annotator(record_function=False)
        rows.append(
            (f"annotate enter+exit, NVTX via {with_nvtx.nvtx_source}, no tool attached",
             per_call_ns(lambda: (with_nvtx.enter("p"), with_nvtx.exit("p")), n, r))
        )
    if "torch" in sys.modules:
        rf = gpu.Annotator(nvtx=False)
        rows.append(
            ("annotate enter+exit, torch record_function, no profiler",
             per_call_ns(lambda: (rf.enter("p"), rf.exit("p")), n // 10, r))
        )

    with tempfile.TemporaryDirectory() as run_dir:
        window = windows.Window("viztracer", run_dir, (10**12, 10**12 + 1), "iteration")
        rows.append(("window watch callback, waiting", per_call_ns(lambda: window.on_entry(5), n, r)))
        rows.append(("window enter+exit, waiting", per_call_ns(lambda: (window.enter("p"), window.exit("p")), n, r)))

    print(f"python {sys.version.split()[0]}, torch imported: {'torch' in sys.modules}, median of {r} runs")
    for label, ns in rows:
        print(f"  {label:<62} {ns:9.0f} ns")


if __name__ == "__main__":
    main()
