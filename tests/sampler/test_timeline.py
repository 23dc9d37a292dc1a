"""The timeline's truth: processes with a known schedule of phases, one delayed by a known
offset and all outside phases for a planted span, are recovered from their .timeline files:
each phase's time within one sample period, the offset within two, and the stall."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lineprofiler.report import timeline
from lineprofiler.report.blocks import RenderOptions
from lineprofiler.report.merge import load_run

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

HZ = 50.0
PERIOD = 1 / HZ
A, B, CYCLES = 0.4, 0.2, 4
OFFSET = 0.3
STALL_FROM, STALL_LEN = 1.35, 0.4  # from t0: the first process's second cycle's B..A
#: How late a process may act on the clock (its 1 ms sleeps) on a busy machine.
JITTER = 0.01
CHILD = Path(__file__).with_name("timeline_child.py")


def _run(run_dir: Path) -> float:
    t0 = time.time() + 2.0  # both interpreters are up and profiling by then
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), str(run_dir), repr(t0), repr(offset), repr(A), repr(B), str(CYCLES),
             repr(STALL_FROM), repr(STALL_LEN), repr(HZ)]
        )
        for offset in (0.0, OFFSET)
    ]
    for p in procs:
        assert p.wait(timeout=60) == 0
    return t0


def _is_whole(start: float, state: str, offset: float) -> bool:
    """Whether an entry observed to begin at `start` (seconds from t0) is a whole scheduled one."""
    into_cycle = A if state == "B" else 0.0
    cycle = round((start - offset - into_cycle) / (A + B))
    scheduled = offset + cycle * (A + B) + into_cycle
    length = A if state == "A" else B
    misses_stall = scheduled + length <= STALL_FROM or scheduled >= STALL_FROM + STALL_LEN
    return abs(start - scheduled) <= PERIOD + JITTER and misses_stall


def test_a_known_schedule_is_recovered(tmp_path):
    t0 = _run(tmp_path)
    run = load_run(tmp_path)
    options = RenderOptions()
    procs, reasons = timeline.read_run(run, options)
    assert reasons == {} and len(procs) == 2
    procs.sort(key=lambda p: min(a for a, _, s in p.spans if s))
    starts = []
    for p, offset in zip(procs, (0.0, OFFSET), strict=True):
        assert p.period_ns == int(1e9 / HZ)
        inside = [(a / 1e9 - t0, b / 1e9 - t0, s) for a, b, s in p.spans if s]
        starts.append(inside[0][0])
        # The first entry begins at its scheduled instant, within one period (plus jitter).
        assert inside[0][2] == "A"
        assert abs(inside[0][0] - offset) <= PERIOD + JITTER
        # Every whole entry lasts its scheduled time within one period. An entry is whole when
        # it begins at a scheduled boundary and its scheduled interval misses the stall (the
        # entries cut short by the stall, or resumed after it, are partial by design).
        whole = [(a, b, s) for a, b, s in inside[1:-1] if _is_whole(a, s, offset)]
        assert len(whole) >= 3
        for a, b, s in whole:
            assert abs((b - a) - (A if s == "A" else B)) <= PERIOD + JITTER, (s, a, b)
        # The occupancy fractions: A holds A / (A + B) of the time in phases, away from the stall.
        time_a = sum(b - a for a, b, s in whole if s == "A")
        time_b = sum(b - a for a, b, s in whole if s == "B")
        n_a, n_b = sum(s == "A" for *_, s in whole), sum(s == "B" for *_, s in whole)
        assert abs(time_a / n_a - A) <= PERIOD and abs(time_b / n_b - B) <= PERIOD
    # The offset between the processes, within two periods.
    assert abs((starts[1] - starts[0]) - OFFSET) <= 2 * PERIOD
    # The planted stall: every process outside phases, found with its start and length.
    block = timeline.timeline_block(run, options)
    assert block is not None and len(block.roles) == 1
    role = block.roles[0]
    assert role.processes == 2
    assert set(role.legend.values()) == {"A", "B"}
    stall_start = (t0 + STALL_FROM) * 1e9 - run.start_ns
    planted = [s for s in role.stalls if abs(s.start_ns - stall_start) <= 2 * PERIOD * 1e9]
    assert len(planted) == 1, role.stalls
    assert abs(planted[0].length_ns / 1e9 - STALL_LEN) <= 2 * PERIOD + JITTER
    assert planted[0].phases == [""]
    # Nothing else is a stall: the processes are in phases the rest of the time.
    assert all(s.length_ns <= 2 * PERIOD * 1e9 + JITTER * 1e9 for s in role.stalls if s is not planted[0])
    assert role.skipped_ticks == 0 or role.skipped_ticks < role.ticks // 20
    # The same spans are the lanes.
    lanes = timeline.lanes(run, options)
    assert sorted(len(lane.spans) for lane in lanes) == sorted(sum(1 for *_, s in p.spans if s) for p in procs)
    assert timeline.lanes(run, RenderOptions(no_samples=True)) == []


def _rows(sampler):
    from array import array

    rows = array("q", sampler.drain_timeline())
    return [tuple(rows[i : i + 3]) for i in range(0, len(rows), 3)]


def test_threads_that_start_and_end_and_the_overflow_node():
    import threading

    from lineprofiler.accounting import _phases, _sampler

    rec = _phases.Recorder(max_paths=4)
    rec.start()
    rec.make_primary()
    s = _sampler.Sampler(3600.0, 16, timeline_hz=100, nvml=False)
    s.start()
    seen = threading.Event()

    def worker():
        with rec.phase("w"):
            seen.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    with rec.phase("a"):
        for name in ("b", "c", "d", "e", "f"):
            rec.phase(name).__enter__()  # past the path cap: the overflow node
        time.sleep(0.1)
        seen.set()
        t.join()
        time.sleep(0.1)
        for _ in range(5):
            rec.phase("x").__exit__(None, None, None)
    rows = _rows(s)
    stats = s.stats()
    s.close()
    tids = {tid for _, tid, _ in rows}
    worker_rows = [r for r in rows if r[1] not in (os.getpid(), 0, -1)]
    assert worker_rows and {rec.path_of(p) for *_, p in worker_rows} == {"w"}
    # The thread is gone after it ended: its last row comes before the main thread's last.
    assert max(t for t, *_ in worker_rows) < max(t for t, tid, _ in rows if tid == os.getpid())
    main = {p for _, tid, p in rows if tid == os.getpid()}
    assert 1 in main  # the overflow node, "(overflow)" in the worker file's path table
    assert stats["timeline_reason"] is None and len(tids) >= 2


def test_a_fork_child_starts_its_own_timeline(tmp_path):
    from lineprofiler.accounting import _phases, _sampler

    rec = _phases.Recorder()
    rec.start()
    rec.make_primary()
    s = _sampler.Sampler(3600.0, 16, timeline_hz=100, nvml=False)
    s.start()
    with rec.phase("parent"):
        time.sleep(0.05)
        s.before_fork()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                s.after_fork_child()
                before = time.monotonic_ns()
                time.sleep(0.05)
                rows = _rows(s)
                ok = rows and all(t >= before - 20_000_000 for t, *_ in rows)
                ok = ok and {tid for _, tid, _ in rows} == {os.getpid()}
                code = 0 if ok else 3
            finally:
                os._exit(code)
        s.after_fork_parent()
        _, status = os.waitpid(pid, 0)
    s.close()
    assert os.waitstatus_to_exitcode(status) == 0


def test_timeline_hz_zero_is_off():
    from lineprofiler.accounting import _sampler

    s = _sampler.Sampler(3600.0, 16, nvml=False)
    s.start()
    time.sleep(0.02)
    assert s.drain_timeline() == b"" and s.stats()["timeline_reason"] == "timeline_hz is 0 (off)"
    s.close()
