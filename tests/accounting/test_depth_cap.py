"""The depth cap: a phase nested deeper than max_depth records into the (overflow) node."""

from __future__ import annotations

import sys

import pytest

from lineprofiler.accounting import Profiler, _phases
from lineprofiler.runfiles import workerfile


def test_entries_past_the_depth_cap_go_to_the_overflow_node_and_are_counted():
    rec = _phases.Recorder(measure_cpu=False, max_depth=3)
    names = ["a", "b", "c", "d", "e"]
    for _ in range(2):
        opened = [rec.phase(n) for n in names]
        for p in opened:
            p.__enter__()
        rec.count("deep")  # counted under the innermost phase: the overflow node
        for p in reversed(opened):
            p.__exit__(None, None, None)
    with rec.phase("after"):
        pass
    snap = rec.snapshot()
    got = {p["path"]: p for p in snap["phases"]}
    assert set(got) == {"a", "a/b", "a/b/c", "(overflow)", "after"}
    assert got["(overflow)"]["overflow"] is True and got["(overflow)"]["entries"] == 4
    assert got["a/b/c"]["entries"] == 2
    assert snap["caps"]["max_depth"] == 3 and snap["caps"]["depth_overflowed"] == 4
    assert snap["caps"]["paths_overflowed"] == 0
    assert {(c["phase"], c["name"]) for c in snap["counters"]} == {("(overflow)", "deep")}
    assert snap["repairs"]["mismatched_exits"] == 0


def test_the_path_cap_and_the_depth_cap_are_counted_apart():
    rec = _phases.Recorder(measure_cpu=False, max_paths=3, max_depth=2)
    a, b = rec.phase("a"), rec.phase("b")
    with a, b:
        with a, b:  # deeper than 2: the depth cap, twice
            pass
    with b, a:  # "b" is the third path; "b/a" would be a fourth: the path cap
        with b:  # under a frame past the path cap: counted with it
            pass
    snap = rec.snapshot()
    assert {p["path"] for p in snap["phases"]} == {"a", "a/b", "b", "(overflow)"}
    assert snap["caps"]["depth_overflowed"] == 2 and snap["caps"]["paths_overflowed"] == 2


def test_max_depth_is_validated():
    assert _phases.DEFAULT_MAX_DEPTH == 256
    assert _phases.Recorder().snapshot()["caps"]["max_depth"] == 256
    for bad in (0, -1, 10**7):
        with pytest.raises(ValueError):
            _phases.Recorder(max_depth=bad)


def test_a_10000_deep_recursion_keeps_the_worker_file_small(tmp_path):
    profiler = Profiler(run_dir=tmp_path, role="deep", measure_cpu=False, snapshot_interval_s=None)
    phase = profiler.phase

    def recurse(n):
        with phase("f"):
            if n > 1:
                recurse(n - 1)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 12_000))
    try:
        with profiler:
            recurse(10_000)
    finally:
        sys.setrecursionlimit(old)
    path = workerfile.find_worker_files(tmp_path)[0]
    # 256 paths of up to 256 components ("f/f/..."), not 10,000 paths of up to 10,000
    assert path.stat().st_size < 2_000_000
    doc = workerfile.read_worker_file(path)
    phases = {p["path"]: p for p in doc["phases"]}
    assert len(phases) == 257 and max(len(p.split("/")) for p in phases) == 256
    assert phases["(overflow)"]["entries"] == 10_000 - 256
    assert doc["caps"]["depth_overflowed"] == 10_000 - 256 and doc["caps"]["paths_overflowed"] == 0
    assert doc["repairs"]["mismatched_exits"] == 0
