"""The timeline's truth: processes with a known schedule of phases, one delayed by a known
offset and all outside phases for a planted span, are recovered from their .timeline files.

The processes log what they really did (a loaded machine runs a schedule late), so every
judgement is against that log: each tick saw the state the process was in at that instant, each
phase's span begins and ends where the process entered and left it within the ticks around the
change, the offset between the processes and the planted stall are found within the same
bounds, and ticks the sampler could not take are counted. The bound is the largest spacing of
the ticks actually taken: one sample period on an idle machine, more on a loaded one, never a
guess about the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lineprofiler.report.compute.blocks import RenderOptions, timeline
from lineprofiler.report.read.merge import load_run
from lineprofiler.runfiles import samplefile

from .conftest import wait_for_stat

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

HZ = 50.0
A, B, CYCLES = 0.4, 0.2, 4
OFFSET = 0.3
STALL_FROM, STALL_LEN = 1.35, 0.4  # from t0: the first process's second cycle's B..A
CHILD = Path(__file__).with_name("timeline_child.py")

#: A change of state: the monotonic clock before and after it, and the state after it ("": none).
Transition = tuple[int, int, str]


def _run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), str(run_dir), repr(offset), repr(A), repr(B), str(CYCLES),
             repr(STALL_FROM), repr(STALL_LEN), repr(HZ)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for offset in (0.0, OFFSET)
    ]
    # t0 once both are profiling, however long their interpreters took to start.
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    t0 = time.time() + 0.5
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(f"{t0!r}\n")
        p.stdin.close()
    for p in procs:
        assert p.wait(timeout=120) == 0
        assert p.stdout is not None
        p.stdout.close()
    return run_dir


def _transitions(tmp_path: Path, pid: int) -> list[Transition]:
    return [(a, b, s) for a, b, s in json.loads((tmp_path / f"transitions_{pid}.json").read_text())]


def _ticks(worker) -> tuple[samplefile.SampleTable, list[tuple[int, str]]]:
    """The timeline file and the process's state at each tick taken: (monotonic ns, path or "")."""
    path, reason = timeline._timeline_file(worker)
    assert path is not None, reason
    table = samplefile.read_samples(path)
    paths = timeline._path_table(worker)
    states: dict[int, str] = {}
    for t, tid, node in zip(*(table.column(c) for c in samplefile.TIMELINE_REQUIRED_COLUMNS), strict=True):
        if tid == samplefile.TID_SKIPPED:
            continue
        states.setdefault(t, "")
        if tid == worker.pid and node >= 0:
            states[t] = paths.get(node, "(unknown)")
    return table, sorted(states.items())


def _actual(transitions: list[Transition], t: int) -> str | None:
    """What the process was in at monotonic ``t``; None while it was changing."""
    state = ""
    for before, after, new in transitions:
        if t < before:
            return state
        if t <= after:
            return None
        state = new
    return state


def _intervals(transitions: list[Transition]) -> list[tuple[Transition, Transition]]:
    """Each stretch in one state: the change into it and the change out of it."""
    return list(zip(transitions, transitions[1:], strict=False))


@pytest.mark.alone  # the bounds are the ticks actually taken, but a second busy worker still skews them
def test_a_known_schedule_is_recovered(tmp_path):
    run_dir = _run(tmp_path)
    run = load_run(run_dir)
    options = RenderOptions()
    procs, reasons = timeline.read_run(run, options)
    assert reasons == {} and len(procs) == 2
    procs.sort(key=lambda p: min(a for a, _, s in p.spans if s))
    period = int(1e9 / HZ)
    first_entries, stall_edges, slack = [], [], 0
    for p in procs:
        assert p.period_ns == period
        transitions = _transitions(tmp_path, p.worker.pid)
        states = [s for *_, s in transitions]
        assert states[0] == "A" and states[-1] == "" and states[:-1].count("") == 1, states
        table, ticks = _ticks(p.worker)
        times = [t for t, _ in ticks]
        gap = max(b - a for a, b in zip(times, times[1:], strict=False))
        slack = max(slack, gap)
        # Every tick saw what the process was doing at that instant.
        judged = [(t, seen, _actual(transitions, t)) for t, seen in ticks]
        wrong = [(t, seen, want) for t, seen, want in judged if want is not None and seen != want]
        assert not wrong, wrong[:5]
        assert sum(want is not None for *_, want in judged) >= 0.9 * len(ticks)
        # Skipped ticks are counted, never silently stretched: a gap of two periods between
        # the thread's ticks has one. (The first and last rows are the start's and the close's
        # own, off the thread's grid.)
        grid = times[1:-1]
        if max((b - a for a, b in zip(grid, grid[1:], strict=False)), default=0) >= 2 * period:
            assert p.skipped > 0
        # Each stretch in a phase that ticks could see is a span that begins where the process
        # entered the phase and ends where it left, within the ticks around each change.
        unix = table.to_unix_ns
        spans = [(a, b, s) for a, b, s in p.spans if s]
        for (b0, a0, state), (b1, a1, _) in _intervals(transitions):
            if not state or b1 - a0 < 3 * gap:
                continue
            mine = [(a, b) for a, b, s in spans if s == state and a < unix(b1) and b > unix(a0)]
            assert mine, (state, a0, b1)
            start, end = min(a for a, _ in mine), max(b for _, b in mine)
            assert unix(b0) <= start <= unix(a0) + gap, (state, start - unix(a0))
            assert unix(b1) - gap <= end <= unix(a1) + gap, (state, end - unix(b1))
        first_entries.append((unix(transitions[0][0]), unix(transitions[0][1]), spans[0][0]))
        # The planted stall: the one change to no phase before the schedule's end.
        into = next(t for t in transitions[:-1] if t[2] == "")
        out = transitions[transitions.index(into) + 1]
        stall_edges.append((unix(into[0]), unix(into[1]), unix(out[0]), unix(out[1])))
    # The offset between the processes: the recovered one is the real one within the ticks.
    (b0, a0, got0), (b1, a1, got1) = first_entries
    assert (b1 - a0) - 2 * slack <= got1 - got0 <= (a1 - b0) + 2 * slack
    assert abs((a1 - a0) / 1e9 - OFFSET) < 0.25  # the children kept to their schedule, roughly
    # The planted stall: every process outside phases, found with its start and length.
    block = timeline.timeline_block(run, options)
    assert block is not None and len(block.roles) == 1
    role = block.roles[0]
    assert role.processes == 2
    assert set(role.legend.values()) == {"A", "B"}
    earliest_start = max(e[0] for e in stall_edges) - run.start_ns
    latest_start = max(e[1] for e in stall_edges) - run.start_ns
    earliest_end = min(e[2] for e in stall_edges) - run.start_ns
    latest_end = min(e[3] for e in stall_edges) - run.start_ns
    planted = [s for s in role.stalls if s.start_ns < latest_end and s.start_ns + s.length_ns > earliest_start]
    assert len(planted) == 1, role.stalls
    stall = planted[0]
    assert earliest_start <= stall.start_ns <= latest_start + slack
    assert earliest_end - slack <= stall.start_ns + stall.length_ns <= latest_end + slack
    assert stall.phases == [""]
    # Nothing else is a stall: the processes are in phases the rest of the time.
    assert all(s.length_ns <= 2 * slack for s in role.stalls if s is not stall)
    # The same spans are the lanes.
    lanes = timeline.lanes(run, options)
    assert sorted(len(lane.spans) for lane in lanes) == sorted(sum(1 for *_, s in p.spans if s) for p in procs)
    assert timeline.lanes(run, RenderOptions(no_samples=True)) == []


def _ticks_pass(sampler, n: int) -> None:
    """Wait until the sampler has taken n more timeline ticks."""
    wait_for_stat(sampler, "timeline_ticks", sampler.stats()["timeline_ticks"] + n)


def _rows(sampler, width: int = 3):
    """The drained timeline rows, each cut to its first ``width`` values (t_ns, tid, phase)."""
    from array import array

    from lineprofiler.accounting import _sampler

    step = len(_sampler.TIMELINE_COLUMNS)
    rows = array("q", sampler.drain_timeline())
    return [tuple(rows[i : i + width]) for i in range(0, len(rows), step)]


def test_a_tick_knows_since_when_and_the_phase_left_before():
    """Each row carries when its state began and the last phase left (start and end): the
    clock reads of the entries and exits themselves, not the tick's time."""
    from lineprofiler.accounting import _phases, _sampler

    assert _sampler.TIMELINE_COLUMNS == samplefile.TIMELINE_COLUMNS
    rec = _phases.Recorder()
    rec.start()
    rec.make_primary()
    s = _sampler.Sampler(3600.0, 16, timeline_hz=100, nvml=False)
    s.start()
    before_a = time.monotonic_ns()
    with rec.phase("a"):
        after_a = time.monotonic_ns()
        time.sleep(0.002)
        before_exit = time.monotonic_ns()
    after_exit = time.monotonic_ns()
    with rec.phase("b"):
        after_b = time.monotonic_ns()
        _ticks_pass(s, 2)
        rows = [r for r in _rows(s, width=7) if r[1] == threading.get_native_id()]
    s.close()
    ids = {p["path"]: p["id"] for p in rec.snapshot()["phases"]}
    t, _, phase, since, prev, prev_since, prev_end = rows[-1]
    assert phase == ids["b"] and prev == ids["a"]
    assert after_exit <= since <= after_b <= t
    assert before_a <= prev_since <= after_a
    assert before_exit <= prev_end <= after_exit


def test_threads_that_start_and_end_and_the_overflow_node():
    import threading

    from lineprofiler.accounting import _phases, _sampler

    rec = _phases.Recorder(max_paths=4)
    rec.start()
    rec.make_primary()
    s = _sampler.Sampler(3600.0, 16, timeline_hz=100, nvml=False)
    s.start()
    entered, seen = threading.Event(), threading.Event()

    def worker():
        with rec.phase("w"):
            entered.set()
            seen.wait(60)

    t = threading.Thread(target=worker)
    t.start()
    with rec.phase("a"):
        for name in ("b", "c", "d", "e", "f"):
            rec.phase(name).__enter__()  # past the path cap: the overflow node
        assert entered.wait(60)
        _ticks_pass(s, 3)
        seen.set()
        t.join()
        _ticks_pass(s, 3)
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
        _ticks_pass(s, 3)
        s.before_fork()
        forked_at = time.monotonic_ns()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                s.after_fork_child()
                _ticks_pass(s, 3)
                rows = _rows(s)
                ok = rows and all(t >= forked_at for t, *_ in rows)
                # Only this process's one thread; a loaded machine may add skipped-tick markers.
                ok = ok and {tid for _, tid, _ in rows} - {samplefile.TID_SKIPPED} == {os.getpid()}
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
