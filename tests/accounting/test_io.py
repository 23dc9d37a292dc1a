"""io=True: exact per-phase /proc/self/io deltas with real writes and reads, own I/O excluded."""

from __future__ import annotations

import os

import pytest

from lineprofiler.accounting import Profiler, _phases, _phases_testing
from lineprofiler.runfiles import workerfile

PAGE = os.sysconf("SC_PAGE_SIZE")
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")


# disk_dir (tests/conftest.py): a folder on a block-backed filesystem, where write_bytes moves.


def io_of(rec, path):
    return next(p for p in rec.snapshot()["phases"] if p["path"] == path)["io_bytes"]


WRITE_AND_FSYNC = """
import json, os, sys
from lineprofiler.accounting import _phases
n = int(sys.argv[2])
rec = _phases.Recorder(measure_cpu=False)
with rec.phase("checkpoint", io=True):
    with open(sys.argv[1], "wb") as handle:
        handle.write(os.urandom(n))
        handle.flush()
        os.fsync(handle.fileno())
print(json.dumps(next(p for p in rec.snapshot()["phases"] if p["path"] == "checkpoint")["io_bytes"]))
"""


def test_a_written_and_fsynced_file_is_charged_to_its_phase(disk_dir):
    # In a fresh interpreter: the counters are the process's, so a thread left writing by an
    # earlier test in this process (another profiler's snapshots) would be billed here too.
    import json
    import subprocess
    import sys

    n = 4 * 1024 * 1024 + 123
    result = subprocess.run(
        [sys.executable, "-c", WRITE_AND_FSYNC, str(disk_dir / "ckpt.bin"), str(n)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    io = json.loads(result.stdout)
    assert io["wchar"] == n  # bytes handed to write(): exact
    # bytes dirtied for writeback are counted in whole pages: the last, partial page rounds up,
    # and a page can be dirtied twice when a write straddles it (seen: +1 or +2 pages)
    assert n <= io["write_bytes"] <= n + 4 * PAGE
    assert io["measured_entries"] == 1 and io["failed_reads"] == 0
    assert set(io) == {
        "rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes", "measured_entries", "failed_reads"
    }


def test_warm_reads_are_page_cache_and_cold_reads_reach_the_disk(disk_dir):
    n = 2 * 1024 * 1024
    path = disk_dir / "data.bin"
    with open(path, "wb") as handle:
        handle.write(os.urandom(n))
        handle.flush()
        os.fsync(handle.fileno())
    rec = _phases.Recorder(measure_cpu=False)
    with rec.phase("warm", io=True):
        with open(path, "rb", buffering=0) as handle:
            assert len(handle.read()) == n
    warm = io_of(rec, "warm")
    assert warm["rchar"] == n  # the profiler's own /proc reads are excluded
    assert warm["read_bytes"] == 0  # served from RAM: page-cache bytes = rchar - read_bytes = n

    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # drop this file's cached pages
    finally:
        os.close(fd)
    with rec.phase("cold", io=True):
        with open(path, "rb", buffering=0) as handle:
            assert len(handle.read()) == n
    cold = io_of(rec, "cold")
    assert cold["rchar"] == n
    assert cold["read_bytes"] >= n // 2  # readahead may round up; most of it came from disk


def test_a_failed_boundary_read_records_nothing_and_is_counted(tmp_path):
    rec = _phases.Recorder(measure_cpu=False)
    with rec.phase("ok", io=True):
        pass
    try:
        _phases_testing.read_io_from(str(tmp_path / "missing"))
        with rec.phase("ok", io=True):
            with open(tmp_path / "f", "wb") as handle:
                handle.write(b"x" * 10_000)
        garbage = tmp_path / "garbage"
        garbage.write_text("rchar: 12\nnot the rest\n")
        _phases_testing.read_io_from(str(garbage))
        with rec.phase("ok", io=True):
            pass
        assert _phases.read_io() is None
    finally:
        _phases_testing.read_real_io()
    io = io_of(rec, "ok")
    assert io["measured_entries"] == 1 and io["failed_reads"] == 2
    assert io["wchar"] == 0  # never a fabricated delta
    assert _phases.read_io() is not None


def test_own_snapshot_writes_are_excluded_and_reported(tmp_path):
    n = 50_000
    profiler = Profiler(run_dir=tmp_path, role="io", snapshot_interval_s=None)
    try:
        with profiler.phase("save", io=True):
            with open(tmp_path / "payload.bin", "wb") as handle:
                handle.write(b"y" * n)
            assert profiler.flush()  # the profiler's own write, inside the phase
        assert profiler.flush()
        document = workerfile.read_worker_file(profiler.path)
    finally:
        profiler.close()
    save = next(p for p in document["phases"] if p["path"] == "save")
    assert save["io"] is True and save["io_bytes"]["wchar"] == n
    excluded = document["own_io_excluded"]
    assert set(excluded) == {"rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes"}
    assert excluded["wchar"] > 0  # the snapshots written so far
    assert document["own_io_subtracted"]["wchar"] > 0  # what was taken out of "save"
    plain = [p for p in document["phases"] if not p["io"]]
    assert all(p["io_bytes"] is None for p in plain)


def test_io_phase_inside_io_phase_does_not_bill_the_inner_reads():
    rec = _phases.Recorder(measure_cpu=False)
    with rec.phase("outer", io=True):
        for _ in range(10):
            with rec.phase("inner", io=True):
                pass
    assert io_of(rec, "outer")["rchar"] == 0
    assert io_of(rec, "outer/inner")["rchar"] == 0


SAMPLER_RACE = """
import json, os, sys
from lineprofiler.accounting import _phases
from lineprofiler.accounting.sampling import ResourceSampler
path, entries = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(path)
rec = _phases.Recorder(measure_cpu=False)
rec.make_primary()
sampler = ResourceSampler(interval_s=0.001, capacity=1 << 16, nvml=False)
sampler.start()
fd = os.open(path, os.O_RDONLY)
try:
    for _ in range(entries):
        with rec.phase("load", io=True):
            assert os.pread(fd, size, 0) == b"z" * size
finally:
    os.close(fd)
    sampler.stop()
print(json.dumps({"size": size, "io": next(p for p in rec.snapshot()["phases"] if p["path"] == "load")["io_bytes"]}))
"""


def test_the_sampler_threads_own_reads_never_land_in_a_phase(tmp_path):
    # The sampler thread reads /proc files at every tick, and the kernel counts those bytes in
    # the process's rchar as each read returns. A phase boundary that fell between a read's
    # return and its bytes reaching the own-I/O total billed them to the user's phase (seen in
    # CI: a learner's load_batch read 984 bytes more than its files held). A 1 ms sampler and
    # thousands of short io=True phases make that moment common.
    import json
    import subprocess
    import sys

    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"z" * 4096)
    entries = 20_000
    result = subprocess.run(
        [sys.executable, "-c", SAMPLER_RACE, str(payload), str(entries)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["io"]["measured_entries"] == entries and out["io"]["failed_reads"] == 0
    assert out["io"]["rchar"] == entries * out["size"]  # the payload's bytes, and not one of the sampler's


PREEMPTED_SAMPLER = """
import json, os, sys, threading
from lineprofiler.accounting import _phases, _phases_testing
path, holds = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(path)
rec = _phases.Recorder(measure_cpu=False)
rec.make_primary()
entries = 0
done = threading.Event()
held = []
def preempted_sampler():
    while not done.is_set():
        held.append(_phases_testing.hold_own_read("/proc/self/stat", 0.005))
thread = threading.Thread(target=preempted_sampler)
thread.start()
fd = os.open(path, os.O_RDONLY)
try:
    while len(held) < holds:
        with rec.phase("load", io=True):
            assert os.pread(fd, size, 0) == b"z" * size
        entries += 1
finally:
    os.close(fd)
    done.set()
    thread.join()
phase = next(p for p in rec.snapshot()["phases"] if p["path"] == "load")
print(json.dumps({"size": size, "io": phase["io_bytes"], "entries": entries}))
"""


def test_a_sampler_preempted_inside_its_own_read_is_waited_for(tmp_path):
    # A sampler thread preempted between its /proc read's return (the kernel has counted the
    # bytes) and adding them to the profiler's own I/O holds that window for a scheduler slice.
    # A boundary that gave up after a fixed number of sched_yield calls (about a millisecond)
    # billed the read to the user's phase (seen in CI under ASan: 323 bytes, one
    # /proc/self/stat). Here every own read holds its window 5 ms, 60 times over.
    import json
    import subprocess
    import sys

    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"z" * 4096)
    result = subprocess.run(
        [sys.executable, "-c", PREEMPTED_SAMPLER, str(payload), "60"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["entries"] > 60  # phases ran while the windows were open
    assert out["io"]["measured_entries"] == out["entries"] and out["io"]["failed_reads"] == 0
    assert out["io"]["rchar"] == out["entries"] * out["size"]
