"""Why a phase's thread was not running, measured by the kernel: real processes pinned to one CPU
beside a competitor wait in the run queue, real sleeps and locks are blocked, a real cgroup's
CPU quota throttles (where this machine lets a test make one), a stand-in ``cpu.stat``
otherwise; and the process's CPU time counts threads that never enter a phase.

Each figure is judged against what the process really did, with room for a loaded machine: a
share is asserted only where the planted cause dominates it by construction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lineprofiler.accounting.sampling import cpu

pytestmark = pytest.mark.skipif(not os.path.isfile("/proc/self/schedstat"), reason="needs /proc/<pid>/schedstat")

CHILD = Path(__file__).with_name("off_cpu_child.py")
CGROUP_CPU = Path("/sys/fs/cgroup/cpu")


def run_child(tmp_path: Path, scenario: str, options: str = "") -> dict[str, Any]:
    run_dir = tmp_path / f"run_{scenario}_{len(list(tmp_path.iterdir()))}"
    args = [sys.executable, str(CHILD), str(run_dir), scenario] + ([options] if options else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def phase(samples: dict[str, Any], path: str) -> dict[str, Any]:
    (row,) = [row for row in samples["off_cpu"]["phases"] if row["path"] == path]
    return row


def check_parts(row: dict[str, Any]) -> None:
    parts = row["on_cpu_ns"] + row["runqueue_ns"] + (row["throttled_ns"] or 0) + row["blocked_ns"]
    # blocked is the rest, never negative; a running thread's schedstat lags by a tick at most
    assert all(row[k] >= 0 for k in ("on_cpu_ns", "runqueue_ns", "blocked_ns"))
    assert parts >= row["elapsed_ns"] * 0.95


@pytest.fixture
def competitor():
    """A process spinning on CPU 0 for as long as the test needs it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import os\nos.sched_setaffinity(0, {0})\nwhile True: pass"],
    )
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_a_thread_pinned_beside_a_competitor_waits_in_the_run_queue(tmp_path, competitor):
    samples = run_child(tmp_path, "spin", "pin")
    off = samples["off_cpu"]
    assert off["unavailable_reason"] is None and off["threads"] >= 1 and off["resolution_s"] == 0.05
    row = phase(samples, "spin")
    check_parts(row)
    # Two runnable processes share one CPU: the spinner waits for it about half the time.
    assert row["elapsed_ns"] >= 1.2e9
    assert row["runqueue_ns"] > 0.2 * row["elapsed_ns"]
    assert row["on_cpu_ns"] > 0.1 * row["elapsed_ns"]
    assert row["blocked_ns"] < 0.2 * row["elapsed_ns"]


def test_a_sleep_and_a_lock_are_blocked_time(tmp_path):
    for scenario, path in (("nap", "nap"), ("lock", "wait_lock")):
        row = phase(run_child(tmp_path, scenario), path)
        check_parts(row)
        assert row["elapsed_ns"] >= 0.6e9
        assert row["blocked_ns"] > 0.8 * row["elapsed_ns"], (scenario, row)


def test_the_process_cpu_counts_threads_outside_phases(tmp_path):
    samples = run_child(tmp_path, "threads")
    process = samples["process_cpu"]
    assert process["unavailable_reason"] is None
    assert process["threads_max"] >= 4  # the main thread, three spinners (and the sampler's)
    nap = phase(samples, "nap")
    # The spinners' own thread clocks: the process's CPU time holds them (to the clock tick, 10 ms,
    # of /proc/self/stat), though none of them entered a phase.
    spun = samples["spinner_threads_cpu_ns"]
    assert spun > 0 and process["cpu_ns"] >= spun - 30_000_000
    assert nap["on_cpu_ns"] < 0.2 * spun
    cpus = samples["cpus"]
    assert cpus["online"] == os.cpu_count() and cpus["affinity"] == len(os.sched_getaffinity(0))


class ThrottleWriter:
    """Rewrites a stand-in cpu.stat in place (the sampler keeps it open) with a throttled time that
    grows 1 ms per 10 ms of wall time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        start = time.monotonic()
        with open(self.path, "r+") as handle:
            while not self.stop.wait(0.01):
                usec = int((time.monotonic() - start) * 1e5)
                handle.seek(0)
                handle.write(f"nr_periods 1\nnr_throttled 1\nthrottled_usec {usec:012d}\n")
                handle.flush()


def test_throttling_from_a_stand_in_cpu_stat_is_a_part_of_the_run_queue_wait(tmp_path, competitor):
    writer = ThrottleWriter(tmp_path / "cpu.stat")
    writer.thread.start()
    try:
        samples = run_child(tmp_path, "spin", f"pin,cpu_stat={writer.path}")
    finally:
        writer.stop.set()
        writer.thread.join()
    off = samples["off_cpu"]
    assert off["throttle_unavailable_reason"] is None and off["throttle_source"] == str(writer.path)
    row = phase(samples, "spin")
    check_parts(row)
    # 10 % of wall time throttled, on the one CPU the process may use, capped by the wait.
    assert 0.05 * row["elapsed_ns"] < row["throttled_ns"] < 0.15 * row["elapsed_ns"]


def test_an_unreadable_cpu_stat_says_throttling_was_not_measured(tmp_path):
    samples = run_child(tmp_path, "nap", f"cpu_stat={tmp_path / 'missing' / 'cpu.stat'}")
    off = samples["off_cpu"]
    assert "missing/cpu.stat" in off["throttle_unavailable_reason"]
    row = phase(samples, "nap")
    assert row["throttled_ns"] is None and row["blocked_ns"] > 0


@pytest.fixture
def quota_cgroup():
    """A cgroup v1 CPU folder allowing 0.2 CPU, or a skip that names why there is none."""
    if not (CGROUP_CPU / "cgroup.procs").is_file():
        pytest.skip(f"no cgroup v1 cpu controller at {CGROUP_CPU} to make a quota in")
    folder = CGROUP_CPU / f"lp_test_{os.getpid()}_{time.monotonic_ns()}"
    try:
        folder.mkdir()
        (folder / "cpu.cfs_period_us").write_text("100000")
        (folder / "cpu.cfs_quota_us").write_text("20000")
    except OSError as error:
        if folder.exists():
            folder.rmdir()
        pytest.skip(f"this machine does not let a test make a cgroup with a CPU quota: {error}")
    yield folder
    for _ in range(50):  # the child has exited; the kernel lets the folder go once it is empty
        try:
            folder.rmdir()
            break
        except OSError:
            time.sleep(0.1)


def throttled_total_ns(folder: Path) -> int:
    fields = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines())
    return int(fields["throttled_usec"]) * 1000 if "throttled_usec" in fields else int(fields["throttled_time"])


def test_a_real_cgroup_quota_throttles_a_phase(tmp_path, quota_cgroup):
    samples = run_child(tmp_path, "spin", f"cgroup={quota_cgroup}")
    off = samples["off_cpu"]
    assert off["throttle_source"] == str(quota_cgroup / "cpu.stat")
    assert samples["cpus"]["quota_cpus"] == pytest.approx(0.2)
    row = phase(samples, "spin")
    check_parts(row)
    # The kernel's own total for the cgroup (the child was its only process) sums the time each
    # CPU's queue of the cgroup was held back: one thread's share is measured, and never more.
    # How much of it the thread's own wait shows depends on the machine's load (an idle machine
    # here gives 80 % of the phase; one CI run under load gave 39 ms of 1.28 s), so the share is
    # bounded, not pinned; the arithmetic is pinned by the stand-in cpu.stat test above.
    kernel = throttled_total_ns(quota_cgroup)
    if kernel < 50_000_000:
        pytest.skip(f"the machine's load kept the spinner under its 0.2 CPU quota (throttled {kernel / 1e6:.0f} ms)")
    assert 0 < row["throttled_ns"] <= kernel
    assert row["on_cpu_ns"] < 0.5 * row["elapsed_ns"]


def test_the_timeline_off_means_no_split_but_the_process_cpu_still(tmp_path):
    run_dir = tmp_path / "run"
    script = (
        "import glob, json, sys, time\n"
        "from lineprofiler.accounting import Profiler\n"
        "p = Profiler(sys.argv[1], role='r', timeline_hz=0)\n"
        "with p:\n"
        "    with p.phase('nap'):\n"
        "        time.sleep(0.2)\n"
        "(path,) = glob.glob(sys.argv[1] + '/**/w_*.json', recursive=True)\n"
        "print(json.dumps(json.load(open(path))['samples']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(run_dir)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    samples = json.loads(done.stdout)
    assert samples["off_cpu"]["phases"] == [] and "timeline_hz is 0" in samples["off_cpu"]["unavailable_reason"]
    assert samples["process_cpu"]["cpu_ns"] is not None and samples["process_cpu"]["threads"] >= 1


@pytest.mark.parametrize(
    ("proc_cgroup", "files", "expected_stat", "expected_quota"),
    [
        ("0::/job.slice/run\n", {"job.slice/run/cpu.stat": "", "job.slice/run/cpu.max": "50000 100000\n"},
         "job.slice/run/cpu.stat", 0.5),
        ("0::/\n", {"cpu.stat": "", "cpu.max": "max 100000\n"}, "cpu.stat", None),
        ("2:cpuacct:/\n1:cpu:/lp\n", {"cpu/lp/cpu.stat": "", "cpu/lp/cpu.cfs_quota_us": "150000\n",
                                      "cpu/lp/cpu.cfs_period_us": "100000\n"}, "cpu/lp/cpu.stat", 1.5),
        ("4:cpu,cpuacct:/k\n", {"cpu,cpuacct/k/cpu.stat": "", "cpu,cpuacct/k/cpu.cfs_quota_us": "-1\n",
                                "cpu,cpuacct/k/cpu.cfs_period_us": "100000\n"}, "cpu,cpuacct/k/cpu.stat", None),
    ],
)
def test_the_cgroup_files_are_found_for_v1_and_v2(tmp_path, proc_cgroup, files, expected_stat, expected_quota):
    (tmp_path / "cgroup").write_text(proc_cgroup)
    root = tmp_path / "fs"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert cpu.cpu_stat_path(str(tmp_path / "cgroup"), str(root)) == str(root / expected_stat)
    document = cpu.cpus_document(str(tmp_path / "cgroup"), str(root))
    assert document["quota_cpus"] == expected_quota and document["unavailable_reason"] is None
    (tmp_path / "cgroup").write_text("0::/nowhere\n")
    assert cpu.cpu_stat_path(str(tmp_path / "cgroup"), str(root)) is None
    assert cpu.cpus_document(str(tmp_path / "cgroup"), str(root))["unavailable_reason"]
