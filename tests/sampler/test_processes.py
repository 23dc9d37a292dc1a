"""Fork and spawn children sample themselves; a parent is not billed for a reaped child's I/O."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path

import pytest

try:
    from lp_installed import START_METHODS, start_method
except ImportError:  # a spawn or forkserver child importing this module for its target: no conftest
    START_METHODS, start_method = [], None  # type: ignore[assignment]

from lineprofiler.accounting import _sampling_testing, sampling
from lineprofiler.report.compute.blocks.resources import reduce_io
from lineprofiler.runfiles.samplefile import FLAG_SEGMENT_START, read_samples

from .conftest import fork_warnings, threads_now, wait_for_stat

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

N = 4 << 20
SLACK = 64 << 10


def _write_fsync(path, n=N):
    # Module-level (not the helpers fixture): spawned children call it, and have no fixtures.
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"\xa5" * n)
        os.fsync(fd)
    finally:
        os.close(fd)


def _doc(pid=None, uuid="0badcafe"):
    return {"identity": {"run_id": "p", "pid": pid or os.getpid(), "uuid": uuid, "host": "h", "role": "w"}}


def _child_sample_file(run_dir: Path, pid: int) -> Path:
    found = list((run_dir / "workers" / "h").glob(f"w_p_{pid}_*.samples"))
    assert len(found) == 1, found
    return found[0]


def test_forked_child_samples_itself_and_the_parent_is_not_billed(disk_dir, helpers):
    run_dir = disk_dir / "run"
    threads_before = helpers.threads_now()
    s = sampling.ResourceSampler(run_dir, interval_s=0.02)
    s.start()
    parent_tid = s.stats()["thread_tid"]
    s._impl.drain()
    s._impl.sample()
    read_end, write_end = os.pipe()
    forked_ns = time.monotonic_ns()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.before_fork()
        # Joined and gone from the thread group: as far as the sampler goes, the fork is
        # single-threaded.
        sampler_gone = not os.path.exists(f"/proc/self/task/{parent_tid}")
        pid = os.fork()
        if pid == 0:  # the child: must never return into pytest
            code = 1
            try:
                restarted = time.monotonic()
                s.after_fork_child()
                os.close(read_end)
                stats = s.stats()
                stats["took_s"] = time.monotonic() - restarted
                time.sleep(0.05)
                _write_fsync(disk_dir / "child.bin")
                doc = _doc()
                s.stop()
                s.contribute(doc)
                with os.fdopen(write_end, "w") as out:
                    json.dump({"stats": stats, "samples": doc["samples"]}, out)
                code = 0
            finally:
                os._exit(code)
        s.after_fork_parent()
    os.close(write_end)
    with os.fdopen(read_end) as inp:
        child = json.load(inp)
    time.sleep(0.05)
    s._impl.sample()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    s._impl.sample()  # the kernel has now folded the child's counters into ours
    time.sleep(0.05)
    s._impl.sample()
    parent_rows = helpers.table_of(s._impl.columns, s._impl.drain())
    parent_io = reduce_io(parent_rows)
    assert s.running and s.stats()["restarts"] == 1
    # The restarted thread ticks on its own again (on 3.13+ it restarted at the first call).
    # A loaded machine runs the thread seldom: wait for its ticks, not for a time.
    ticks = s.stats()["ticks"]
    assert wait_for_stat(s, "ticks", ticks + 2)["ticks"] >= ticks + 2
    s.close()

    assert sampler_gone
    assert not helpers.fork_warnings(caught, threads_before)
    assert child["stats"]["running"] and child["stats"]["pid"] == pid
    assert child["stats"]["thread_tid"] not in (0, parent_tid)
    # An empty ring, then its own first row, and no more unless the child was held up (a loaded
    # machine) long enough for its new thread to tick.
    assert 1 <= child["stats"]["rows_total"] <= 1 + int(child["stats"]["took_s"] / 0.02)
    table = read_samples(_child_sample_file(run_dir, pid))
    assert table.pid == pid
    assert table.column("flags")[0] == FLAG_SEGMENT_START
    assert min(table.column("t_ns")) > forked_ns  # none of the parent's rows came along
    io = reduce_io(table)
    assert N <= io.totals["write_bytes"] <= N + SLACK
    # The parent's raw counters jumped by the child's bytes when it reaped it...
    wb = parent_rows.column("write_bytes")
    assert wb[-1] - wb[0] >= N
    # ...in exactly one interval, which is dropped: the child's bytes are the child's.
    assert parent_io.counts.reaped == 1
    assert parent_io.totals["write_bytes"] < N // 2


def _mp_worker(run_dir: str, payload: str) -> None:
    # spawn: a fresh interpreter that builds its own sampler, as Profiler(role=...) would.
    s = sampling.ResourceSampler(run_dir, interval_s=0.02)
    s.start()
    _write_fsync(payload)
    s.stop()
    s.contribute(_doc())
    s.close()


def _sampler_of(profiler) -> sampling.ResourceSampler:
    (sampler,) = [a for a in profiler._attachments if isinstance(a, sampling.ResourceSampler)]
    return sampler


def _mp_forked_worker(payload: str) -> None:
    # fork: the profiler came from the parent, and its process hooks restarted its sampler here.
    profiler = _FORKED["profiler"]
    assert _sampler_of(profiler).running
    _write_fsync(payload)
    profiler.close()  # the final snapshot appends the child's rows to the child's own sample file


_FORKED: dict = {}


@pytest.mark.parametrize("method", START_METHODS)
def test_multiprocessing_children_sample_themselves(disk_dir, method, monkeypatch):
    run_dir = disk_dir / "run"
    threads_before = threads_now()
    ctx = multiprocessing.get_context(start_method(method))
    if ctx.get_start_method() in ("spawn", "forkserver"):
        procs = [ctx.Process(target=_mp_worker, args=(str(run_dir), str(disk_dir / f"p{i}.bin"))) for i in range(2)]
        parent = None
    else:
        # The real path: a profiler attaches the sampler and carries it across fork.
        from lineprofiler.accounting import Profiler

        monkeypatch.setenv("LINEPROFILER_HOST", "h")
        monkeypatch.setenv("LINEPROFILER_RUN_ID", "p")
        parent = Profiler(run_dir, role="w", snapshot_interval_s=None, sample_interval_s=0.02)
        _FORKED["profiler"] = parent
        procs = [ctx.Process(target=_mp_forked_worker, args=(str(disk_dir / f"p{i}.bin"),)) for i in range(2)]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for p in procs:
                p.start()
            for p in procs:
                p.join(60)
        assert [p.exitcode for p in procs] == [0, 0]
        assert not fork_warnings(caught, threads_before)
        for p in procs:
            io = reduce_io(read_samples(_child_sample_file(run_dir, p.pid)))
            assert N <= io.totals["write_bytes"] <= N + SLACK
        if parent is not None:
            assert _sampler_of(parent).running
    finally:
        _FORKED.clear()
        if parent is not None:
            parent.close()


def test_spawned_child_inherits_the_seam_through_the_environment(tmp_path, helpers, monkeypatch):
    """LINEPROFILER_TEST_PROC_DIR reaches a spawned child (through _sampling_testing, which the test
    module that holds its target imports): its rows come from the seam files."""
    seam = tmp_path / "proc"
    seam.mkdir()
    helpers.overwrite(seam / "io", helpers.io_text(rchar=1, wchar=2, read_bytes=3, write_bytes=4))
    (seam / "statm").write_text("100 25 0 0 0 0 0\n")
    helpers.overwrite(seam / "stat", helpers.stat_text(0))
    monkeypatch.setenv(_sampling_testing.PROC_DIR_ENV, str(seam))
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=_mp_seam_worker, args=(str(tmp_path / "run"),))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    table = read_samples(_child_sample_file(tmp_path / "run", p.pid))
    assert set(table.column("write_bytes")) == {4}
    assert set(table.column("rss_bytes")) == {25 * os.sysconf("SC_PAGE_SIZE")}


def _mp_seam_worker(run_dir: str) -> None:
    s = sampling.ResourceSampler(run_dir, interval_s=0.02)
    s.start()
    time.sleep(0.05)
    s.stop()
    s.contribute(_doc())
    s.close()


def test_fork_with_the_sampler_stopped_keeps_it_stopped(tmp_path):
    s = sampling.ResourceSampler(tmp_path, interval_s=0.02)
    s.start()
    s.stop()
    s.before_fork()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            s.after_fork_child()
            code = 0 if not s.running and s.stats()["rows_total"] == 0 else 3
        finally:
            os._exit(code)
    s.after_fork_parent()
    assert not s.running
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    s.close()


def test_sampler_thread_does_not_keep_the_interpreter_alive(tmp_path):
    """A started, never-stopped sampler: the process still exits promptly and cleanly."""
    import subprocess

    code = (
        "from lineprofiler.accounting.sampling import ResourceSampler\n"
        f"s = ResourceSampler({str(tmp_path)!r}, interval_s=0.01)\n"
        "s.start()\n"
        "import time; time.sleep(0.05)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("source", ["proc", "psutil"])
def test_interleaved_forks_restart_the_sampler_only_after_the_last(tmp_path, source):
    # Two threads forking: one's whole fork (its hooks and fork()) can run between the other's
    # before-hook and its fork(). The first parent hook must leave the sampler stopped, or the
    # second fork would find its thread running.
    if source == "psutil":
        pytest.importorskip("psutil")
    s = sampling.ResourceSampler(tmp_path, interval_s=0.02, source=source)
    s.start()

    def thread_alive() -> bool:
        s.stats()  # a method call: where 3.13+ makes the restart it deferred
        impl = s._impl
        return impl.stats()["thread_tid"] != 0 if source == "proc" else impl._thread is not None

    assert thread_alive()
    s.before_fork()  # thread Y's hook
    s.before_fork()  # thread X's hook, then X's fork() ...
    s.after_fork_parent()  # ... and X's parent hook
    assert not thread_alive()  # Y has yet to fork
    s.after_fork_parent()  # Y forked; its parent hook is the last
    assert thread_alive()
    s.close()
