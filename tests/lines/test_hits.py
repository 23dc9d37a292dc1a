"""Exact hit counts: loops, recursion, generators, coroutines, exceptions, methods."""

import asyncio

import lp_workloads as wl
from lp_helpers import func_stats, hits, marks

from lineprofiler import FunctionStats, LineProfiler, LineStats


def profile(here, fn, *args):
    p = LineProfiler(project_folder=here)
    with p:
        result = fn(*args)
    return p.get_stats(), result


def test_loop_hits(here):
    stats, result = profile(here, wl.loop, 1000)
    assert result == sum(range(1000))
    assert hits(stats, wl.loop) == {"init": 1, "for": 1001, "body": 1000, "ret": 1}


def test_recursion_hits(here):
    stats, result = profile(here, wl.fib, 12)
    assert result == 144
    calls = 2 * 233 - 1  # fib(n) makes 2*fib(n+1)-1 calls
    leaves = 233  # calls with n < 2
    assert hits(stats, wl.fib) == {"test": calls, "base": leaves, "rec": calls - leaves}


def test_generator_hits(here):
    stats, result = profile(here, wl.consume_countdown, 50)
    assert result == sum(range(1, 51))
    assert hits(stats, wl.countdown) == {"while": 51, "yield": 50, "dec": 50}
    assert hits(stats, wl.consume_countdown) == {"init": 1, "for": 51, "body": 50, "ret": 1}


def test_coroutine_hits(here):
    stats, result = profile(here, asyncio.run, wl.run_ticks(3, 20))
    assert result == 60
    assert hits(stats, wl.tick) == {"for": 3 * 21, "await": 3 * 20, "ret": 3}
    assert hits(stats, wl.run_ticks) == {"gather": 1, "ret": 1}


def test_exception_hits(here):
    stats, result = profile(here, wl.catches, 25)
    assert result == 25
    assert hits(stats, wl.raiser) == {"raise": 25}
    h = hits(stats, wl.catches)
    assert h == {"init": 1, "for": 26, "try": 25, "call": 25, "except": 25, "handled": 25, "ret": 1}


def test_methods_keyed_by_qualname(here):
    p = LineProfiler(project_folder=here)
    shape = wl.Shape()
    with p:
        for i in range(7):
            shape.area(i)
            wl.Shape.double(i)
    stats = p.get_stats()
    area = func_stats(stats, wl.Shape.area)
    assert area.qualname == "Shape.area"
    assert area.filename == wl.__file__
    assert area.first_lineno == wl.Shape.area.__code__.co_firstlineno
    assert area.lines[marks(wl.Shape.area)["area"]].hits == 7
    assert hits(stats, wl.Shape.double) == {"double": 7}
    for key, fs in stats.items():
        assert isinstance(fs, FunctionStats)
        assert key == (fs.filename, fs.qualname, fs.first_lineno) == fs.key  # 0.10.0's order
        assert (key.filename, key.qualname, key.first_lineno) == tuple(key)
        assert all(isinstance(ln, LineStats) and ln.lineno == n for n, ln in fs.lines.items())
        assert fs.time_ns == sum(ln.time_ns for ln in fs.lines.values())


def test_source_text_and_times(here):
    stats, _ = profile(here, wl.loop, 2000)
    fs = func_stats(stats, wl.loop)
    body = fs.lines[marks(wl.loop)["body"]]
    assert body.source is not None and body.source.strip() == "total += i  # @body"
    assert body.time_ns > 0 and body.time_us == body.time_ns / 1e3
    assert body.per_hit_us == body.time_ns / 1e3 / body.hits
    # the loop's lines lie inside the block's time
    assert 0 < fs.time_ns


def test_frame_running_before_enable_is_adopted(here):
    # The function that holds the `with` block started before recording: its lines inside the
    # block are still counted, and the ones before it are not.
    p = LineProfiler(project_folder=here)
    total = 0
    for i in range(3):
        total += i
    with p:
        for i in range(5):  # @inner_for
            total += i  # @inner_body
    this = test_frame_running_before_enable_is_adopted
    m = marks(this)
    fs = func_stats(p.get_stats(), this)
    assert fs.lines[m["inner_for"]].hits == 6
    assert fs.lines[m["inner_body"]].hits == 5
    assert min(fs.lines) >= m["inner_for"] - 1  # nothing from before the block but `with p:`


def test_disable_enable_cycles_accumulate(here):
    p = LineProfiler(project_folder=here)
    for _ in range(3):
        with p:
            wl.loop(10)
        wl.loop(10)  # not recorded
    assert hits(p.get_stats(), wl.loop) == {"init": 3, "for": 33, "body": 30, "ret": 3}
