"""Recursion counts a function's time once, as cProfile's cumulative time does.

While a function runs inside an activation of itself (directly, through other functions, or as
a generator that delegates to itself), the inner activation's time is billed to the inner
activation's lines only, not again to the line of the outer activation that led to it. A
function's lines then add up to the time it was on the stack, and no line or function exceeds
the wall time of the outermost call. Self time is unchanged.
"""

from __future__ import annotations

import time

from lp_helpers import func_stats, times, write_module

from lineprofiler import LineProfiler

WORKLOAD = """\
def rec(adv, n):
    adv(3)  # @a
    if n <= 1:  # @t
        return adv(5)  # @leaf
    return rec(adv, n - 1) + rec(adv, n - 2)  # @r


def ping(adv, n):
    adv(7)  # @p
    return pong(adv, n) + adv(1)  # @pp


def pong(adv, n):
    adv(11)  # @q
    return ping(adv, n - 1) if n else 0  # @qq


def walk(adv, depth):
    adv(13)  # @w
    if depth:  # @wd
        yield from walk(adv, depth - 1)  # @wy
    yield adv(17)  # @wv


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
"""


def _calls_of_rec(n: int) -> tuple[int, int]:
    """(calls, leaves) of rec(n)."""
    if n <= 1:
        return 1, 1
    c1, l1 = _calls_of_rec(n - 1)
    c2, l2 = _calls_of_rec(n - 2)
    return 1 + c1 + c2, l1 + l2


def _check_self(fs):
    for line in fs.lines.values():
        assert line.self_ns is not None
        assert 0 <= line.self_ns <= line.time_ns, line


def test_direct_recursion_is_counted_once(tmp_path, test_clock):
    mod = write_module(tmp_path / "proj", "lp_rec_direct", WORKLOAD)
    p = LineProfiler(project_folder=tmp_path / "proj")
    with p:
        mod.rec(test_clock, 6)
    stats = p.get_stats()
    calls, leaves = _calls_of_rec(6)
    wall = 3 * calls + 5 * leaves  # what the clock moved by, all of it inside the outermost call
    fs = func_stats(stats, mod.rec)
    assert fs.calls == calls
    assert times(stats, mod.rec) == {"a": 3 * calls, "t": 0, "leaf": 5 * leaves, "r": 0}
    assert fs.time_ns == wall
    assert fs.self_ns == wall
    _check_self(fs)


def test_mutual_recursion_is_counted_once_per_function(tmp_path, test_clock):
    mod = write_module(tmp_path / "proj", "lp_rec_mutual", WORKLOAD)
    p = LineProfiler(project_folder=tmp_path / "proj")
    with p:
        mod.ping(test_clock, 3)
    stats = p.get_stats()
    # ping runs 4 times (n = 3..0), pong 4 times; everything happens inside the outer ping.
    wall = 4 * 7 + 4 * 1 + 4 * 11
    ping, pong = func_stats(stats, mod.ping), func_stats(stats, mod.pong)
    assert (ping.calls, pong.calls) == (4, 4)
    assert ping.time_ns == wall
    # pong is on the stack for all but the outer ping's own lines: its first adv(7) and last adv(1)
    assert pong.time_ns == wall - 7 - 1
    # the line of pong that calls ping holds ping's inner activations, each once
    assert times(stats, mod.pong)["qq"] == wall - 7 - 1 - 4 * 11
    for fs in (ping, pong):
        _check_self(fs)
        assert all(line.time_ns <= ping.time_ns for line in fs.lines.values())


def test_a_generator_that_delegates_to_itself_is_counted_once(tmp_path, test_clock):
    mod = write_module(tmp_path / "proj", "lp_rec_gen", WORKLOAD)
    p = LineProfiler(project_folder=tmp_path / "proj")
    with p:
        values = list(mod.walk(test_clock, 3))
    assert len(values) == 4
    stats = p.get_stats()
    fs = func_stats(stats, mod.walk)
    wall = 4 * (13 + 17)
    assert fs.time_ns == wall
    got = times(stats, mod.walk)
    assert got["w"] == 4 * 13 and got["wv"] == 4 * 17 and got["wy"] == 0
    _check_self(fs)


def test_no_line_or_function_exceeds_the_wall_time_of_a_real_run(tmp_path):
    mod = write_module(tmp_path / "proj", "lp_rec_real", WORKLOAD)
    p = LineProfiler(project_folder=tmp_path / "proj")
    with p:
        t0 = time.perf_counter_ns()
        assert mod.fib(18) == 2584
        wall = time.perf_counter_ns() - t0
    fs = func_stats(p.get_stats(), mod.fib)
    assert fs.calls == 8361
    assert 0 < fs.time_ns <= wall
    for line in fs.lines.values():
        assert line.time_ns <= wall, line
    _check_self(fs)
