"""ResourceSampler, the profiler's attachment: snapshots, failed writes, stop, fork on psutil."""

from __future__ import annotations

import os
import time
import warnings

import pytest

from lineprofiler.accounting import sampling
from lineprofiler.report.compute.blocks.resources import reduce_io
from lineprofiler.runfiles.samplefile import read_samples


def _doc(uuid="5eed5eed"):
    return {"identity": {"run_id": "s", "pid": os.getpid(), "uuid": uuid, "host": "h", "role": "r"}}


def test_stop_takes_a_last_row_so_the_final_snapshot_reaches_the_end(tmp_path):
    s = sampling.ResourceSampler(tmp_path, interval_s=3600.0)
    s.start()
    time.sleep(0.05)
    before_stop = time.monotonic_ns()
    s.stop()
    doc = _doc()
    s.contribute(doc)
    s.close()
    table = read_samples(tmp_path / "workers" / "h" / doc["samples"]["file"])
    assert table.rows == 2  # the start row and the stop row: the thread never ticked
    assert table.column("t_ns")[-1] >= before_stop


def test_failed_sidecar_write_keeps_the_rows_and_retries(tmp_path):
    s = sampling.ResourceSampler(tmp_path, interval_s=3600.0)
    s.start()
    blocker = tmp_path / "workers"
    blocker.write_text("a file where the workers folder should be")
    doc = _doc()
    s.contribute(doc)
    assert doc["samples"]["write_failures"] == 1 and doc["samples"]["file"] is None
    assert doc["samples"]["pending_rows"] == 2 and "workers" in doc["samples"]["last_write_error"]
    blocker.unlink()
    s.contribute(doc)
    s.close()
    samples = doc["samples"]
    assert samples["pending_rows"] == 0 and samples["rows"] == 3
    assert read_samples(tmp_path / "workers" / "h" / samples["file"]).rows == 3


def test_rows_held_back_are_bounded_by_the_capacity(tmp_path):
    s = sampling.ResourceSampler(tmp_path, interval_s=3600.0, capacity=4)
    s.start()
    (tmp_path / "workers").write_text("blocked")
    doc = _doc()
    for _ in range(5):
        s._impl.sample()
        s._impl.sample()
        s.contribute(doc)
    s.close()
    assert doc["samples"]["pending_rows"] == 4
    assert doc["samples"]["overwritten"] == 1 + 10 + 5 - 4  # start row, samples, snapshot rows


def test_without_a_place_to_write_the_reason_says_so():
    s = sampling.ResourceSampler(None, interval_s=3600.0)
    s.start()
    doc = _doc()
    s.contribute(doc)
    s.close()
    assert doc["samples"]["file"] is None
    assert "no run directory" in doc["samples"]["unavailable_reason"]


def test_contribute_with_the_worker_file_path(tmp_path):
    s = sampling.ResourceSampler(interval_s=3600.0)
    s.start()
    doc = _doc()
    s.contribute(doc, path=tmp_path / "w_x_1_00000000.json")
    s.close()
    assert doc["samples"]["file"] == "w_x_1_00000000.samples"
    assert (tmp_path / "w_x_1_00000000.samples").exists()


def test_bad_arguments_raise_and_the_environment_never_does(tmp_path):
    wrong = ({"source": "gpu"}, {"backend": "gpu"}, {"interval_s": 0}, {"interval_s": True}, {"capacity": 1},
             {"capacity": 2.5})
    for kwargs in wrong:
        with pytest.raises(ValueError):
            sampling.ResourceSampler(tmp_path, **kwargs)
    # The keyword's former name still chooses the source.
    assert sampling.ResourceSampler(tmp_path, backend="off").source is None
    s = sampling.ResourceSampler(tmp_path / "does" / "not" / "exist" / "yet")
    s.start()
    s.stop()
    s.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="psutil's Linux counters")
def test_psutil_source_across_fork(tmp_path, disk_dir, helpers):
    pytest.importorskip("psutil")
    threads_before = helpers.threads_now()
    s = sampling.ResourceSampler(tmp_path, interval_s=0.02, source="psutil")
    s.start()
    r, w = os.pipe()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.before_fork()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                s.after_fork_child()
                helpers.write_fsync(disk_dir / "c.bin", 1 << 20)
                s.stop()
                s.contribute(_doc())
                code = 0 if s.stats()["pid"] == os.getpid() else 2
            finally:
                os._exit(code)
        s.after_fork_parent()
    os.close(r)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert s.running
    assert not helpers.fork_warnings(caught, threads_before)
    s.close()
    files = list((tmp_path / "workers" / "h").glob(f"w_s_{pid}_*.samples"))
    assert len(files) == 1
    io = reduce_io(read_samples(files[0]))
    assert (1 << 20) <= io.totals["write_bytes"] <= (1 << 20) + (64 << 10)
