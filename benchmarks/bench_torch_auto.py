"""What ``auto="torch"`` costs a training step, on the CPU.

A tiny model (two ``Linear(8, 8)`` layers, batch 4, SGD) so that the hooks, not the arithmetic,
are what a step spends beyond torch: each step takes a batch from a DataLoader (no workers),
``zero_grad``, forward, ``backward`` and ``optimizer.step``: every auto phase of a step (step,
data_wait, zero_grad, forward, backward, optimizer: six entries). Three kinds of process, each
fresh, interleaved ``--runs`` times, each timing ``--steps`` steps after a warm-up:

* ``none``: no profiler;
* ``off``: ``Profiler(...)`` without ``auto`` (the baseline ``auto`` adds to);
* ``torch``: ``Profiler(..., auto="torch")``.

It prints the median µs per step of each, in wall time and in the loop thread's CPU time (the
steadier of the two on a shared machine, where other processes stretch the wall time), and the
overhead of ``torch`` over ``off``, per step and as a ratio. Target (docs/accounting.md): at
most 20 µs per step.

``--baseline DIR`` also times ``off`` and ``torch`` with the ``lineprofiler`` package found in
``DIR`` (put first on ``PYTHONPATH``: the ``src`` folder of another checkout, its C extensions
built), interleaved with the others: a before/after on one machine in one run, which a shared
machine's drift between two runs would blur.

    python benchmarks/bench_torch_auto.py [--runs 5] [--steps 2000] [--baseline DIR]
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
start, start_cpu = time.perf_counter(), time.thread_time()
run(steps)
elapsed, elapsed_cpu = time.perf_counter() - start, time.thread_time() - start_cpu
if profiler is not None:
    profiler.close()
print(elapsed / steps * 1e6, elapsed_cpu / steps * 1e6)
"""

KINDS = ("none", "off", "torch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes of each kind (default 5)")
    parser.add_argument("--steps", type=int, default=2000, help="timed steps per process (default 2000)")
    parser.add_argument("--baseline", metavar="DIR", help="also time off and torch with the lineprofiler in DIR")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    envs = {kind: env for kind in KINDS}
    if args.baseline:
        if not os.path.isdir(os.path.join(args.baseline, "lineprofiler")):
            parser.error(f"--baseline {args.baseline}: no lineprofiler package in it")
        path = os.pathsep.join(filter(None, [os.path.abspath(args.baseline), env.get("PYTHONPATH")]))
        envs.update({f"{kind}@baseline": dict(env, PYTHONPATH=path) for kind in ("off", "torch")})
    per_step: dict[str, list[float]] = {kind: [] for kind in envs}
    cpu_per_step: dict[str, list[float]] = {kind: [] for kind in envs}
    with tempfile.TemporaryDirectory(prefix="bench-torch-auto-") as tmp:
        for run in range(args.runs):
            for name, kind_env in envs.items():
                kind = name.split("@")[0]
                done = subprocess.run(
                    [sys.executable, "-c", STEP_LOOP, kind, os.path.join(tmp, f"{name}{run}"), str(args.steps)],
                    capture_output=True, text=True, env=kind_env, check=True,
                )
                wall, cpu = done.stdout.split()[-2:]
                per_step[name].append(float(wall))
                cpu_per_step[name].append(float(cpu))
    print(f"python {sys.version.split()[0]}, {args.runs} runs x {args.steps} steps, median us per step:")
    for clock, values in (("wall", per_step), ("cpu", cpu_per_step)):
        median = {name: statistics.median(times) for name, times in values.items()}
        for name in envs:
            spread = ", ".join(f"{v:.1f}" for v in sorted(values[name]))
            print(f"  {clock:4s} {name:15s} {median[name]:8.1f} us   ({spread})")
        for suffix in ("", "@baseline") if args.baseline else ("",):
            on, off = median["torch" + suffix], median["off" + suffix]
            print(f"  {clock:4s} auto='torch'{suffix} adds {on - off:.1f} us per step over a profiler without it "
                  f"(ratio {on / off:.2f}x; {on / median['none']:.2f}x over no profiler)")


if __name__ == "__main__":
    main()
