"""The native sampler (_sampler.Sampler): rows, the ring, the /proc seam, flags, the capsule."""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time

import pytest

from lineprofiler.accounting import _sampler
from lineprofiler.report.compute.blocks.resources import reduce_io
from lineprofiler.runfiles.samplefile import (
    FLAG_CHILD_REAPED,
    FLAG_REAP_UNKNOWN,
    FLAG_SEGMENT_START,
    NATIVE_COLUMNS,
    interval_mask,
)

from .conftest import wait_for_stat

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the native sampler reads /proc")

NEVER = 3600.0  # an interval the thread never reaches in a test: rows come from sample() alone


def test_flags_match_the_reader():
    # samplefile repeats the C's flag values so the report need not import C: keep them equal.
    assert (_sampler.FLAG_SEGMENT_START, _sampler.FLAG_CHILD_REAPED, _sampler.FLAG_REAP_UNKNOWN) == (
        FLAG_SEGMENT_START,
        FLAG_CHILD_REAPED,
        FLAG_REAP_UNKNOWN,
    )
    assert _sampler.Sampler().columns == NATIVE_COLUMNS


@pytest.mark.parametrize(
    "kwargs",
    [{"interval_s": 0.0}, {"interval_s": -1.0}, {"interval_s": float("nan")}, {"capacity": 1}, {"capacity": 1 << 30}],
)
def test_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        _sampler.Sampler(**kwargs)


def test_rows_are_real_readings(helpers):
    s = _sampler.Sampler(NEVER, 16)
    s.start()
    s.sample()
    t = helpers.table_of(s.columns, s.drain())
    s.close()
    assert t.rows == 2
    assert t.column("flags").tolist() == [FLAG_SEGMENT_START, 0]
    now = time.monotonic_ns()
    assert all(0 < v <= now for v in t.column("t_ns"))
    assert t.column("t_ns")[1] > t.column("t_ns")[0]
    with open("/proc/self/statm") as handle:
        rss_pages = int(handle.read().split()[1])
    assert abs(t.column("rss_bytes")[1] - rss_pages * os.sysconf("SC_PAGE_SIZE")) < 64 * 1024 * 1024
    assert min(t.column("rchar")) > 0
    assert t.column("phase").tolist() == [-1, -1]  # no phase is open in the main thread


def test_the_sampler_does_not_bill_its_own_reads(helpers):
    # Its /proc reads add to rchar; they go to own_rchar too, so the user's net reads stay 0.
    s = _sampler.Sampler(0.01, 256)
    s.start()  # one row
    wait_for_stat(s, "ticks", 5)
    s.stop()
    t = helpers.table_of(s.columns, s.drain())
    s.close()
    assert t.rows >= 5
    own = t.column("own_rchar")
    assert own[-1] - own[0] >= 100 * (t.rows - 1)  # each tick reads three small files
    assert reduce_io(t).totals["rchar"] == 0


def test_thread_ticks_on_its_own_and_records_its_cpu_time(helpers):
    s = _sampler.Sampler(0.01, 1024)
    s.start()  # the start row: the one tick not the thread's
    stats = wait_for_stat(s, "ticks", 6)
    s.stop()
    assert stats["running"] and stats["ticks"] >= 6 and stats["thread_tid"] > 0
    assert stats["thread_cpu_ns"] > 0
    assert s.stats()["thread_cpu_ns"] >= stats["thread_cpu_ns"]
    assert not s.running and s.stats()["thread_tid"] == 0
    s.close()


def test_thread_blocks_every_signal():
    # Signals must go to the threads that expect them, never to the sampler.
    s = _sampler.Sampler(0.05, 16)
    s.start()
    try:
        tid = s.stats()["thread_tid"]
        deadline = time.monotonic() + 30
        while tid == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
            tid = s.stats()["thread_tid"]
        with open(f"/proc/self/task/{tid}/status") as handle:
            blocked = next(line.split()[1] for line in handle if line.startswith("SigBlk:"))
        # SIGKILL and SIGSTOP cannot be blocked; every other standard signal is.
        mask = int(blocked, 16)
        for sig in (2, 1, 10, 12, 14, 15, 17):
            assert mask & (1 << (sig - 1)), f"signal {sig} not blocked in the sampler thread"
    finally:
        s.close()


def test_ring_overwrite_is_counted_and_keeps_the_newest(helpers):
    s = _sampler.Sampler(NEVER, 4)
    s.start()  # one row
    for _ in range(10):
        s.sample()
    stats = s.stats()
    t = helpers.table_of(s.columns, s.drain())
    assert stats["rows_total"] == 11 and stats["overwritten"] == 7
    assert t.rows == 4
    times = t.column("t_ns").tolist()
    assert times == sorted(times)
    s.sample()
    t2 = helpers.table_of(s.columns, s.drain())
    assert t2.rows == 1 and t2.column("t_ns")[0] > times[-1]
    s.close()


def test_drain_before_start_and_after_close_is_empty():
    s = _sampler.Sampler()
    assert s.drain() == b"" and s.sample() is False
    s.close()
    assert s.drain() == b"" and s.sample() is False
    with pytest.raises(ValueError):
        s.start()


def test_missing_proc_file_gives_no_measurement_never_zero(tmp_path, helpers):
    s = _sampler.Sampler(NEVER, 16, io_path=tmp_path / "absent")
    s.start()
    s.sample()
    s.sample()
    t = helpers.table_of(s.columns, s.drain())
    stats = s.stats()
    s.close()
    assert set(t.column("rchar")) == {-1} and set(t.column("write_bytes")) == {-1}
    assert min(t.column("rss_bytes")) > 0  # the other files still work
    assert stats["failed_io"] == 3 and "absent" in stats["io_reason"]
    _, counts = interval_mask(t.column("rchar"), t.column("flags"))
    assert counts.valid == 0 and counts.failed == 2


def test_io_path_that_cannot_be_read_though_it_opens(tmp_path, helpers):
    # A directory opens fine and fails on every read (EISDIR).
    s = _sampler.Sampler(NEVER, 16, io_path=tmp_path)
    s.start()
    s.sample()
    t = helpers.table_of(s.columns, s.drain())
    stats = s.stats()
    s.close()
    assert stats["io_reason"] is None and stats["failed_io"] == 2
    assert set(t.column("rchar")) == {-1}


@pytest.mark.parametrize("bad", ["garbage", "empty", "truncated"])
def test_unreadable_io_file_drops_intervals_and_fabricates_nothing(tmp_path, helpers, bad):
    """Counters jump by a terabyte across the failed reads: none of it may be billed."""
    io = tmp_path / "io"
    stat = tmp_path / "stat"
    helpers.overwrite(stat, helpers.stat_text(7))
    helpers.overwrite(io, helpers.io_text(rchar=100, wchar=10, read_bytes=0, write_bytes=4096))
    s = _sampler.Sampler(NEVER, 64, io_path=io, stat_path=stat)
    s.start()  # row 0: the baseline
    helpers.overwrite(io, helpers.io_text(rchar=300, wchar=20, read_bytes=0, write_bytes=8192))
    s.sample()  # row 1: +200 rchar, +10 wchar, +4096 write_bytes
    if bad == "garbage":
        helpers.overwrite(io, "rchar: lots\nwchar: ???\n")
    elif bad == "empty":
        helpers.overwrite(io, "")
    else:
        helpers.overwrite(io, helpers.io_text(rchar=5)[:40])  # cut before write_bytes
    s.sample()  # row 2: unreadable
    s.sample()  # row 3: unreadable
    tera = 10**12
    helpers.overwrite(io, helpers.io_text(rchar=tera, wchar=tera, read_bytes=tera, write_bytes=tera))
    s.sample()  # row 4: readable again, counters far ahead
    helpers.overwrite(io, helpers.io_text(rchar=tera + 50, wchar=tera + 5, read_bytes=tera, write_bytes=tera + 4096))
    s.sample()  # row 5: +50 rchar, +5 wchar, +4096 write_bytes
    t = helpers.table_of(s.columns, s.drain())
    stats = s.stats()
    s.close()
    assert t.column("rchar").tolist()[2:4] == [-1, -1]
    assert stats["failed_io"] == 2
    res = reduce_io(t)
    assert res.counts.valid == 2 and res.counts.failed == 3 and res.counts.dropped == 3
    own_r = t.column("own_rchar").tolist()
    # Process-wide once _phases is loaded (earlier tests' snapshots count), but it only grows.
    assert own_r == sorted(own_r) and own_r[0] >= 0
    # The seam files are read like /proc: the sampler bills those reads to itself.
    assert res.totals["wchar"] == 15
    assert res.totals["write_bytes"] == 8192
    assert res.totals["read_bytes"] == 0
    assert res.totals["rchar"] == 250 - (res.own["rchar"])


def test_reaped_child_fingerprint_marks_the_interval(tmp_path, helpers):
    io, stat = tmp_path / "io", tmp_path / "stat"
    helpers.overwrite(io, helpers.io_text(rchar=1000))
    helpers.overwrite(stat, helpers.stat_text(10))
    s = _sampler.Sampler(NEVER, 64, io_path=io, stat_path=stat)
    s.start()
    helpers.overwrite(io, helpers.io_text(rchar=2000))
    s.sample()  # +1000, nothing reaped
    helpers.overwrite(io, helpers.io_text(rchar=10**9, write_bytes=10**9))
    helpers.overwrite(stat, helpers.stat_text(500))  # a child was reaped: its bytes arrive here
    s.sample()
    helpers.overwrite(stat, "garbage without a parenthesis")
    s.sample()  # reaping cannot be checked
    helpers.overwrite(stat, helpers.stat_text(500))
    helpers.overwrite(io, helpers.io_text(rchar=10**9 + 7, write_bytes=10**9))
    s.sample()  # the row before could not check: unknown again
    helpers.overwrite(io, helpers.io_text(rchar=10**9 + 9, write_bytes=10**9))
    s.sample()  # +2
    t = helpers.table_of(s.columns, s.drain())
    s.close()
    assert t.column("flags").tolist() == [
        FLAG_SEGMENT_START, 0, FLAG_CHILD_REAPED, FLAG_REAP_UNKNOWN, FLAG_REAP_UNKNOWN, 0
    ]
    res = reduce_io(t)
    assert res.counts.reaped == 1 and res.counts.unknown == 2 and res.counts.valid == 2
    assert res.totals["write_bytes"] == 0
    assert res.totals["rchar"] + res.own["rchar"] == 1000 + 2


def test_restart_starts_a_segment(helpers):
    s = _sampler.Sampler(NEVER, 16)
    s.start()
    s.sample()
    s.stop()
    s.start()
    s.sample()
    t = helpers.table_of(s.columns, s.drain())
    s.close()
    assert t.column("flags").tolist() == [FLAG_SEGMENT_START, 0, FLAG_SEGMENT_START, 0]
    _, counts = interval_mask(t.column("rchar"), t.column("flags"))
    assert counts.gaps == 1 and counts.valid == 2 and counts.dropped == 0


def test_thread_io_reads_this_thread():
    before = _sampler.thread_io()
    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.write(fd, b"x" * 12345)
    finally:
        os.close(fd)
    after = _sampler.thread_io()
    assert before is not None and after is not None
    assert after[1] - before[1] == 12345  # wchar: exactly this thread's write
    assert after[5] > 50  # the length of the text it read


class _CapsuleApi(ctypes.Structure):
    """The capsule's struct as _phases_capi.h declares it, to read and (briefly) edit its version."""

    _fields_ = [("version", ctypes.c_int), ("main_thread_phase", ctypes.c_void_p), ("own_io", ctypes.c_void_p)]


def _real_capsule_api():
    from lineprofiler.accounting import _phases

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return _CapsuleApi.from_address(get(_phases._C_API, b"lineprofiler.accounting._phases._C_API"))


@pytest.fixture
def primary_recorder():
    """A real _phases recorder, made primary: its main-thread phase is what the capsule publishes."""
    from lineprofiler.accounting import _phases

    rec = _phases.Recorder(measure_cpu=False)
    rec.make_primary()
    yield rec
    del rec
    gc.collect()


def test_phase_and_own_io_come_from_the_real_phases_capsule(primary_recorder, helpers):
    from lineprofiler.accounting import _phases

    rec = primary_recorder
    s = _sampler.Sampler(NEVER, 16)
    s.start()  # row 0: no phase open
    with rec.phase("outer"):
        with rec.phase("inner"):
            s.sample()  # row 1: the main thread is in outer/inner
            inner = _phases.main_thread_phase()
        s.sample()  # row 2: back in outer
    # Another thread's phase is not the main thread's.
    worker = threading.Thread(target=lambda: (rec.phase("worker").__enter__(), s.sample()))
    worker.start()
    worker.join()  # row 3
    # The profiler's own writes, measured by _phases, reach the sampler's own_* columns.
    token = _phases.own_io_begin()
    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.write(fd, b"x" * 8192)
    finally:
        os.close(fd)
    moved = _phases.own_io_end(token)
    s.sample()  # row 4
    before = _phases.own_io()
    s.add_own_io(1, 2, 3, 4, 5)  # the sampler's own writes land in the same shared counters
    after = _phases.own_io()
    s.sample()  # row 5
    stats = s.stats()
    t = helpers.table_of(s.columns, s.drain())
    s.close()
    assert stats["phase_reason"] is None
    phases = t.column("phase").tolist()
    assert phases[0] == -1 and phases[3] == -1 and phases[5] == -1
    assert phases[1] == inner and rec.path_of(inner) == "outer/inner"
    assert rec.path_of(phases[2]) == "outer"
    assert moved is not None and moved["wchar"] == 8192
    wchar = t.column("own_wchar").tolist()
    assert wchar[4] - wchar[3] == 8192 and wchar[5] - wchar[4] == 2
    assert [after[k] - before[k] for k in ("rchar", "wchar", "read_bytes", "write_bytes")] == [1, 2, 3, 4]
    assert after["cancelled_write_bytes"] - before["cancelled_write_bytes"] == 5
    own_r = t.column("own_rchar").tolist()
    assert own_r == sorted(own_r) and own_r[-1] > own_r[0]  # the sampler's own /proc reads, and ours


def test_wrong_capsule_version_is_refused_with_a_reason():
    # The real capsule, its version changed for the length of one start (it is module state).
    api = _real_capsule_api()
    real = api.version
    api.version = 99
    try:
        s = _sampler.Sampler(NEVER, 4)
        s.start()
        reason = s.stats()["phase_reason"]
        s.sample()
        t = s.drain()
        s.close()
    finally:
        api.version = real
    assert "version 99" in reason
    assert t  # the rows are still written, with no phase


def test_a_capsule_of_another_module_or_none_is_refused_with_a_reason(monkeypatch):
    import datetime

    from lineprofiler.accounting import _phases

    # datetime's C API capsule: a real capsule, under another name.
    monkeypatch.setattr(_phases, "_C_API", datetime.datetime_CAPI)
    s = _sampler.Sampler(NEVER, 4)
    s.start()
    foreign = s.stats()["phase_reason"]
    s.close()
    monkeypatch.delattr(_phases, "_C_API")
    s = _sampler.Sampler(NEVER, 4)
    s.start()
    missing = s.stats()["phase_reason"]
    s.close()
    assert foreign == "_phases._C_API is not a lineprofiler.accounting._phases._C_API capsule"
    assert missing == "_phases exports no phase capsule (_C_API)"
