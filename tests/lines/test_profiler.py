"""LineProfiler's face: re-entrancy, one recorder at a time, clear/reset, deferred errors,
picklable stats."""

import pickle

import lp_workloads as wl
import pytest
from lp_helpers import hits

from lineprofiler import FunctionStats, LineProfiler, LineStats
from lineprofiler.lines import TracerError, _tracer
from lineprofiler.lines._tracer_testing import set_fake_clock


def test_reentrant_context_manager(here):
    p = LineProfiler(project_folder=here)
    with p as entered:
        assert entered is p and p.enabled
        wl.loop(3)
        with p:
            wl.loop(3)
        assert p.enabled  # the inner exit does not stop the outer block
        wl.loop(3)
    assert not p.enabled
    wl.loop(3)
    assert hits(p.get_stats(), wl.loop)["init"] == 3


def test_enable_disable_nest_and_extra_disable_is_harmless(here):
    p = LineProfiler(project_folder=here)
    p.disable()  # not enabled: nothing happens
    p.enable()
    p.enable()
    wl.loop(2)
    p.disable()
    assert p.enabled
    wl.loop(2)
    p.disable()
    assert not p.enabled
    p.disable()
    assert hits(p.get_stats(), wl.loop)["init"] == 2


def test_second_profiler_is_refused_while_one_records(here):
    first, second = LineProfiler(project_folder=here), LineProfiler(project_folder=here)
    with first:
        with pytest.raises(RuntimeError, match="another LineProfiler is already enabled"):
            second.enable()
        with pytest.raises(RuntimeError, match="another LineProfiler"):
            with second:
                pass
        assert not second.enabled
        wl.loop(4)  # the first keeps recording
    assert hits(first.get_stats(), wl.loop)["body"] == 4
    assert second.get_stats() == {}
    with second:  # free again once the first is disabled
        wl.loop(4)
    assert hits(second.get_stats(), wl.loop)["body"] == 4


def test_clear_and_reset_are_the_same(here):
    assert LineProfiler.reset is LineProfiler.clear
    p = LineProfiler(project_folder=here)
    with p:
        wl.loop(5)
    assert p.get_stats()
    p.reset()
    assert p.get_stats() == {} and p.wall_time_ns == 0
    with p:
        wl.loop(5)
        p.clear()  # while recording: only what follows counts
        wl.loop(7)
    assert hits(p.get_stats(), wl.loop) == {"init": 1, "for": 8, "body": 7, "ret": 1}


def test_user_exception_passes_through(here):
    p = LineProfiler(project_folder=here)
    with pytest.raises(ValueError, match="boom"):
        with p:
            wl.raiser()
    assert not p.enabled
    assert hits(p.get_stats(), wl.raiser) == {"raise": 1}


def test_stats_are_frozen_and_picklable(here):
    p = LineProfiler(project_folder=here)
    with p:
        wl.fib(8)
    stats = p.get_stats()
    again = pickle.loads(pickle.dumps(stats))
    assert again == stats
    fs = next(iter(stats.values()))
    with pytest.raises(AttributeError):
        fs.time_ns = 0  # type: ignore[misc]
    ln = next(iter(fs.lines.values()))
    with pytest.raises(AttributeError):
        ln.hits = 0  # type: ignore[misc]
    assert isinstance(fs, FunctionStats) and isinstance(ln, LineStats)


def test_error_inside_a_callback_is_deferred_to_disable(here):
    """A failure inside the tracer never reaches the user's code: recording stops, the error is
    raised by disable() (once), and what was recorded before it is kept."""

    class Boom(Exception):
        pass

    p = LineProfiler(project_folder=here)
    real = p._filter

    def filter_that_fails_on_fib(code):
        if code.co_name == "fib":
            raise Boom("filter failed")
        return real(code)

    p._tracer = _tracer.Tracer(filter_that_fails_on_fib)
    p.enable()
    assert wl.loop(10) == 45
    assert wl.fib(10) == 55  # the user's code runs on, untouched
    assert wl.loop(10) == 45  # not recorded: the tracer has stopped itself
    with pytest.raises(TracerError) as info:
        p.disable()
    assert isinstance(info.value.__cause__, Boom)
    assert not p.enabled
    stats = p.get_stats()  # the error was reported once; the data is still there
    assert hits(stats, wl.loop)["body"] == 10
    assert not any(k.qualname == "fib" for k in stats)
    # The next session records again.
    p._tracer = _tracer.Tracer(real)
    with p:
        wl.loop(3)
    assert hits(p.get_stats(), wl.loop)["body"] == 3


def test_error_while_enabled_is_raised_by_get_stats(here):
    p = LineProfiler(project_folder=here)
    p._tracer = _tracer.Tracer(lambda code: 1 / 0)
    p.enable()
    try:
        wl.loop(3)
        with pytest.raises(TracerError) as info:
            p.get_stats()
        assert isinstance(info.value.__cause__, ZeroDivisionError)
        assert p.get_stats() == {}
    finally:
        p.disable()


def test_tracer_bad_arguments():
    with pytest.raises(TypeError):
        _tracer.Tracer(5)
    t = _tracer.Tracer(lambda code: True)
    with pytest.raises(ValueError, match="unknown kind"):
        t.hook("nope")
    with pytest.raises(TypeError):
        t.hook(3)
    with pytest.raises(TypeError):
        _tracer.Hook()
    with pytest.raises(ValueError):
        set_fake_clock(True, callback_cost=-1)
    assert _tracer.default_clock() in ("tsc", "monotonic")


def test_repr_and_properties(here):
    p = LineProfiler(project_folder=here)
    assert "disabled" in repr(p) and str(here) in repr(p)
    assert p.project_folder == here
    with p:
        assert "enabled" in repr(p)
        assert p.wall_time_ns > 0
