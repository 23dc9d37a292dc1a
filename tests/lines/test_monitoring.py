"""sys.monitoring (3.12+): tool ids, a clean release, other tools' events left alone."""

import sys

import lp_workloads as wl
import pytest
from lp_helpers import hits, write_module

from lineprofiler import LineProfiler
from lineprofiler.lines.profiler import TOOL_NAME

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")

if sys.version_info >= (3, 12):
    mon = sys.monitoring
    E = mon.events
    OUR_EVENTS = (E.LINE, E.PY_START, E.PY_RESUME, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND, E.PY_THROW)


@pytest.fixture
def hold_ids():
    """Takes tool ids for the test (as other tools would) and frees them afterwards."""
    held = []

    def hold(*ids):
        for i in ids:
            mon.use_tool_id(i, f"other-{i}")
            held.append(i)

    yield hold
    for i in held:
        if mon.get_tool(i) == f"other-{i}":
            mon.free_tool_id(i)


def assert_released(tool):
    assert mon.get_tool(tool) is None
    assert mon.get_events(tool) == 0
    mon.use_tool_id(tool, "probe")  # free, and our callbacks are gone from it
    try:
        for ev in OUR_EVENTS:
            assert mon.register_callback(tool, ev, None) is None
    finally:
        mon.free_tool_id(tool)


def test_profiler_id_while_enabled_and_released_after(here):
    assert mon.get_tool(mon.PROFILER_ID) is None
    p = LineProfiler(project_folder=here)
    with p:
        assert mon.get_tool(mon.PROFILER_ID) == TOOL_NAME
        assert p._monitoring.tool == mon.PROFILER_ID
        wl.loop(3)
    assert_released(mon.PROFILER_ID)


def test_falls_back_to_a_free_id(here, hold_ids):
    hold_ids(mon.PROFILER_ID)
    p = LineProfiler(project_folder=here)
    with p:
        assert p._monitoring.tool == 3 and mon.get_tool(3) == TOOL_NAME
        wl.loop(4)
    assert mon.get_tool(mon.PROFILER_ID) == "other-2"  # untouched
    assert_released(3)
    assert hits(p.get_stats(), wl.loop)["body"] == 4


def test_no_free_id_is_a_clear_error(here, hold_ids):
    free = [i for i in range(6) if mon.get_tool(i) is None]
    hold_ids(*free)
    p = LineProfiler(project_folder=here)
    with pytest.raises(RuntimeError, match=r"every sys.monitoring tool id is taken \(0: '.+', 1: '.+', 2: 'other-2'"):
        p.enable()
    assert not p.enabled
    # the refusal left nothing behind: the tracer is not recording and a later enable works
    mon.free_tool_id(2)
    with p:
        wl.loop(2)
    assert hits(p.get_stats(), wl.loop)["body"] == 2


def test_other_tools_events_keep_flowing(here, hold_ids):
    """A tool on another id with its own LINE callback sees every line before, during and after
    our session: we never change its events or callbacks."""
    hold_ids(4)
    seen = []

    def on_line(code, line):
        if code is wl.loop.__code__:
            seen.append(line)

    mon.register_callback(4, E.LINE, on_line)
    mon.set_events(4, E.LINE)
    try:
        wl.loop(3)
        n_before = len(seen)
        p = LineProfiler(project_folder=here)
        with p:
            wl.loop(3)
        n_during = len(seen) - n_before
        wl.loop(3)
        n_after = len(seen) - n_before - n_during
        assert mon.get_events(4) == E.LINE
    finally:
        mon.set_events(4, 0)
        mon.register_callback(4, E.LINE, None)
    assert n_before == n_during == n_after == 1 + 4 + 3 + 1
    assert hits(p.get_stats(), wl.loop)["body"] == 3


def test_locations_disabled_by_an_earlier_holder_are_rearmed(tmp_path):
    """Profiler A (another folder) disables the locations of module m as foreign; profiler B,
    whose folder holds m, gets the same tool id next and must still see m's lines."""
    m = write_module(tmp_path / "b", "lp_rearm_mod", "def work(n):\n    for i in range(n):\n        i += 1\n")
    (tmp_path / "a").mkdir()
    a = LineProfiler(project_folder=tmp_path / "a")
    with a:
        m.work(5)
    assert a.get_stats() == {}
    b = LineProfiler(project_folder=tmp_path / "b")
    with b:
        m.work(5)
    stats = b.get_stats()
    assert stats[(m.__file__, "work", 1)].lines[3].hits == 5


def test_foreign_code_disabled_then_rearmed_by_another_tool(here):
    """restart_events() from another tool makes foreign locations fire again: the cached
    decision answers them and project lines are unaffected."""
    p = LineProfiler(project_folder=here)
    import json

    with p:
        for _ in range(3):
            json.dumps([1, 2])
            mon.restart_events()
            wl.loop(2)
    assert {k.filename for k in p.get_stats()} <= {wl.__file__, __file__}
    assert hits(p.get_stats(), wl.loop)["body"] == 6


def test_release_order_is_right_for_both_free_tool_id_behaviours(here, monkeypatch):
    """3.12/3.13's free_tool_id() only frees the name; 3.14's also clears callbacks and events.
    Our release must leave nothing behind under the first and lose nothing under the second:
    when free_tool_id() is called, our events must already be off and our callbacks gone. The
    stand-in below checks that, then behaves like 3.14 (clears everything) before freeing."""
    real_free = mon.free_tool_id
    seen = {}

    def free_like_314(tool):
        seen["events"] = mon.get_events(tool)
        seen["callbacks"] = [mon.register_callback(tool, ev, None) for ev in OUR_EVENTS]
        mon.set_events(tool, 0)
        real_free(tool)

    monkeypatch.setattr(mon, "free_tool_id", free_like_314)
    p = LineProfiler(project_folder=here)
    for _ in range(2):  # and a second session works after a 3.14-style clear
        with p:
            wl.loop(3)
        assert seen.pop("events") == 0
        assert seen.pop("callbacks") == [None] * len(OUR_EVENTS)
    monkeypatch.undo()
    assert_released(mon.PROFILER_ID)
    assert hits(p.get_stats(), wl.loop)["body"] == 6
