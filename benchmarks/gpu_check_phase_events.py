"""GPU time per phase on a real GPU: ``phase(name, gpu=True)`` against CUDA events timed by hand.

    python3 benchmarks/gpu_check_phase_events.py [--build] [--steps 200] [--keep DIR]

Without torch or without a CUDA device it prints "no CUDA device" and exits 0. With one, in
under a minute, each check prints PASS or FAIL (exit 1 on a failure):

1. ``steps`` steps, each a chain of matmuls inside ``phase("matmul", gpu=True)`` under
   ``torch.cuda.set_sync_debug_mode("error")``: anything that synchronises raises, and the
   profiler records what its hooks or its snapshot thread raise, so "no sync from us" is
   "no error recorded". The snapshot thread reads the pairs back every 0.2 s meanwhile.
2. The report's ``gpu_ns`` for ``loop/matmul`` is > 0, within 10 % of the same work timed by
   hand with a second pair of ``torch.cuda.Event`` per step (read after the loop, by this
   script, after its own synchronize), and at most the wall time of ``loop``, the phase around
   the steps and that synchronize: the GPU cannot have been busy longer than the loop lasted.
3. The cost of a ``gpu=True`` entry over a plain one, in microseconds (empty phases, so the
   events time nothing and the figure is what the profiler adds on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
FAILED: list[str] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    if not ok:
        FAILED.append(name)
    print(f"  {'PASS' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}", flush=True)


def cuda_torch():
    """torch with a CUDA device, or None after saying why not."""
    try:
        import torch
    except ImportError:
        print("no CUDA device: torch is not installed for this interpreter; nothing was checked")
        return None
    if not torch.cuda.is_available():
        print("no CUDA device: torch.cuda.is_available() is False; nothing was checked")
        return None
    return torch


def report_json(run_dir: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    made = subprocess.run([sys.executable, "-m", "lineprofiler", "report", str(run_dir), "--json"],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(made.stdout)


def run_steps(torch, Profiler, run_dir: Path, steps: int) -> list[float]:
    """The matmul loop under the profiler; the hand-timed milliseconds of each step."""
    n, length = 2048, 8
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda") / n**0.5
    for _ in range(3):  # warm up: cuBLAS handles, kernels chosen
        torch.matmul(a, b)
    torch.cuda.synchronize()
    profiler = Profiler(run_dir=run_dir, role="gpu_check", snapshot_interval_s=0.2, sample_interval_s=None)
    hand = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
    with profiler.phase("loop"):
        torch.cuda.set_sync_debug_mode("error")
        try:
            for start, end in hand:
                with profiler.phase("matmul", gpu=True):
                    start.record()
                    x = a
                    for _ in range(length):
                        x = x @ b
                    end.record()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()  # this script's, outside the sync check: the loop's work is done
    time.sleep(0.5)  # the snapshot thread drains at least once more on its own
    profiler.close()
    return [start.elapsed_time(end) for start, end in hand]


def entry_cost_us(torch, Profiler, run_dir: Path, entries: int = 1000, rounds: int = 10) -> tuple[float, float]:
    """The best of ``rounds`` rounds of ``entries`` empty entries each, plain and gpu=True: fewer
    than the pool's pairs per round, so no entry is a dropped one (which records nothing)."""
    profiler = Profiler(run_dir=run_dir, role="cost", snapshot_interval_s=None, sample_interval_s=None)
    best: dict[bool, float] = {}
    for _ in range(rounds):
        for gpu in (False, True):
            began = time.perf_counter_ns()
            for _ in range(entries):
                with profiler.phase("empty", gpu=gpu):
                    pass
            spent = (time.perf_counter_ns() - began) / entries / 1000
            best[gpu] = min(best.get(gpu, spent), spent)
        torch.cuda.synchronize()  # between rounds only: lets the pool's pairs complete
        profiler.flush()  # and be read back, so the pool is not the limit
    profiler.close()
    return best[False], best[True]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="compile the C modules in place first")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args()
    torch = cuda_torch()
    if torch is None:
        return 0
    if args.build:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from gpu_check import build_in_place

        build_in_place()
    sys.path.insert(0, str(SRC))
    from lineprofiler.accounting import Profiler

    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}", flush=True)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="lp_gpu_phase_events_"))
    hand_ms = run_steps(torch, Profiler, keep / "steps", args.steps)
    doc = report_json(keep / "steps")
    rows = {p["path"]: p for p in doc["dominant"]["phases"]}
    matmul, loop = rows.get("loop/matmul"), rows.get("loop")
    if matmul is None or loop is None:
        check("the report has loop and loop/matmul", False, f"rows: {sorted(rows)}")
        return 1
    (worker,) = [p for p in (keep / "steps" / "workers").rglob("w_*.json")]
    file = json.loads(worker.read_text())
    phase_time = file["gpu"]["phase_time"]
    errors = list(file.get("errors") or []) + ([phase_time["last_error"]] if phase_time["errors"] else [])
    check("no synchronise from the profiler (sync debug mode 'error': nothing recorded)", not errors, "; ".join(errors))
    gpu_ns, hand_ns = matmul["gpu_ns"] or 0, round(sum(hand_ms) * 1e6)
    counts = matmul["gpu"] or {}
    check("every pair measured", counts.get("pairs") == args.steps and not counts.get("dropped")
          and not counts.get("pending"), json.dumps(counts))
    check("GPU time > 0", gpu_ns > 0, f"{gpu_ns / 1e6:.3f} ms")
    error = abs(gpu_ns - hand_ns) / hand_ns if hand_ns else float("inf")
    check("within 10 % of torch.cuda.Event timing by hand", error <= 0.10,
          f"profiler {gpu_ns / 1e6:.3f} ms, by hand {hand_ns / 1e6:.3f} ms ({error:.1%})")
    own_wall = f"matmul's own wall: {matmul['wall_ns'] / 1e6:.3f} ms"
    check("GPU time <= the loop's wall time", gpu_ns <= loop["wall_ns"],
          f"{gpu_ns / 1e6:.3f} ms <= {loop['wall_ns'] / 1e6:.3f} ms ({own_wall})")
    plain_us, gpu_us = entry_cost_us(torch, Profiler, keep / "cost")
    print(f"  cost per entry: plain {plain_us:.2f} us, gpu=True {gpu_us:.2f} us (+{gpu_us - plain_us:.2f} us)")
    print(f"runs kept in {keep}" if args.keep else f"runs in {keep}")
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
