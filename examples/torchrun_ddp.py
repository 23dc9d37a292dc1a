"""Data-parallel training on the CPU with the gloo backend, profiled per rank.

    torchrun --nproc-per-node 4 examples/torchrun_ddp.py --run-dir profile
    lineprofiler report profile/

torchrun starts the ranks itself, with no parent profiler: each rank's Profiler joins one
run through the run id lineprofiler derives from TORCHELASTIC_RUN_ID, and records RANK,
LOCAL_RANK and GROUP_RANK (the node) from torchrun's environment. Rank 0 is given half a
batch more per step, so the others wait for it inside DDP's gradient all-reduce: the
report's wait% on backward shows it. (Busy time stays even, because every rank waits for
the slowest at every step: that is what a synchronous all-reduce does.)
"""

from __future__ import annotations

import argparse
import sys
import warnings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--skew", type=float, default=0.5, help="extra work on rank 0, as a share of a step")
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*NumPy.*")  # the CPU wheel works without numpy
        import torch
        import torch.distributed as dist

    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=args.run_dir, role="trainer")
    torch.set_num_threads(1)
    with profiler:
        with profiler.phase("setup"):
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            torch.manual_seed(rank)
            model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        extra = int(args.batch * args.skew) if rank == 0 else 0
        for _ in range(args.steps):
            with profiler.phase("iteration"):
                with profiler.phase("data"):
                    x = torch.randn(args.batch + extra, 32)
                    y = x.sum(dim=1, keepdim=True)
                with profiler.phase("forward"):
                    loss = torch.nn.functional.mse_loss(ddp(x), y)
                with profiler.phase("backward"):  # DDP's gradient all-reduce runs in here
                    optimizer.zero_grad()
                    loss.backward()
                with profiler.phase("optimizer"):
                    optimizer.step()
                profiler.count("samples", args.batch + extra)
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
