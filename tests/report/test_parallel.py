"""The report read in a pool of processes: the same text as read in one, whatever the run.

The run is the scale benchmark's own (``benchmarks/bench_report.py``: 50-phase trees, a day's
worth of rows cut to minutes, written by the sampler's writer), with a damaged sample file, a
missing one and a worker that wrote none, so every way a file is folded is exercised.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from array import array
from bisect import bisect_left
from pathlib import Path

import pytest

from helpers.benchmarks import benchmark_module
from lineprofiler.report.compute.blocks import RenderOptions, resources, sampled
from lineprofiler.report.read import merge, parallel
from lineprofiler.runfiles import layout, workerfile


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    bench = benchmark_module("bench_report")
    run_dir = tmp_path_factory.mktemp("parallel") / "profile"
    workers = 12
    for index in range(workers):
        bench.write_worker(run_dir, index, workers, hours=0.25, samples="sidecar", nodes=50)
    sidecars = sorted(run_dir.glob("workers/*/*.samples"))
    sidecars[3].write_bytes(sidecars[3].read_bytes()[:100])  # damaged: shorter than its header
    sidecars[5].unlink()  # missing
    sidecars[7].write_bytes(sidecars[7].read_bytes() + b"\0" * 12)  # a partial last chunk
    # A worker that wrote no samples.
    path = sorted(run_dir.glob("workers/*/*.json"))[9]
    document = workerfile.read_worker_file(path)
    document["samples"] = None
    workerfile.write_worker_file(path, document)
    layout.sidecar_path(path).unlink()
    return run_dir


def report(run_dir: Path, jobs: int, *flags: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    env[parallel.ENV_JOBS] = str(jobs)
    command = [sys.executable, "-m", "lineprofiler", "report", str(run_dir), *flags]
    result = subprocess.run(command, capture_output=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_pool_prints_exactly_what_one_process_prints(run_dir):
    serial = report(run_dir, 1)
    assert b"I/O" in serial and b"MEMORY" in serial and b"lacks" not in serial
    assert b"sample file is missing" in serial and b"partial last chunk ignored" in serial
    assert report(run_dir, 2) == serial
    assert report(run_dir, 3) == serial
    assert report(run_dir, 2, "--no-samples") == report(run_dir, 1, "--no-samples")
    assert report(run_dir, 2, "--json") == report(run_dir, 1, "--json")  # per-process RSS series too


def test_both_the_worker_files_and_the_sample_files_go_to_the_pool(run_dir, monkeypatch):
    used = []
    original = parallel.ordered_map

    def spy(fn, items, jobs, chunksize=1):
        used.append((fn.__name__, jobs))
        return original(fn, items, jobs, chunksize)

    monkeypatch.setattr(parallel, "ordered_map", spy)
    monkeypatch.setenv(parallel.ENV_JOBS, "2")
    run = merge.load_run(run_dir)
    res = resources.reduce_run(run, RenderOptions())
    assert used == [("read_worker", 2), ("summarise_sample_file", 2)]
    assert res.workers == 11 and res.sampled == 9 and len(run.workers) == 12  # two sample files unusable
    monkeypatch.setenv(parallel.ENV_JOBS, "1")
    assert resources.reduce_run(merge.load_run(run_dir), RenderOptions()).io == res.io


POOL_SCRIPT = """
import os, sys
from lineprofiler.report.read import parallel

def where(item):
    return item, os.getpid()

def dies_in_a_child(item):
    value, parent = item
    if value == 5 and os.getpid() != parent:
        os._exit(3)  # a child killed mid-run (as the OOM killer would)
    return value * value

if __name__ == "__main__":
    results = list(parallel.ordered_map(where, list(range(40)), jobs=2))
    assert [item for item, _ in results] == list(range(40)), results
    assert {pid for _, pid in results} - {os.getpid()}, "nothing ran in another process"
    assert list(parallel.ordered_map(where, [7], jobs=2)) == [(7, os.getpid())]  # one item: here
    items = [(i, os.getpid()) for i in range(12)]
    assert list(parallel.ordered_map(dies_in_a_child, items, jobs=2)) == [i * i for i in range(12)]
    print("ok")
"""


def test_ordered_map_keeps_the_order_and_survives_a_dead_child(tmp_path):
    # In a fresh interpreter: the pool's children must find these functions by their module.
    script = tmp_path / "pool_check.py"
    script.write_text(POOL_SCRIPT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_how_many_processes(monkeypatch):
    monkeypatch.delenv(parallel.ENV_JOBS, raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 4)
    assert parallel.jobs_for(1, 10**9, 1) == 1  # one file
    assert parallel.jobs_for(100, 10, 64) == 1  # too little work for a second process
    assert parallel.jobs_for(100, 200, 64) == 3
    assert parallel.jobs_for(100, 10**9, 64) == 4  # no more than the cores
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 1)
    assert parallel.jobs_for(100, 10**9, 64) == 1
    monkeypatch.setenv(parallel.ENV_JOBS, "3")
    assert parallel.jobs_for(2, 0, 64) == 2  # asked for, a tiny run included; never more than the files
    for wrong in ("0", "-2", "many", ""):
        monkeypatch.setenv(parallel.ENV_JOBS, wrong)
        assert parallel.jobs_for(100, 10**9, 64) == 1


def test_slot_rows_are_found_as_bisect_finds_them():
    rng = random.Random(17)
    for _ in range(300):
        n = rng.randint(0, 60)
        t, now = [], rng.randint(0, 10**6)
        for _ in range(n):
            now += rng.choice([1000, 1000, 1000, 999, 1001, 0, 50_000])  # jitter, ties and gaps
            t.append(now)
        view = memoryview(array("q", t))
        targets = sorted(rng.randint(-2000, (t[-1] if t else 0) + 2000) + 10**6 for _ in range(rng.randint(0, 40)))
        assert sampled._first_rows(view, targets) == [bisect_left(t, x) for x in targets]


def test_a_sample_file_of_a_gigabyte_is_refused_in_one_line_and_the_rest_reported(run_dir, tmp_path):
    big_run = tmp_path / "profile"
    shutil.copytree(run_dir, big_run)
    sidecar = sorted(big_run.glob("workers/*/*.samples"))[0]
    with open(sidecar, "r+b") as handle:
        handle.truncate(1 << 30)  # sparse: a gigabyte on paper, nothing on the disk
    for jobs in (1, 2):
        text = report(big_run, jobs).decode()
        refused = [line for line in text.splitlines() if sidecar.name in line]
        assert len(refused) == 1 and "larger than the 268,435,456-byte limit for this file (1,073,741,824 bytes)" in (
            refused[0]
        ), refused
        assert "Processes 12" in text and "MEMORY (RSS, sampled)" in text
