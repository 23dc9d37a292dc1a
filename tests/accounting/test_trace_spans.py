"""trace=True: every closed phase entry of a real worker process is a span of its document, made
from the very clock reads its phase's totals add, on every thread; a ring smaller than the spans
keeps the newest and counts the rest; a fork child traces its own entries only; trace off changes
nothing."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from lineprofiler.runfiles import livefile, tracesection, workerfile


def _read(path: Path) -> dict[str, Any]:
    """A worker document with its spans as rows (the final snapshot keeps them in a spans file)."""
    doc = workerfile.read_worker_file(path)
    if doc.get("trace") is not None:
        doc["trace"]["spans"] = tracesection.span_rows(doc["trace"], path)
    return doc


def _document(run_dir: Path, pid: int) -> dict[str, Any]:
    docs = [_read(p) for p in workerfile.find_worker_files(run_dir)]
    mine = [d for d in docs if d["identity"]["pid"] == pid]
    assert len(mine) == 1, [d["identity"]["pid"] for d in docs]
    return mine[0]


def _traced_worker(run_dir: str) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="t", enabled=True, trace=True, snapshot_interval_s=None)

    def helper() -> None:
        for _ in range(7):
            with prof.phase("side"):
                sum(range(50))

    thread = threading.Thread(target=helper, name="helper-thread")
    thread.start()
    for i in range(40):
        with prof.phase("iteration"):
            with prof.phase("self_play"):
                sum(range(200))
            if i % 3 == 0:
                with prof.phase("train", io=True):
                    sum(range(100))
    thread.join()
    prof.close()


def test_a_spawned_workers_spans_are_its_phase_entries_exactly(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_traced_worker, args=(str(tmp_path),))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    doc = _document(tmp_path, proc.pid)
    trace = doc["trace"]
    assert trace["clock"] == "monotonic"
    assert trace["capacity"] == 200_000 and trace["dropped"] == 0
    spans = trace["spans"]
    assert spans == sorted(spans, key=lambda s: s[0])
    phases = {p["id"]: p for p in doc["phases"] if p["entries"]}
    assert {p["path"] for p in phases.values()} == {"iteration", "iteration/self_play", "iteration/train", "side"}
    assert trace["recorded"] == len(spans) == sum(p["entries"] for p in phases.values())
    by_phase: dict[int, list[list[int]]] = defaultdict(list)
    for span in spans:
        by_phase[span[2]].append(span)
    assert set(by_phase) == set(phases)
    for phase_id, phase in phases.items():
        mine = by_phase[phase_id]
        durations = [end - start for start, end, *_ in mine]
        assert len(mine) == phase["entries"], phase["path"]
        assert sum(durations) == phase["wall_ns"], phase["path"]  # the same clock reads: exact
        assert min(durations) == phase["min_ns"] and max(durations) == phase["max_ns"]
        assert sum(s[4] for s in mine) == phase["cpu_ns"]  # CPU measured on every entry here
    names = [t["name"] for t in trace["threads"]]
    assert sorted(names) == ["MainThread", "helper-thread"]
    side_thread = {s[3] for s in by_phase[next(i for i, p in phases.items() if p["path"] == "side")]}
    assert [names[i] for i in side_thread] == ["helper-thread"]
    # each child span lies inside a span of its parent phase, on the same thread
    iterations = [s for s in spans if phases[s[2]]["path"] == "iteration"]
    for span in spans:
        if phases[span[2]]["path"].startswith("iteration/"):
            assert any(o[0] <= span[0] and span[1] <= o[1] and o[3] == span[3] for o in iterations)
    assert trace["open"] == [] and trace["links"] == []
    pairs = trace["clock_pairs"]
    assert len(pairs) >= 2 and all(u >= 0 for _, _, u in pairs)  # at start and at each flush
    assert pairs == sorted(pairs)


def test_a_ring_smaller_than_the_spans_keeps_the_newest_and_counts_the_rest(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="r", enabled=True, trace=True, trace_capacity=50, measure_cpu=False,
                    snapshot_interval_s=None)  # fmt: skip
    for _ in range(150):
        with prof.phase("old"):
            pass
    for _ in range(50):
        with prof.phase("new"):
            pass
    assert prof.live_path is not None
    live = livefile.read_live(prof.live_path).trace
    prof.close()
    doc = _document(tmp_path, os.getpid())
    ids = {p["path"]: p["id"] for p in doc["phases"]}
    for trace in (doc["trace"], live):
        assert trace is not None
        assert (trace["capacity"], trace["recorded"], trace["dropped"]) == (50, 200, 150)
        assert len(trace["spans"]) == 50 and {s[2] for s in trace["spans"]} == {ids["new"]}
        assert all(s[4] == -1 for s in trace["spans"])  # measure_cpu=False: not measured


def _forking_worker(run_dir: str) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="parent", enabled=True, trace=True, snapshot_interval_s=None)
    with prof.phase("outer"):
        with prof.phase("before"):
            pass
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with prof.phase("child"):
                    pass
                prof.close()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    prof.close()


def test_a_fork_child_traces_its_own_entries_only(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_forking_worker, args=(str(tmp_path),))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    docs = [_read(p) for p in workerfile.find_worker_files(tmp_path)]
    child = next(d for d in docs if d["identity"]["pid"] != proc.pid)
    parent = _document(tmp_path, proc.pid)
    child_paths = {p["id"]: p["path"] for p in child["phases"]}
    assert [child_paths[s[2]] for s in child["trace"]["spans"]] == ["child"]
    assert child["trace"]["recorded"] == 1 and len(child["trace"]["threads"]) == 1
    parent_paths = {p["id"]: p["path"] for p in parent["phases"]}
    assert sorted(parent_paths[s[2]] for s in parent["trace"]["spans"]) == ["outer", "outer/before"]


def test_trace_off_leaves_the_files_as_they_were(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="off", enabled=True, measure_cpu=False, snapshot_interval_s=None)
    assert prof.recorder is not None and not prof.recorder.tracing
    with prof.phase("p"):
        prof.signal("q", 1)  # a no-op
        prof.wait_on("q", 1)
    assert prof.live_path is not None
    live = livefile.read_live(prof.live_path)
    assert live.trace is None and not live.problems and live.total_entries == 1
    prof.close()
    assert "trace" not in _document(tmp_path, os.getpid())
