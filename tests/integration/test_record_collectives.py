"""``lineprofiler record --auto torch`` on a two-rank ``torch.distributed`` job (gloo, CPU).

The script has no profiler in it: it starts its two ranks as torchrun would (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` on a free port), and each rank all-reduces a
known tensor (the last time with ``async_op=True``), passes a barrier, trains a
DistributedDataParallel model a few steps and all-gathers its weights to show they agree. DDP's
own gradient all-reduce, issued from C++, comes from torch's flight recorder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lp_installed import HAS_TORCH, NO_TORCH
from lp_integration_helpers import phases_by_path, worker_documents

from helpers.cli import run_cli_process

REDUCES, STEPS, NUMEL = 3, 4, 16
#: nn.Linear(4, 1): 4 weights and a bias in float32, one DDP bucket (25 MB each by default).
BUCKETS, GRADIENT_BYTES = 1, (4 + 1) * 4

TWO_RANKS = f"""
import os
import socket
import subprocess
import sys

WORLD, REDUCES, STEPS, NUMEL = 2, {REDUCES}, {STEPS}, {NUMEL}


def launch():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = []
    for rank in range(WORLD):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD))
        ranks.append(subprocess.Popen([sys.executable, __file__, "rank"], env=env, stdout=subprocess.PIPE, text=True))
    for process in ranks:
        print(process.communicate(timeout=120)[0], end="")
    sys.exit(max(process.returncode for process in ranks))


def rank():
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    me = dist.get_rank()
    total = torch.zeros(NUMEL)
    for n in range(REDUCES):
        t = torch.full((NUMEL,), float(me + 1))
        work = dist.all_reduce(t, async_op=n == REDUCES - 1)
        if work is not None:
            work.wait()
        total += t
    dist.barrier()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        opt.zero_grad()
        model(torch.full((8, 4), float(me + step))).sum().backward()
        opt.step()
    weights = [torch.zeros(4) for _ in range(WORLD)]
    dist.all_gather(weights, model.module.weight.detach().reshape(4))
    agree = all(torch.equal(w, weights[0]) for w in weights)
    print(f"rank {{me}} reduced {{total[0].item()}} in sync {{agree}} ring {{os.environ.get('TORCH_FR_BUFFER_SIZE')}}")
    dist.destroy_process_group()


if __name__ == "__main__":
    rank() if sys.argv[1:] == ["rank"] else launch()
"""


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_record_auto_torch_times_each_ranks_collectives_with_their_bytes(tmp_path: Path) -> None:
    script = tmp_path / "ddp.py"
    script.write_text(TWO_RANKS)
    done = run_cli_process("record", "-d", tmp_path / "run", "--auto", "torch", script, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    # The program's own output: (1 + 2) per all-reduce, three times; DDP kept the ranks in step;
    # the flight recorder's size, which --auto torch set in the environment the program runs in.
    assert done.stdout == "rank 0 reduced 9.0 in sync True ring 2000\nrank 1 reduced 9.0 in sync True ring 2000\n"
    documents = worker_documents(tmp_path / "run")
    ranks = {d["identity"]["rank"]: d for d in documents}
    assert sorted(ranks, key=str) == [0, 1, None] and len(documents) == 3  # the launcher has no rank
    for document in (ranks[0], ranks[1]):
        entries = {path: phase["entries"] for path, phase in phases_by_path(document).items()}
        bytes_moved = {c["phase"]: c["total"] for c in document["counters"] if c["name"] == "collective_bytes"}
        assert entries["collective/all_reduce"] == REDUCES and entries["collective/barrier"] == 1
        assert entries["collective/all_gather"] == 1
        # DDP's gradient all-reduce runs from C++ inside backward: no collective phase of its own,
        # but the flight recorder lists it (and not the wrapped calls above, which it counts apart).
        assert entries["collective"] == REDUCES + 2, entries
        process_group = document["auto_torch"]["process_group"]
        assert process_group["ops"]["all_reduce"] == {
            "calls": STEPS * BUCKETS, "bytes": STEPS * BUCKETS * GRADIENT_BYTES, "unsized_calls": 0,
            "duration_ns": None, "timed_calls": 0,  # gloo times none: never made up
        }, process_group
        assert "barrier" not in process_group["ops"] and process_group["in_phases"] == REDUCES + 2
        assert (process_group["dropped"], process_group["unavailable_reason"]) == (0, None)
        assert bytes_moved == {"collective/all_reduce": REDUCES * NUMEL * 4, "collective/all_gather": 4 * 4}
        for part in ("step", "step/forward", "step/backward", "step/optimizer", "step/zero_grad"):
            assert entries[part] == STEPS, entries
        assert document["auto_torch"]["errors"] == 0 and "collectives" in document["auto_torch"]["hooks"]
        assert document["repairs"]["mismatched_exits"] == 0
    assert ranks[None]["auto_torch"]["process_group"] is None  # the launcher never imported torch
    report = run_cli_process("report", tmp_path / "run", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    calls, moved = 2 * STEPS * BUCKETS, 2 * STEPS * BUCKETS * GRADIENT_BYTES  # the role's two ranks
    (line,) = [line for line in report.stdout.splitlines() if "collectives not in a phase" in line]
    assert f"all_reduce {calls} calls, {moved} B" in line and "(DDP's: step/backward)" in line, line
