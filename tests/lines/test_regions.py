"""LineProfiler.region(name): hits and time per line of the innermost region open on a thread."""

import io
import json
import threading

import pytest
from lp_helpers import func_stats, marks, write_module

from helpers.cli import run_cli
from lineprofiler import LineProfiler

WORK = """\
import threading


def work(n):
    total = 0  # @init
    for i in range(n):  # @for
        total += i  # @body
    return total  # @ret


def two_regions(p):
    with p.region("select"):
        work(3)  # @select
    with p.region("rollout"):
        work(5)  # @rollout
    work(2)  # @outside


def nested(p):
    with p.region("outer"):
        work(4)  # @outer
        with p.region("inner"):
            work(6)  # @inner
        work(1)  # @after


def steps(n):
    for i in range(n):  # @gfor
        yield work(i + 1)  # @gyield


def resumed(p):
    g = steps(4)
    with p.region("gen"):
        next(g)  # @in1 work(1): 1 body hit
        next(g)  # @in2 work(2): 2 body hits
    next(g)  # @out work(3)
    with p.region("gen"):
        next(g)  # @in3 work(4): 4 body hits


def threads(p):
    with p.region("main"):
        t = threading.Thread(target=work, args=(7,))
        t.start()
        t.join()
        work(2)  # @mainwork

    def in_thread():
        with p.region("thread"):
            work(9)  # @threadwork

    t = threading.Thread(target=in_thread)
    t.start()
    work(3)  # @while_thread
    t.join()
"""


@pytest.fixture
def mod(tmp_path):
    return write_module(tmp_path / "proj", "lp_regions_work", WORK)


@pytest.fixture
def prof(tmp_path, mod):
    return LineProfiler(project_folder=tmp_path / "proj")


def body_hits(region_stats, name, work) -> int:
    """Hits of work's loop body inside region `name` (0 when it ran none there)."""
    fs = _find(region_stats.get(name, {}), work)
    line = marks(work)["body"]
    return fs.lines[line].hits if fs is not None and line in fs.lines else 0


def _find(stats, func):
    try:
        return func_stats(stats, func)
    except KeyError:
        return None


def test_a_loop_in_two_regions(prof, mod):
    with prof:
        mod.two_regions(prof)
    regions = prof.region_stats()
    assert list(regions) == ["select", "rollout"]
    assert body_hits(regions, "select", mod.work) == 3
    assert body_hits(regions, "rollout", mod.work) == 5
    assert func_stats(regions["select"], mod.work).calls == 1
    # The totals hold everything, the work outside any region included.
    assert func_stats(prof.get_stats(), mod.work).lines[marks(mod.work)["body"]].hits == 10
    assert prof.region_entries() == {"select": 1, "rollout": 1}
    m = marks(mod.two_regions)
    lines = func_stats(regions["select"], mod.two_regions).lines
    assert m["select"] in lines and m["rollout"] not in lines and m["outside"] not in lines


def test_nested_regions_bill_the_innermost(prof, mod):
    with prof:
        mod.nested(prof)
    regions = prof.region_stats()
    assert body_hits(regions, "outer", mod.work) == 4 + 1
    assert body_hits(regions, "inner", mod.work) == 6
    outer = func_stats(regions["outer"], mod.nested).lines
    m = marks(mod.nested)
    assert m["outer"] in outer and m["after"] in outer and m["inner"] not in outer


def test_a_generator_is_in_the_region_it_is_resumed_in(prof, mod):
    with prof:
        mod.resumed(prof)
    regions = prof.region_stats()
    assert body_hits(regions, "gen", mod.work) == 1 + 2 + 4
    assert body_hits(prof.region_stats(), "none", mod.work) == 0
    gen_lines = func_stats(regions["gen"], mod.steps).lines
    assert gen_lines[marks(mod.steps)["gyield"]].hits == 3
    assert func_stats(prof.get_stats(), mod.work).lines[marks(mod.work)["body"]].hits == 10
    assert prof.region_entries() == {"gen": 2}


def test_a_region_is_its_threads(prof, mod):
    with prof:
        mod.threads(prof)
    regions = prof.region_stats()
    # The thread started inside "main" ran work(7) outside it; the main thread's work(2) is in it.
    assert body_hits(regions, "main", mod.work) == 2
    # "thread" holds the other thread's work(9), not the main thread's work(3) meanwhile.
    assert body_hits(regions, "thread", mod.work) == 9
    assert func_stats(prof.get_stats(), mod.work).lines[marks(mod.work)["body"]].hits == 7 + 2 + 9 + 3


def test_regions_while_off_record_nothing(prof, mod):
    mod.two_regions(prof)  # not enabled
    with prof.region("early"):
        with prof:
            mod.work(4)
    assert prof.region_entries() == {}
    # Entered before recording began, "early" was still the thread's region while it recorded.
    assert body_hits(prof.region_stats(), "early", mod.work) == 4
    assert "select" not in prof.region_stats()
    prof.clear()
    assert prof.region_stats() == {} and prof.region_entries() == {}
    out = io.StringIO()
    prof.print_regions(stream=out)
    assert out.getvalue() == "No regions recorded.\n"


def test_a_region_name_must_be_text(prof):
    with pytest.raises(TypeError, match="non-empty str"):
        prof.region("")
    with pytest.raises(TypeError, match="non-empty str"):
        prof.region(3)  # type: ignore[arg-type]
    assert prof.region("x") is prof.region("x")


def test_print_regions(prof, mod):
    with prof:
        for _ in range(3):
            mod.two_regions(prof)
    out = io.StringIO()
    prof.print_regions(top_n=2, stream=out)
    text = out.getvalue()
    heads = [line for line in text.splitlines() if line.startswith("Region: ")]
    assert sorted(h.split()[1] for h in heads) == ["rollout", "select"]
    assert all("Entries: 3" in h and "Per entry:" in h and "% of the profiled time" in h for h in heads)
    assert text.count("Top 2 of ") == 2


def test_regions_survive_dump_load_and_view(prof, mod, tmp_path):
    with prof:
        mod.two_regions(prof)
        mod.nested(prof)
    (tmp_path / "out").mkdir()
    path = prof.dump(tmp_path / "out" / "l_h_1_0000000a.json")
    doc = json.loads(path.read_text())
    assert {r["name"]: r["entries"] for r in doc["regions"]} == {"select": 1, "rollout": 1, "outer": 1, "inner": 1}
    saved = LineProfiler.load(path)
    regions = saved.region_stats()
    assert body_hits(regions, "select", mod.work) == 3 and body_hits(regions, "inner", mod.work) == 6
    assert saved.region_entries() == prof.region_entries()
    printed, loaded = io.StringIO(), io.StringIO()
    prof.print_regions(stream=printed)
    saved.print_regions(stream=loaded)
    assert loaded.getvalue() == printed.getvalue()
    # Two processes' files merge region by region.
    prof.dump(tmp_path / "out" / "l_h_2_0000000b.json")
    merged = LineProfiler.load(tmp_path / "out")
    assert body_hits(merged.region_stats(), "rollout", mod.work) == 10
    assert merged.region_entries()["rollout"] == 2
    result = run_cli("view", path, "--sort", "self")
    assert result.returncode == 0, result.stderr
    after = result.stdout[result.stdout.index("REGIONS") :]
    assert "Region: rollout" in after and "Region: inner" in after and "Entries: 1" in after


def test_regions_are_cheap_to_leave_in_unprofiled_code(prof, mod):
    """No recording: entering and leaving only moves this thread's region number."""
    scope = prof.region("idle")
    for _ in range(1000):
        with scope:
            pass
    assert prof.region_entries() == {} and prof._tracer.set_region(0) == 0


def test_a_region_left_on_another_thread_is_ignored_there(prof, mod):
    scope = prof.region("crossing")
    scope.__enter__()
    other = threading.Thread(target=scope.__exit__, args=(None, None, None))
    other.start()
    other.join()
    with prof:
        mod.work(2)
    scope.__exit__(None, None, None)
    assert body_hits(prof.region_stats(), "crossing", mod.work) == 2


TIMED = """\
def helper(adv):
    adv(10)
    adv(20)


def timed(p, adv):
    with p.region("r"):
        adv(100)
        helper(adv)
        with p.region("q"):
            helper(adv)
    adv(7)
"""


def test_region_times_are_exact(tmp_path, test_clock):
    mod = write_module(tmp_path / "proj", "lp_regions_timed", TIMED)
    p = LineProfiler(project_folder=tmp_path / "proj")
    with p:
        mod.timed(p, test_clock)
    regions = p.region_stats()
    own = {name: sum(line.self_ns for f in fs.values() for line in f.lines.values()) for name, fs in regions.items()}
    assert own == {"r": 130, "q": 30}
    assert func_stats(regions["r"], mod.helper).calls == 1 and func_stats(regions["q"], mod.helper).calls == 1
    assert func_stats(p.get_stats(), mod.timed).time_ns == 167


def test_regions_while_line_tables_grow(tmp_path):
    """Tables that start empty and grow line by line: the regions' grow with them, and the
    lines open while they move (in the main table and the regions') stay counted."""
    from lineprofiler.lines._tracer_testing import set_presize

    mod = write_module(tmp_path / "proj", "lp_regions_grow", WORK)
    previous = set_presize(False)
    try:
        p = LineProfiler(project_folder=tmp_path / "proj")
        with p:
            mod.nested(p)
            mod.two_regions(p)
    finally:
        set_presize(previous)
    regions = p.region_stats()
    assert body_hits(regions, "outer", mod.work) == 5 and body_hits(regions, "inner", mod.work) == 6
    assert body_hits(regions, "select", mod.work) == 3 and body_hits(regions, "rollout", mod.work) == 5
    work = func_stats(p.get_stats(), mod.work)
    assert work.lines[marks(mod.work)["body"]].hits == 4 + 6 + 1 + 3 + 5 + 2 and work.calls == 6
    for fs in [*p.get_stats().values(), *(f for r in regions.values() for f in r.values())]:
        assert all(line.self_ns is not None and 0 <= line.self_ns <= line.time_ns for line in fs.lines.values())
