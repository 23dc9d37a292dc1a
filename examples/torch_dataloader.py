"""A PyTorch training script with DataLoader workers, profiled the recommended way.

The shape most training jobs have: a ``Dataset`` whose ``__getitem__`` does Python-side work
(augmentation), a ``DataLoader`` with worker processes that stay alive between epochs, an MLP
trained with AdamW, and a checkpoint per epoch. The trainer makes one Profiler (role
"trainer"); each DataLoader worker makes its own in ``worker_init_fn`` (role "dataloader"), so
the report shows the two roles side by side: where the trainer waited for batches, and what the
workers spent their time on.

    python examples/torch_dataloader.py [--run-dir profile] [--epochs 3] [--workers 4]
    lineprofiler report profile/

Runs on the CPU; needs torch (`pip install torch`).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from contextlib import nullcontext

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info

from lineprofiler.accounting import Profiler

#: The profiler of this process: the trainer's in the main process, a worker's own in a worker.
profiler: Profiler | None = None


class NoisySines(Dataset):
    """Sine waves with a random phase, augmented in Python (the work a DataLoader hides)."""

    def __init__(self, n: int, width: int = 64, worker_profilers: str = "init") -> None:
        self.n = n
        self.width = width
        self.worker_profilers = worker_profilers  # travels to the workers with the dataset

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        prof = _item_profiler(self.worker_profilers)
        with prof.phase("getitem") if prof else nullcontext():
            generator = torch.Generator().manual_seed(index)
            phase = float(torch.rand(1, generator=generator)) * 2 * math.pi
            with prof.phase("augment") if prof else nullcontext():
                # Python-side work per sample, as real augmentation pipelines do
                values = [math.sin(phase + 0.1 * i) + 0.05 * math.cos(7 * i) for i in range(self.width)]
            x = torch.tensor(values, dtype=torch.float32)
            y = torch.tensor([math.cos(phase)], dtype=torch.float32)
            if prof:
                prof.count("samples")
            return x, y


def _item_profiler(worker_profilers: str) -> Profiler | None:
    """The profiler a sample is recorded under: the trainer's when there are no workers; in a
    worker, its own (made in worker_init_fn, or here on its first item with --worker-profilers
    lazy), or none (--worker-profilers none: the worker is forked, not profiled)."""
    global profiler
    if get_worker_info() is None:
        return profiler
    if worker_profilers == "lazy" and (profiler is None or profiler.role == "trainer"):
        profiler = Profiler(role="dataloader")
    if worker_profilers == "none":
        return None
    return profiler


def worker_init_fn(worker_id: int) -> None:
    """Each DataLoader worker profiles itself under its own role. It joins the trainer's run
    with no arguments: the trainer's profiler exported the run directory to its children."""
    global profiler
    profiler = Profiler(role="dataloader")


def train(args: argparse.Namespace) -> float:
    global profiler
    profiler = Profiler(run_dir=args.run_dir, role="trainer")
    torch.manual_seed(0)
    data = NoisySines(args.samples, worker_profilers=args.worker_profilers)
    loader = DataLoader(
        data,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
        worker_init_fn=worker_init_fn if args.workers > 0 and args.worker_profilers == "init" else None,
    )
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()
    checkpoints = tempfile.mkdtemp(prefix="ckpt-")
    loss = float("nan")
    with profiler:
        for epoch in range(args.epochs):
            with profiler.phase("epoch"):
                batches = iter(loader)
                while True:
                    with profiler.phase("step"):
                        with profiler.phase("wait_for_batch"):
                            batch = next(batches, None)
                        if batch is None:
                            break
                        x, y = batch
                        with profiler.phase("forward"):
                            loss_t = loss_fn(model(x), y)
                        with profiler.phase("backward"):
                            optimizer.zero_grad()
                            loss_t.backward()
                            optimizer.step()
                        loss = loss_t.item()
                with profiler.phase("checkpoint", io=True):
                    torch.save(model.state_dict(), os.path.join(checkpoints, f"epoch{epoch}.pt"))
            print(f"epoch {epoch}: loss {loss:.4f}", flush=True)
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--worker-profilers",
        choices=["init", "lazy", "none"],
        default="init",
        help="where DataLoader workers make their profiler: worker_init_fn, their first item, or nowhere",
    )
    args = parser.parse_args()
    loss = train(args)
    print(f"done: loss {loss:.4f}; now run: lineprofiler report {args.run_dir}")


if __name__ == "__main__":
    main()
