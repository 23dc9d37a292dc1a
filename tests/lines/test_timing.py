"""Exact times with the tracer's test clock (it moves only when told, and every tracer callback
costs 1000 ns of it): callback time is never billed, callees are included, suspended generators
and coroutines are not billed, a raising line keeps its time."""

import asyncio

import lp_workloads as wl
from lp_helpers import hits, times

from lineprofiler import LineProfiler


def run(here, fn, *args):
    p = LineProfiler(project_folder=here)
    assert p.clock in ("tsc", "monotonic")  # before recording: the real clock
    with p:
        fn(*args)
    assert p.clock == "test"
    return p.get_stats()


def test_callback_time_not_billed_callees_included(here, test_clock):
    stats = run(here, wl.timed_work, test_clock)
    assert times(stats, wl.timed_helper) == {"h1": 10, "h2": 20}
    # b calls timed_helper: its 30 ns are included, the ~5 callbacks (5000 ns) are not
    assert times(stats, wl.timed_work) == {"a": 100, "b": 30, "c": 5}


def test_generator_not_billed_while_suspended(here, test_clock):
    stats = run(here, wl.timed_consume, test_clock)
    assert times(stats, wl.timed_gen) == {"g1": 1, "g2": 0, "g3": 2, "g4": 0, "g5": 0}
    assert hits(stats, wl.timed_gen) == {"g1": 1, "g2": 1, "g3": 1, "g4": 1, "g5": 0}
    assert times(stats, wl.timed_consume) == {"k1": 0, "k2": 1, "k3": 1000, "k4": 2, "k5": 50, "k6": 0}


def test_raising_line_keeps_its_time(here, test_clock):
    stats = run(here, wl.timed_catcher, test_clock)
    assert times(stats, wl.timed_raiser) == {"r1": 7, "r2": 9}
    t = times(stats, wl.timed_catcher)
    assert t["c2"] == 16 and t["c4"] == 11 and t["c6"] == 13 and t["c8"] == 2
    assert t["c1"] == t["c3"] == t["c5"] == t["c7"] == 0


def test_coroutine_not_billed_while_awaiting(here, test_clock):
    stats = run(here, asyncio.run, wl.timed_main(test_clock))
    assert times(stats, wl.timed_sleeper) == {"s1": 3, "s2": 0, "s3": 4}
    assert times(stats, wl.timed_other) == {"o1": 500}
    assert hits(stats, wl.timed_sleeper) == {"s1": 1, "s2": 1, "s3": 1}


def test_function_total_is_sum_of_lines(here, test_clock):
    stats = run(here, wl.timed_work, test_clock)
    from lp_helpers import func_stats

    assert func_stats(stats, wl.timed_work).time_ns == 135
    assert func_stats(stats, wl.timed_helper).time_ns == 30
