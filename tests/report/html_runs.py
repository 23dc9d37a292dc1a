"""A demo-sized run with every block of the report, for the HTML, JSON and Perfetto tests.

Three actors on two nodes with counters (uneven work: more iterations for some), a learner with an ``io=True``
checkpoint and a phase whose boundary read failed, resource samples for every worker (RSS,
the ``/proc/self/io`` counters, one GPU's busy and per-process columns), NVML and VRAM
information, one worker killed before any data and a superseded attempt: so the report has
header, roles, dominant phases, counters, iterations, I/O BY PHASE, I/O, MEMORY, GPU, CAVEATS
and an attempt line, all from the real writers.
"""

from __future__ import annotations

from pathlib import Path

from lp_report_builders import MS, T0, S, SimWorker, actor_loop, gpu_document, learner_loop

from lineprofiler.runfiles.samplefile import BASE_COLUMNS

ROWS = 40


def _columns(k_fn) -> dict[str, list[int]]:
    rows = []
    for k in range(ROWS):
        row = dict.fromkeys(BASE_COLUMNS, 0)
        k_fn(k, row)
        rows.append(row)
    return {name: [r[name] for r in rows] for name in BASE_COLUMNS if name not in ("t_ns", "flags")}


def _samples(worker: SimWorker, run_dir: Path, index: int) -> dict:
    def fill(k: int, row: dict) -> None:
        row["phase"] = 1 if k % 4 else -1
        # RSS grows, with a one-sample spike the charts must keep.
        row["rss_bytes"] = 200_000_000 + k * 2_000_000 * (index + 1) + (300_000_000 if k == 17 else 0)
        row["rchar"] = 3_000_000 * k
        row["read_bytes"] = 1_000_000 * k
        row["wchar"] = row["write_bytes"] = 500_000 * k + (20_000_000 if k >= 30 else 0)

    columns = _columns(fill)
    columns["gpu0_busy"] = [60 + (k % 5) * 8 for k in range(ROWS)]
    columns["gpu0_mine"] = [-1 if k % 3 == 0 else 15 + 5 * index for k in range(ROWS)]
    return worker.write_samples(run_dir, columns, interval_s=1.0)


def _gpu(index: int) -> dict:
    return gpu_document(
        devices=[0], vram={"allocated_peak": (index + 2) * 10**9, "reserved_peak": (index + 3) * 10**9, "samples": 5}
    )


def write_run(run_dir: Path) -> Path:
    """Write the run under ``run_dir``; returns it."""
    old = SimWorker("actor", run_id="20260813T2010-aa12bc", start_unix_ns=T0 - 3600 * S)
    with old.phase("iteration"):
        old.work(5 * MS)
    old.write(run_dir)
    for index in range(3):
        actor = SimWorker("actor", host=f"node0{index % 2}", rank=index, job_id="4242", launcher="slurm")
        actor_loop(actor, 60 + 25 * index, mcts_ns=8 * MS, env_ns=2 * MS, mcts_wait_ns=2 * MS,
                   jitter=[0, MS, 3 * MS, 9 * MS])
        actor.count("episodes", 3 + index)
        actor.wait(ROWS * S - actor.clock_ns)
        actor.write(run_dir, samples=_samples(actor, run_dir, index), gpu=_gpu(index))
    learner = SimWorker("learner", host="node01", rank=3, job_id="4242", launcher="slurm")
    learner_loop(learner, 40, train_ns=30 * MS, wait_ns=12 * MS, checkpoint_every=10, checkpoint_ns=80 * MS)
    with learner.phase("load_shard", io=True):
        learner.wait(40 * MS)
    learner.io_bytes["checkpoint"] = {"read_bytes": 0, "write_bytes": 48_000_000, "rchar": 4096, "measured": 4}
    learner.io_bytes["load_shard"] = {"read_bytes": 9_000_000, "write_bytes": 0, "rchar": 30_000_000, "failed": 1}
    learner.wait(ROWS * S - learner.clock_ns)
    learner.write(run_dir, samples=_samples(learner, run_dir, 3), gpu=_gpu(3))
    SimWorker("actor", host="node00").write(run_dir, status="started", flush_at_ns=0)
    return run_dir
