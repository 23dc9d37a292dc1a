"""Ranks under mpirun, each profiled: compute, then an allreduce that waits for the slowest.

    mpirun -n 4 python examples/mpi_allreduce.py --run-dir profile
    lineprofiler report profile/

The ranks share a run through the run id lineprofiler derives from Open MPI's job id, and
OMPI_COMM_WORLD_RANK names each rank. Rank 0 computes longer, so the others show the wait.
"""

from __future__ import annotations

import argparse
import sys


def work(n: int) -> float:
    total = 0.0
    for i in range(n):
        total += (i % 7) * 0.5
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--work", type=int, default=20000)
    args = parser.parse_args(argv)

    from mpi4py import MPI

    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=args.run_dir, role="rank")
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    with profiler:
        for _ in range(args.steps):
            with profiler.phase("iteration"):
                with profiler.phase("compute"):
                    value = work(args.work * (2 if rank == 0 else 1))
                with profiler.phase("allreduce"):
                    comm.allreduce(value, op=MPI.SUM)
                profiler.count("steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
