"""The report is linear in the number of phase paths and in their depth.

Work is counted, not timed: every Python line the report executes is one trace event, so a
count that grows four times when the input grows four times is linear, whatever the machine's
speed. (The C-level string work the counts miss is bounded by the length of the paths' text.)
The quadratic ``short_names`` this replaced took 77 s for 16,000 paths and 47 s for one
2,000-deep recursion; its definition is kept here as the reference the fast one must match.
"""

import random
import resource
import subprocess
import sys

import pytest
from lp_report_builders import SimWorker

from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render.blocks import render
from lineprofiler.report.render.compare import compare_runs, render_compare
from lineprofiler.report.render.text import short_names
from lineprofiler.runfiles import histogram, workerfile


def reference_short_names(paths):
    """The definition: each path's shortest suffix of components no other path ends with."""
    split = {p: p.split("/") for p in paths}
    names = {}
    for path, parts in split.items():
        for n in range(1, len(parts) + 1):
            suffix = parts[-n:]
            if not any(other != path and o[-n:] == suffix for other, o in split.items()):
                names[path] = "/".join(suffix)
                break
        else:
            names[path] = path
    return names


def test_short_names_match_the_definition():
    rng = random.Random("short-names")
    alphabets = ["ab", "abc", ["a", "b", "ab", "ba", ""], ["x", "xx", "y", "x/y"]]
    for _ in range(3000):
        alphabet = rng.choice(alphabets)
        paths = ["/".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(0, 9))]
        assert short_names(paths) == reference_short_names(paths), paths


def trace_events(fn, *args):
    """How many Python trace events (calls, lines, returns) ``fn(*args)`` causes."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(previous)
    return count


def wide(n):
    return [f"group{i % 50}/step/p{i}" for i in range(n)]


def recursion(depth):
    """What one phase opened recursively ``depth`` times records: f, f/f, f/f/f, ..."""
    return ["/".join(["f"] * d) for d in range(1, depth + 1)]


@pytest.mark.parametrize("make, small", [(wide, 200), (recursion, 60)])
def test_short_names_work_grows_linearly(make, small):
    ratio = trace_events(short_names, make(4 * small)) / trace_events(short_names, make(small))
    assert ratio < 6, ratio  # linear: about 4; the quadratic version: 16 and more


def _phase(path, ns=1000):
    return {
        "path": path, "entries": 1, "wall_ns": ns, "self_ns": ns, "cpu_ns": ns, "min_ns": ns, "max_ns": ns,
        "hist": [[histogram.bucket_index(ns), 1]], "io": False, "sync": False, "io_bytes": None, "overflow": False,
    }


def write_run(run_dir, paths):
    """One worker file holding ``paths``, each with a counter, written by the real writer."""
    worker = SimWorker("actor")
    document = worker.document()
    document["phases"] = [_phase(p) for p in paths]
    document["counters"] = [{"phase": p, "name": "items", "total": 1} for p in paths]
    workerfile.write_worker_file(worker.path_in(run_dir), document)
    return run_dir


def _report_and_compare(run_dir):
    run = load_run(run_dir)
    render(run)
    render_compare(compare_runs(run, run))


@pytest.mark.parametrize("make, small", [(wide, 250), (recursion, 50)])
def test_the_whole_report_and_compare_grow_linearly(tmp_path, make, small):
    events = [
        trace_events(_report_and_compare, write_run(tmp_path / str(n), make(n))) for n in (small, 4 * small)
    ]
    assert events[1] / events[0] < 6, events


def _timed_report(run_dir):
    """The report's result and the CPU seconds it (and any pool it started) used: a loaded
    machine stretches the wall time, not the work."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "report", str(run_dir)], capture_output=True, text=True, timeout=600
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_a_ten_thousand_deep_path_and_a_deep_recursion_report_in_seconds(tmp_path):
    deep = "/".join(f"level{i}" for i in range(10_000))
    result, took = _timed_report(write_run(tmp_path / "deep", [deep.split("/", 1)[0], deep]))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "level9999" in result.stdout
    # 3,000-deep recursion: 4.5 million components in 3,000 paths (the old code: minutes).
    result, took_recursion = _timed_report(write_run(tmp_path / "recursion", recursion(3000)))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert took < 60 and took_recursion < 60, (took, took_recursion)


@pytest.mark.slow
def test_a_hundred_thousand_paths_report_in_seconds(tmp_path):
    result, took = _timed_report(write_run(tmp_path, wide(100_000)))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "(99,992 more phases)" in result.stdout
    assert took < 60, took  # linear: a few seconds; the quadratic version: minutes
