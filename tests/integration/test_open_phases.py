"""Entries still open at a snapshot: in the worker file as open_entries/open_ns/open_self_ns,
never counted twice, and in the report's role blocks.

The arithmetic is checked exactly with the recorder's injectable clock; the end-to-end story
with a real process SIGKILLed inside a long phase after a periodic snapshot.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from lp_integration_helpers import phases_by_path, worker_documents

from helpers.env import clean_env
from lineprofiler.accounting import _phases


def fields(snapshot: dict) -> dict[str, tuple[int, int, int, int, int, int]]:
    return {
        p["path"]: (p["entries"], p["wall_ns"], p["self_ns"], p["open_entries"], p["open_ns"], p["open_self_ns"])
        for p in snapshot["phases"]
    }


def test_open_entries_are_reported_separately_and_never_twice():
    now = [0]
    rec = _phases.Recorder(measure_cpu=False, clock=lambda: now[0])
    outer, inner, other = rec.phase("outer"), rec.phase("inner"), rec.phase("other")
    outer.__enter__()
    now[0] = 100
    inner.__enter__()
    now[0] = 130
    inner.__exit__(None, None, None)  # a closed child: 30 ns
    now[0] = 200
    other.__enter__()  # an open child, from 200
    now[0] = 1_000
    # outer: open for 1000, of which 30 in a closed child and 800 in an open one.
    assert fields(rec.snapshot()) == {
        "outer": (0, 0, 0, 1, 1_000, 170),
        "outer/inner": (1, 30, 30, 0, 0, 0),
        "outer/other": (0, 0, 0, 1, 800, 800),
    }
    snap = rec.snapshot()
    total = sum(p["self_ns"] + p["open_self_ns"] for p in snap["phases"])
    assert total == 1_000  # every nanosecond of the outer entry, once
    assert all(p["min_ns"] is None and p["hist"] == [] for p in snap["phases"] if p["entries"] == 0)
    now[0] = 1_500
    other.__exit__(None, None, None)
    now[0] = 2_000
    assert fields(rec.snapshot()) == {
        "outer": (0, 0, 0, 1, 2_000, 670),
        "outer/inner": (1, 30, 30, 0, 0, 0),
        "outer/other": (1, 1_300, 1_300, 0, 0, 0),
    }
    outer.__exit__(None, None, None)
    # Closed: the whole entry is in the totals and nothing is open any more.
    assert fields(rec.snapshot())["outer"] == (1, 2_000, 670, 0, 0, 0)


def test_open_entries_of_other_threads_are_seen():
    rec = _phases.Recorder(measure_cpu=False)
    entered, release = threading.Event(), threading.Event()

    def worker():
        with rec.phase("loader"):
            entered.set()
            release.wait(30)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert entered.wait(30)
        with rec.phase("main"):
            phases = phases_by_path(rec.snapshot())
            assert phases["loader"]["open_entries"] == 1 and phases["loader"]["entries"] == 0
            assert phases["main"]["open_entries"] == 1
            assert phases["loader"]["open_ns"] > 0
    finally:
        release.set()
        thread.join()
    phases = phases_by_path(rec.snapshot())
    assert phases["loader"]["open_entries"] == 0 and phases["loader"]["entries"] == 1
    del thread  # the thread's stack goes with its thread state; later snapshots still work
    assert rec.snapshot()["phases"]


def test_a_stopped_recorder_and_a_fork_child_report_nothing_open(tmp_path):
    rec = _phases.Recorder(measure_cpu=False)
    with rec.phase("outer"):
        rec.reset()  # a fork child's reset: the frame is stale now
        assert rec.snapshot()["phases"] == []
    rec.stop()
    assert rec.snapshot()["phases"] == []


KILLED = """
import os, time
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={run_dir!r}, role="learner", snapshot_interval_s=0.2)
for _ in range(3):
    with p.phase("warmup"):
        time.sleep(0.01)
with p.phase("train_epoch"):        # the long phase the process dies in
    with p.phase("load"):
        time.sleep(0.05)
    with p.phase("step"):
        print("inside", flush=True)
        time.sleep(3600)
"""


def test_a_process_killed_inside_a_long_phase_still_shows_it(tmp_path, report):
    run_dir = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED.format(run_dir=str(run_dir)))],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "inside"
        # Wait for a periodic snapshot taken while step is open, longer than every closed phase
        # (their sleeps may run long on a loaded machine), then kill without warning.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            documents = worker_documents(run_dir) if (run_dir / "workers").exists() else []
            phases = phases_by_path(documents[0]) if documents else {}
            closed = max((p["wall_ns"] for p in phases.values() if p["entries"]), default=0)
            if phases.get("train_epoch/step", {}).get("open_ns", 0) > max(0.3e9, closed):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("no snapshot with the open phase within 60 s")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    (document,) = worker_documents(run_dir)
    assert document["times"]["status"] == "running"  # the last periodic snapshot, never a final one
    phases = phases_by_path(document)
    epoch, step, load = phases["train_epoch"], phases["train_epoch/step"], phases["train_epoch/load"]
    assert (epoch["entries"], epoch["open_entries"]) == (0, 1)
    assert (step["entries"], step["open_entries"]) == (0, 1)
    assert (load["entries"], load["open_entries"]) == (1, 0)
    # The epoch's time so far covers its closed child and its open one; its self part is neither.
    assert epoch["open_ns"] >= load["wall_ns"] + step["open_ns"]
    assert epoch["open_self_ns"] == epoch["open_ns"] - load["wall_ns"] - step["open_ns"]

    rc, out, err = report(run_dir)
    assert rc == 0, err
    lines = out.splitlines()
    rows = {line.split()[0]: line for line in lines[lines.index("LEARNER  (1 process, imbalance 1.00)") + 2 :][:4]}
    assert rows["step"].endswith("includes 1 open entry")
    assert rows["train_epoch"].endswith("includes 1 open entry")
    assert not rows["warmup"].endswith("open entry")
    # step ranks first: its time so far is the largest self time of the role.
    assert lines[lines.index("LEARNER  (1 process, imbalance 1.00)") + 2].startswith("step ")
    assert any("2 phase entries were still open at the last snapshot" in line for line in lines)  # epoch, step
    json.dumps(document)  # plain JSON


def test_a_phase_open_at_a_clean_exit_is_closed_in_the_final_file(run_python, tmp_path):
    run_dir = tmp_path / "run"
    run_python(
        f"""
        from lineprofiler.accounting import Profiler
        p = Profiler(run_dir={str(run_dir)!r}, snapshot_interval_s=None)
        with p.phase("main"):
            p.flush()  # a snapshot while main is open
        p.close()
        """
    )
    (document,) = worker_documents(run_dir)
    main = phases_by_path(document)["main"]
    assert (main["entries"], main["open_entries"], main["open_ns"]) == (1, 0, 0)
