"""Ranks under mpirun, each profiled: compute, then an allreduce that waits for the slowest.

    mpirun -n 4 python examples/mpi_allreduce.py --run-dir profile
    lineprofiler report profile/

There is no parent profiler: each rank constructs its own, and they share a run through the
run id lineprofiler derives from Open MPI's job id (OMPI_MCA_ess_base_jobid; PMIX_NAMESPACE
under other PMIx launchers). OMPI_COMM_WORLD_RANK names each rank. Rank 0 computes twice as
long, so the other ranks' allreduce shows the wait.
"""

from __future__ import annotations

import argparse
import sys


def work(n: int) -> int:
    total = 0
    for i in range(n):
        total += i % 7
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--work", type=int, default=50000, help="loop iterations per step (rank 0 does twice as many)")
    args = parser.parse_args(argv)

    from mpi4py import MPI

    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=args.run_dir, role="worker")
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    total = 0
    with profiler:
        for _ in range(args.steps):
            with profiler.phase("iteration"):
                with profiler.phase("compute"):
                    work(args.work * (2 if rank == 0 else 1))
                with profiler.phase("allreduce"):
                    total = comm.allreduce(rank + 1, op=MPI.SUM)
                profiler.count("steps")
    if rank == 0:
        print(f"allreduce: {args.steps} steps, last sum {total}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
