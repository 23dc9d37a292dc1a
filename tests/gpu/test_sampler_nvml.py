"""The native sampler's NVML reads: one per interval, never two in a row that NVML cannot answer.

NVML's per-process answer is the mean of the samples its driver took since the previous read.
A read a few milliseconds after another (a snapshot's row just before a tick) finds none for the
pid, which the report would count as a measured zero: on a real H200 that pulled a run's "this
run" share from 99 % to 90 %. Such a row says "not measured" and leaves NVML alone. The stub
counts its calls, so the test sees which rows asked.
"""

from __future__ import annotations

import array
import time

from lineprofiler.accounting import _sampler


def rows(sampler: _sampler.Sampler) -> list[tuple[int, ...]]:
    data = array.array("q")
    data.frombytes(sampler.drain())
    width = len(sampler.columns)
    return [tuple(data[i : i + width]) for i in range(0, len(data), width)]


def test_a_row_soon_after_a_read_does_not_ask_nvml(make_shim):
    shim = make_shim()
    shim.stub.lpstub_set_device_count(1)
    shim.stub.lpstub_set_busy(0, 70, 0)
    shim.stub.lpstub_set_steady(0, 0, 55)
    sampler = _sampler.Sampler(interval_s=30.0)  # the thread's own ticks stay out of the way
    sampler.start()
    try:
        assert sampler.columns[-2:] == ("gpu0_busy", "gpu0_mine")
        calls = shim.stub.lpstub_proc_calls(0)
        for _ in range(3):
            assert sampler.sample()  # out-of-schedule rows, microseconds after the first
        stats = sampler.stats()
        assert shim.stub.lpstub_proc_calls(0) == calls  # NVML was not asked again
    finally:
        sampler.stop()
    taken = rows(sampler)
    assert [row[-2:] for row in taken[-3:]] == [(-1, -2)] * 3  # busy and this pid: not measured
    assert [row[-2:] for row in taken[:-3]] == [(70, 55)] * (len(taken) - 3)
    assert stats["gpu_reads"] == len(taken) - 3 >= 1
    assert stats["gpu_reads_skipped"] == 3


def test_rows_half_an_interval_apart_all_read_nvml(make_shim):
    shim = make_shim()
    shim.stub.lpstub_set_device_count(1)
    shim.stub.lpstub_set_busy(0, 40, 0)
    shim.stub.lpstub_set_steady(0, 0, 25)
    sampler = _sampler.Sampler(interval_s=0.02)
    sampler.start()
    try:
        deadline = time.monotonic() + 30
        while sampler.stats()["gpu_reads"] < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        sampler.stop()
    taken = rows(sampler)
    stats = sampler.stats()
    read = [row for row in taken if row[-2:] == (40, 25)]
    assert len(read) == stats["gpu_reads"] >= 5
    # Any row that skipped came within 10 ms of a read (the thread's ticks are 20 ms apart).
    times = [row[0] for row in taken]
    for k, row in enumerate(taken):
        if row[-2:] != (40, 25):
            assert row[-2:] == (-1, -2) and k > 0 and times[k] - times[k - 1] < 10_000_000
    assert stats["gpu_reads"] + stats["gpu_reads_skipped"] == len(taken)


FORK_SCRIPT = """
import ctypes, os, sys, time
from lineprofiler.accounting import Profiler
from lineprofiler.accounting.sampling import ResourceSampler

stub = ctypes.CDLL(os.environ["LINEPROFILER_NVML_LIBRARY"])
stub.lpstub_set_device_count(1)
stub.lpstub_set_busy(0, 80, 0)
stub.lpstub_set_steady(0, 0, 45)
profiler = Profiler(run_dir=RUN_DIR, role="parent", sample_interval_s=0.05, snapshot_interval_s=None)
(sampler,) = [a for a in profiler._attachments if isinstance(a, ResourceSampler)]
with profiler.phase("before"):
    pid = os.fork()
if pid == 0:
    with profiler.phase("child"):
        deadline = time.monotonic() + 30
        while sampler.stats()["gpu_reads"] < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    profiler.close()
    os._exit(0)
_, status = os.waitpid(pid, 0)
deadline = time.monotonic() + 30
start = sampler.stats()["gpu_reads"]
while sampler.stats()["gpu_reads"] < start + 3 and time.monotonic() < deadline:
    time.sleep(0.02)
profiler.close()
print(os.waitstatus_to_exitcode(status), stub.lpstub_init_calls(), stub.lpstub_shutdown_calls())
"""


def test_a_forked_child_opens_nvml_again_and_leaves_the_parents_alone(tmp_path, nvml_build, run_python):
    # On a real driver, nvmlShutdown in a forked child on the parent's state killed the child
    # (SIGSEGV) and broke the parent's NVML; the stub aborts there instead.
    run_dir = tmp_path / "run"
    out = run_python(
        FORK_SCRIPT.replace("RUN_DIR", repr(str(run_dir))),
        env={"LINEPROFILER_NVML_LIBRARY": str(nvml_build / "libnvml_stub.so")},
    )
    exit_code, init_calls, shutdown_calls = map(int, out.split())
    assert exit_code == 0
    # Parent: the capability probe's init and shutdown, the sampler's init and, at close, its
    # shutdown; the child's own init and shutdown are in its copy of the counters, not here.
    assert shutdown_calls == init_calls
    from lineprofiler.runfiles import samplefile, workerfile

    documents = [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]
    assert len(documents) == 2
    for document in documents:
        gpu = document["samples"]["gpu"]
        assert gpu["devices"] == 1 and gpu["reads"] >= 3, gpu
        path = workerfile.find_worker_files(run_dir)[0].parent / document["samples"]["file"]
        table = samplefile.read_samples(path)
        busy = table.column("gpu0_busy")
        assert {busy[k] for k in range(table.rows)} <= {80, -1} and busy.count(80) == gpu["reads"]
