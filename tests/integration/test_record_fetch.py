"""``fetch`` in DataLoader workers under ``lineprofiler record --auto torch``, for the datasets
whose calls are not one sample each: a ``__getitems__`` dataset (one call per batch) and an
iterable dataset (one ``next()`` per sample, plus the one that ends it).

A plain script with no profiler in it reads both through 2 forked workers and prints the sums.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lp_installed import HAS_TORCH, NO_TORCH
from lp_integration_helpers import phases_by_path, worker_documents

from helpers.cli import run_cli_process

SAMPLES, BATCH, WORKERS = 24, 4, 2

LOADERS = f"""
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

SAMPLES, BATCH, WORKERS = {SAMPLES}, {BATCH}, {WORKERS}


class Batched(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        raise AssertionError("__getitems__ is the dataset's way in")

    def __getitems__(self, indices):
        return [torch.tensor(float(i)) for i in indices]


class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        return iter(torch.tensor(float(i)) for i in range(info.id, SAMPLES, info.num_workers))


def total(dataset):
    loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS, multiprocessing_context="fork")
    return sum(float(batch.sum()) for batch in loader)


print("batched", total(Batched()), "stream", total(Stream()))
"""


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_record_auto_torch_counts_the_samples_of_batched_and_iterable_datasets(tmp_path: Path) -> None:
    script = tmp_path / "loaders.py"
    script.write_text(LOADERS)
    done = run_cli_process("record", "-d", tmp_path / "run", "--auto", "torch", script, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"batched {float(sum(range(SAMPLES)))} stream {float(sum(range(SAMPLES)))}\n"
    workers = [d for d in worker_documents(tmp_path / "run") if d["identity"]["role"] == "dataloader"]
    counts = []  # per worker: (fetch entries, samples, collate entries)
    for worker in workers:
        phases = phases_by_path(worker)
        assert set(phases) == {"fetch", "collate"} and worker["auto_torch"]["errors"] == 0
        samples = sum(c["total"] for c in worker["counters"] if c["name"] == "samples" and c["phase"] == "fetch")
        counts.append((phases["fetch"]["entries"], samples, phases["collate"]["entries"]))
    share = SAMPLES // WORKERS  # each worker's samples, in either loader
    batches = share // BATCH
    # Entries are calls: one per __getitems__ batch; one per next(), and the next() that ends it.
    assert sorted(counts) == [(batches, share, batches)] * WORKERS + [(share + 1, share, batches)] * WORKERS
