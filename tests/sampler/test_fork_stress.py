"""os.fork() from any thread, at any moment, while other threads flush, snapshot and sample.

Each test runs fork_stress_child.py in its own interpreter and watches its progress file: a fork
that deadlocks the parent (or a child that never gets as far as exiting) stops the progress, and
the test kills its process group with SIGKILL (a deadlocked interpreter never runs a SIGTERM
handler) and fails with every thread's stack, instead of hanging the suite. Only a lack of
progress for STALL_S seconds counts as a hang; a slow machine only makes the test take longer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lineprofiler.runfiles import workerfile

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc"),
    # Under `make test-asan` the C runs on libasan's allocator, which GCC 12's runtime does not
    # lock across fork(): a child can block forever in malloc when another thread of the parent
    # was inside the allocator at the fork (seen in gdb: the child's new sampler thread waiting in
    # SizeClassAllocator64::GetFromAllocator, once in about 100 runs under load). glibc's malloc,
    # which every other job uses, is fork-safe; the fork paths still run under ASan in
    # test_sampling.py, test_processes.py and test_timeline.py, with fewer threads around them.
    pytest.mark.skipif(
        os.environ.get("LP_ASAN") == "1", reason="libasan's allocator is not fork-safe with threads (GCC 12)"
    ),
]

CHILD = Path(__file__).with_name("fork_stress_child.py")
STALL_S = 60.0  # no fork completed for this long: hung (a fork takes well under a second here)
LIMIT_S = 900.0  # a last bound on the whole run, progress or not


def run_stress(tmp_path: Path, mode: str, forks: int, **options: float | str) -> dict:
    run_dir = tmp_path / "run"
    progress = tmp_path / "progress"
    progress.touch()
    cmd = [sys.executable, str(CHILD), mode, str(run_dir), str(progress), "--forks", str(forks)]
    cmd += ["--stall", str(STALL_S * 0.75)]  # the child prints its stacks before it is killed
    for key, value in options.items():
        cmd += [f"--{key}", str(value)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    with open(tmp_path / "stdout", "w+") as out, open(tmp_path / "stderr", "w+") as err:
        # Its own process group, so a hung fork child is killed with it and never outlives the test.
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=tmp_path, start_new_session=True)
        started = last_change = time.monotonic()
        seen = 0
        hung = None
        while proc.poll() is None:
            time.sleep(0.1)
            now = time.monotonic()
            size = progress.stat().st_size
            if size != seen:
                seen, last_change = size, now
            elif now - last_change > STALL_S or now - started > LIMIT_S:
                hung = f"no progress for {now - last_change:.0f} s after {seen // 2} of {forks} forks"
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if hung is not None:
        pytest.fail(f"the process hung ({hung}); its threads:\n{stderr[-8000:]}")
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{stderr[-8000:]}"
    assert "Traceback" not in stderr, stderr[-8000:]  # nothing raised, not even inside a fork hook
    assert progress.stat().st_size == 2 * forks
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["errors"] == []
    result["run_dir"] = run_dir
    return result


def check_profiler_run(result: dict, forks: int, workers: int) -> None:
    """The parent wrote its last snapshot with every phase; every child wrote its start file."""
    parent = workerfile.read_worker_file(result["path"])
    assert parent["identity"]["pid"] == result["pid"]
    assert parent["snapshot"]["failures"] == 0
    paths = {p["path"]: p["entries"] for p in parent["phases"]}
    for i in range(workers):
        assert paths.get(f"worker{i}/inner", 0) > 0, paths
    assert parent["samples"]["rows"] > 0
    children = [p for p in result["run_dir"].glob("workers/*/w_*.json") if p != Path(result["path"])]
    assert len(children) == forks
    for path in children:
        assert workerfile.read_worker_file(path)["identity"]["fork_parent_pid"] == result["pid"]


@pytest.mark.parametrize("backend", ["proc", "psutil"])
def test_sampler_forks_from_threads_while_others_drain_sample_and_snapshot(tmp_path, backend):
    if backend == "psutil":
        pytest.importorskip("psutil")
    forks = 120
    result = run_stress(tmp_path, "sampler", forks, forkers=2, sample=0.002, backend=backend)
    assert result["running"]
    if backend == "proc":
        assert result["restarts"] >= 1  # the thread came back after the forks


def test_profiler_fork_from_a_thread_while_the_main_thread_flushes(tmp_path):
    # The default intervals: the snapshot thread and the sampler as a user gets them.
    forks = 40
    result = run_stress(tmp_path, "profiler", forks)
    check_profiler_run(result, forks, workers=0)


@pytest.mark.slow
def test_profiler_fork_stress(tmp_path):
    # Two threads fork 300 times in all while five threads open phases, one thread and the main
    # thread flush, the snapshot thread writes every 5 ms and the sampler samples every 2 ms.
    forks, workers = 300, 5
    result = run_stress(tmp_path, "profiler", forks, forkers=2, workers=workers, snapshot=0.005, sample=0.002)
    check_profiler_run(result, forks, workers)
