"""Why a phase waited, measured on real processes: two processes pinned to one CPU spin at the same
time (each waits for the CPU the other holds: the run queue), then sleep (blocked)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from helpers.cli import run_cli
from helpers.env import clean_env

SPINNER = """
import os, sys, time
from lineprofiler.accounting import Profiler
run_dir, cpu, start_at = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
os.sched_setaffinity(0, {cpu})  # before the profiler: its sampler thread is pinned there too
profiler = Profiler(run_dir, role="spinner", timeline_hz=20, snapshot_interval_s=None)
while time.time() < start_at:  # both spin at once, whenever each got here
    time.sleep(0.005)
with profiler.phase("spin"):
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        pass
with profiler.phase("nap"):
    time.sleep(1.0)
profiler.close()
"""


def shares(row: dict) -> dict[str, float]:
    split = row["off_cpu"]
    assert split is not None, row["off_cpu_reason"]
    return {key: (split[f"{key}_ns"] or 0) / split["sampled_ns"] for key in ("on_cpu", "runqueue", "blocked")}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="os.sched_setaffinity is Linux's")
def test_two_processes_on_one_cpu_wait_in_its_queue_and_a_sleep_is_blocked(tmp_path):
    script = tmp_path / "spinner.py"
    script.write_text(SPINNER)
    run_dir = tmp_path / "run"
    cpu = min(os.sched_getaffinity(0))
    start_at = time.time() + 3.0  # time for both interpreters to start on a loaded machine
    env = clean_env({"LINEPROFILER_RUN_ID": "offcpu"})
    children = [
        subprocess.Popen([sys.executable, str(script), str(run_dir), str(cpu), str(start_at)], env=env, cwd=tmp_path)
        for _ in range(2)
    ]
    assert [child.wait(timeout=120) for child in children] == [0, 0]
    from lineprofiler.runfiles import workerfile

    documents = [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]
    assert len(documents) == 2
    if not all(isinstance(d["samples"], dict) and "off_cpu" in d["samples"] for d in documents):
        pytest.skip("this build's sampler writes no samples.off_cpu (the ResourceSampler does not read schedstat)")
    result = run_cli("report", run_dir, "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    rows = {p["path"]: p for p in document["dominant"]["phases"]}
    spin, nap = shares(rows["spin"]), shares(rows["nap"])
    assert spin["runqueue"] > 0.25, rows["spin"]  # about half: the other process held the CPU
    assert nap["blocked"] > 0.80, rows["nap"]
    assert rows["spin"]["off_cpu"]["measured_processes"] == 2
    (host,) = document["cpu"]["hosts"]
    assert host["affinity"] == 1 and 0 < host["capacity_cpus"] <= 1  # a cgroup quota may lower it further
    assert host["cores_used"] is not None and host["cores_used"] <= 1.1
    text = run_cli("report", run_dir).out
    assert "    waited: cpu queue " in text and "(affinity 1 of " in text
