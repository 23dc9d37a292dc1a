"""What ``auto="torch"`` costs a training step, on the CPU.

A tiny model (two ``Linear(8, 8)`` layers, batch 4, SGD) so that the hooks, not the arithmetic,
are what a step spends beyond torch: each step takes a batch from a DataLoader (no workers),
``zero_grad``, forward, ``backward`` and ``optimizer.step``: every auto phase of a step (step,
data_wait, zero_grad, forward, backward, optimizer: six entries). Three kinds of process, each
fresh, interleaved ``--runs`` times, each timing ``--steps`` steps after a warm-up:

* ``none``: no profiler;
* ``off``: ``Profiler(...)`` without ``auto`` (the baseline ``auto`` adds to);
* ``torch``: ``Profiler(..., auto="torch")``.

It prints the median µs per step of each and the overhead of ``torch`` over ``off``, per step
and as a ratio. Target (docs/accounting.md): at most 20 µs per step.

    python benchmarks/bench_torch_auto.py [--runs 5] [--steps 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

STEP_LOOP = r"""
import sys, time
kind, run_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
import torch
torch.set_num_threads(1)
profiler = None
if kind != "none":
    from lineprofiler.accounting import Profiler
    profiler = Profiler(run_dir, "bench", auto="torch" if kind == "torch" else None, sample_interval_s=None)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(4 * 64, 8))
loader = torch.utils.data.DataLoader(data, batch_size=4)

def run(n):
    done = 0
    while done < n:
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            done += 1
            if done == n:
                return

run(200)
start = time.perf_counter()
run(steps)
elapsed = time.perf_counter() - start
if profiler is not None:
    profiler.close()
print(elapsed / steps * 1e6)
"""

KINDS = ("none", "off", "torch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes of each kind (default 5)")
    parser.add_argument("--steps", type=int, default=2000, help="timed steps per process (default 2000)")
    args = parser.parse_args()
    per_step: dict[str, list[float]] = {kind: [] for kind in KINDS}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    with tempfile.TemporaryDirectory(prefix="bench-torch-auto-") as tmp:
        for run in range(args.runs):
            for kind in KINDS:
                done = subprocess.run(
                    [sys.executable, "-c", STEP_LOOP, kind, os.path.join(tmp, f"{kind}{run}"), str(args.steps)],
                    capture_output=True, text=True, env=env, check=True,
                )
                per_step[kind].append(float(done.stdout.split()[-1]))
    median = {kind: statistics.median(values) for kind, values in per_step.items()}
    print(f"python {sys.version.split()[0]}, {args.runs} runs x {args.steps} steps, median us per step:")
    for kind in KINDS:
        spread = ", ".join(f"{v:.1f}" for v in sorted(per_step[kind]))
        print(f"  {kind:6s} {median[kind]:8.1f} us   ({spread})")
    overhead = median["torch"] - median["off"]
    print(f"auto='torch' adds {overhead:.1f} us per step over a profiler without it "
          f"(ratio {median['torch'] / median['off']:.2f}x; {median['torch'] / median['none']:.2f}x over no profiler)")


if __name__ == "__main__":
    main()
