"""A worker SIGKILLed before its first snapshot (the case the live file exists for) is reported
with its real lifetime, from its start to the last sign of life its files give, never the
microseconds its start file covers; no share of a lifetime passes 100%; and a process whose
phases hold more time than its lifetime gets a CAVEATS line saying by how much."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.cli import run_cli
from lineprofiler.report.read.merge import load_run

PHASE_S = 1.5

KILLED = """
import os, sys, time
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role="trainer", enabled=True, snapshot_interval_s=600.0)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    with prof.phase("step"):
        with prof.phase("forward"):
            time.sleep(0.01)
if sys.argv[3] == "writeback":
    # Write the mapping's pages back: the next store faults and moves the file's time, as the
    # kernel's own writeback does every half minute in a longer run.
    fd = os.open(prof.live_path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    time.sleep(1.5)  # alive, outside any phase
    with prof.phase("last"):
        pass
print("ready", flush=True)
time.sleep(600)
"""


def _run_and_kill(folder: Path, phase_s: float, mode: str) -> tuple[Path, int, int]:
    """A job killed with SIGKILL before its first snapshot; returns the run directory, and the
    wall-clock times just before it started and just after it was killed."""
    script = folder / "job.py"
    script.write_text(KILLED)
    run_dir = folder / "run"
    before = time.time_ns()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(run_dir), str(phase_s), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "ready\n", (line, proc.stderr.read() if proc.stderr else "")
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    after = time.time_ns()
    assert proc.returncode == -signal.SIGKILL
    assert [p.name for p in run_dir.glob("workers/*/*.json")]  # the start file only: no snapshot
    return run_dir, before, after


def _report(run_dir: Path, *args: str) -> str:
    done = run_cli("report", run_dir, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _percents(text: str) -> list[float]:
    return [float(value.replace(",", "")) for value in re.findall(r"([\d,]+\.\d+)%", text)]


def test_runtime_of_a_worker_killed_before_its_first_snapshot(tmp_path: Path) -> None:
    run_dir, before, after = _run_and_kill(tmp_path, PHASE_S, "plain")
    doc = json.loads(_report(run_dir, "--json"))
    (role,) = doc["roles"]
    recorded = role["busy_ns"]
    assert recorded >= 0.9 * PHASE_S * 1e9  # the loop's time, less the gaps between its steps
    runtime = doc["header"]["runtime_ns"]
    # From its start to the last sign of life: at least the phase time it recorded, at most
    # until it was killed.
    assert recorded <= runtime <= after - before, (recorded, runtime, after - before)
    assert role["busy_fraction"] is None or 0 <= role["busy_fraction"] <= 1
    assert all(0 <= phase["share"] <= 1 for phase in role["phases"])
    assert any("killed before its first snapshot" in line for line in doc["caveats"]), doc["caveats"]

    text = _report(run_dir)
    assert all(value <= 100.0 for value in _percents(text)), text
    (worker,) = load_run(run_dir).workers
    assert worker.numbers_from == "live" and worker.before_first_snapshot


def test_a_live_file_whose_time_moved_gives_the_lifetime(disk_dir: Path) -> None:
    """Where the live file's time moved after the phases ended (the job wrote its pages back,
    then lived on 1.5 s outside any phase), the lifetime runs to that time: the phases are then
    a measured share of it."""
    run_dir, before, after = _run_and_kill(disk_dir, 1.0, "writeback")
    (live,) = run_dir.glob("workers/*/*.live")
    start = json.loads(live.with_suffix(".json").read_text())["times"]["start_unix_ns"]
    if live.stat().st_mtime_ns - start < 2.0e9:
        pytest.skip("this file system does not move a mapped file's time on a store after writeback")
    doc = json.loads(_report(run_dir, "--json"))
    assert 2.4e9 <= doc["header"]["runtime_ns"] <= after - before
    (role,) = doc["roles"]
    assert role["busy_fraction"] is not None and 0.2 < role["busy_fraction"] < 0.6, role["busy_fraction"]
    (worker,) = load_run(run_dir).workers
    assert worker.numbers_from == "live" and worker.lifetime_measured
    assert 2.4e9 <= worker.elapsed_ns <= after - before


THREADS = """
import sys, threading, time
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role="loader", enabled=True, snapshot_interval_s=600.0)
def work():
    with prof.phase("load"):
        time.sleep(1.0)
threads = [threading.Thread(target=work) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
prof.close()
"""


def test_phase_time_past_the_lifetime_is_a_caveat_and_shares_stay_at_most_100(tmp_path: Path) -> None:
    """Three threads in a top-level phase at once for a second: 3 s of phase time in a process
    that lived about 1 s."""
    script = tmp_path / "job.py"
    script.write_text(THREADS)
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, str(script), str(run_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(_report(run_dir, "--json"))
    (role,) = doc["roles"]
    assert role["busy_ns"] > 2 * role["lifetime_ns"]
    assert role["busy_fraction"] == 1.0
    (line,) = [line for line in doc["caveats"] if "more than its lifetime" in line]
    assert "loader pid" in line and "suspect" in line
    assert all(value <= 100.0 for value in _percents(_report(run_dir)))


GAPS = """
import sys, time
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role="actor", enabled=True, snapshot_interval_s=600.0)
end = time.monotonic() + 2.0
while time.monotonic() < end:
    with prof.phase("act"):
        time.sleep(0.01)
    time.sleep(0.04)  # outside any phase: four fifths of the time
print("ready", flush=True)
time.sleep(600)
"""


def test_the_last_phase_exit_gives_the_lifetime(tmp_path: Path) -> None:
    """A job that spends most of its time between phases, SIGKILLed before its first snapshot:
    its lifetime runs to its last phase exit (the live file's own stamp, not the phase time
    summed), and its phases are a measured fifth of it."""
    script = tmp_path / "job.py"
    script.write_text(GAPS)
    run_dir = tmp_path / "run"
    before = time.time_ns()
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    after = time.time_ns()
    (worker,) = load_run(run_dir).workers
    assert worker.numbers_from == "live" and worker.lifetime_measured
    assert 1.9e9 <= worker.elapsed_ns <= after - before, worker.elapsed_ns
    doc = json.loads(_report(run_dir, "--json"))
    (role,) = doc["roles"]
    assert role["busy_fraction"] is not None and 0.1 < role["busy_fraction"] < 0.4, role["busy_fraction"]
