"""The sampler sees real I/O, in both layers: fsync'd writes, warm rereads, cold reads.

Disk-layer figures are exact to the page: write_bytes is charged per page dirtied and
read_bytes per page the block layer read, so a page-aligned N-byte file moves exactly N
(the bounds below allow 64 KiB for a metadata block or readahead past what we asked).
"""

from __future__ import annotations

import os

import pytest

from lineprofiler.accounting import sampling
from lineprofiler.report.compute.blocks.resources import reduce_io
from lineprofiler.runfiles.samplefile import read_samples

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

N = 8 << 20
SLACK = 64 << 10


def own_read_slack(sampler):
    """The psutil source bills its own /proc reads to the row after the one they moved, so a
    measured window can come out short by about one tick's reads (a few hundred bytes) when the
    thread ticked inside it; the native sampler counts its reads exactly."""
    return 1024 if sampler.source == "psutil" else 0


def _measure(sampler, helpers, action):
    """Net I/O the sampler saw across ``action``, from the rows it took (markers before and
    after, plus whatever its thread took in between)."""
    impl = sampler._impl
    impl.drain()
    impl.sample()
    action()
    impl.sample()
    return reduce_io(helpers.table_of(impl.columns, impl.drain()))


def _read_all(path, *, cold=False):
    fd = os.open(path, os.O_RDONLY)
    try:
        if cold:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


@pytest.fixture(params=["proc", "psutil"])
def sampler(request):
    if request.param == "psutil":
        pytest.importorskip("psutil")
    s = sampling.ResourceSampler(source=request.param, interval_s=0.02)
    assert s.source == request.param, s.unavailable_reason
    s.start()
    yield s
    s.close()


def test_fsync_write_lands_on_the_disk_layer(disk_dir, helpers, sampler):
    io = _measure(sampler, helpers, lambda: helpers.write_fsync(disk_dir / "data.bin", N))
    assert N <= io.totals["write_bytes"] <= N + SLACK
    assert N <= io.totals["wchar"] <= N + SLACK
    assert io.totals["read_bytes"] <= SLACK  # creating the file may read a directory block
    assert io.counts.dropped == 0


def test_warm_reread_is_page_cache_only(disk_dir, helpers, sampler):
    path = disk_dir / "warm.bin"
    helpers.write_fsync(path, N)
    _read_all(path)  # make sure every page is resident
    io = _measure(sampler, helpers, lambda: _read_all(path))
    assert io.totals["read_bytes"] == 0
    assert N - own_read_slack(sampler) <= io.totals["rchar"] <= N + SLACK  # all served by RAM


def test_cold_read_reaches_the_disk(disk_dir, helpers, sampler):
    path = disk_dir / "cold.bin"
    helpers.write_fsync(path, N)
    io = _measure(sampler, helpers, lambda: _read_all(path, cold=True))
    assert N <= io.totals["read_bytes"] <= N + SLACK
    assert N - own_read_slack(sampler) <= io.totals["rchar"] <= N + SLACK
    assert io.totals["rchar"] - io.totals["read_bytes"] <= SLACK  # nothing from the cache


def test_end_to_end_through_the_sample_file(disk_dir, helpers):
    """start -> real writes -> contribute (sidecar) -> read back -> the same bytes, with the
    profiler's own sidecar writes excluded."""
    run_dir = disk_dir / "run"
    doc = {"identity": {"run_id": "t", "pid": os.getpid(), "uuid": "0123abcd", "host": "h", "role": "r"}}
    s = sampling.ResourceSampler(run_dir, interval_s=0.02)
    s.start()
    s.contribute(doc)  # the first snapshot: the header and a row or two
    first = read_samples(run_dir / "workers" / "h" / doc["samples"]["file"]).rows
    helpers.write_fsync(disk_dir / "payload.bin", N)
    s.stop()
    s.contribute(doc)
    s.close()
    samples = doc["samples"]
    table = read_samples(run_dir / "workers" / "h" / samples["file"])
    assert table.rows == samples["rows"] > first
    assert samples["bytes"] == (run_dir / "workers" / "h" / samples["file"]).stat().st_size
    io = reduce_io(table)
    assert N <= io.totals["write_bytes"] <= N + SLACK
    assert samples["own_io_excluded"]["wchar"] > 0  # the sidecar appends were measured...
    assert io.own["wchar"] > 0  # ...and taken out of the rows' totals
    assert samples["dropped_intervals"] == io.counts.dropped == 0
    assert samples["unavailable_reason"] is None
