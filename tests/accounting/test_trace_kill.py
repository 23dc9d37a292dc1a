"""kill -9 of a traced worker: its last spans, the entries it had open and its links are read
back from its live file, with no snapshot after its start file."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
from pathlib import Path
from typing import Any

from lineprofiler.runfiles import livefile, workerfile

N_LOOPS = 300


def _worker(run_dir: str, conn: Any) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="k", enabled=True, trace=True, trace_capacity=1000, snapshot_interval_s=None)
    for _ in range(N_LOOPS):
        with prof.phase("loop"):
            with prof.phase("inner"):
                pass
    entered = threading.Event()

    def background() -> None:
        with prof.phase("background"):
            entered.set()
            threading.Event().wait()  # until killed

    threading.Thread(target=background, name="bg", daemon=True).start()
    entered.wait(30)
    outer = prof.phase("outer")
    outer.__enter__()
    stuck = prof.phase("stuck")
    stuck.__enter__()
    prof.signal("ready", "now")
    conn.send_bytes(b"R")
    while True:
        conn.recv_bytes()  # until killed


def test_a_killed_traced_workers_last_spans_and_open_entries_are_in_its_live_file(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    reader, writer = ctx.Pipe()
    proc = ctx.Process(target=_worker, args=(str(tmp_path), writer))
    proc.start()
    assert reader.poll(60) and reader.recv_bytes() == b"R"
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    start_file = workerfile.read_worker_file(next(iter(workerfile.find_worker_files(tmp_path))))
    assert start_file["times"]["status"] == "started"
    # a snapshot before the last one leaves the rings to the live file: megabytes, not rewritten
    assert start_file["trace"] == {"clock": "monotonic", "in_live_file": True}
    live = livefile.read_live_retrying(livefile.live_path(workerfile.find_worker_files(tmp_path)[0]))
    assert not live.problems and live.usable
    trace = live.trace
    assert trace is not None
    ids = {p["path"]: p["id"] for p in live.phases}
    entries = {p["id"]: p for p in live.phases}
    assert (trace["recorded"], trace["dropped"]) == (2 * N_LOOPS, 0)
    for path in ("loop", "loop/inner"):
        mine = [s for s in trace["spans"] if s[2] == ids[path]]
        assert len(mine) == entries[ids[path]]["entries"] == N_LOOPS
        assert sum(e - s for s, e, *_ in mine) == entries[ids[path]]["wall_ns"]
    names = [t["name"] for t in trace["threads"]]
    assert names == ["MainThread", "bg"]
    opened = trace["open"]
    assert [(o[1], names[o[2]]) for o in opened] == [
        (ids["background"], "bg"), (ids["outer"], "MainThread"), (ids["outer/stuck"], "MainThread")
    ]  # fmt: skip
    assert entries[ids["outer/stuck"]]["entries"] == 0 and entries[ids["outer/stuck"]]["open_entries"] == 1
    assert opened == sorted(opened)
    last_end = max(s[1] for s in trace["spans"])
    assert all(o[0] >= last_end for o in opened)
    assert [link[:3] for link in trace["links"]] == [["signal", "ready", "now"]]
    assert trace["links"][0][5] == ids["outer/stuck"]  # made under the innermost open entry
