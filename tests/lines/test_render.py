"""The two printers: their formats, their options, and every bad argument."""

import io
import re

import lp_workloads as wl
import pytest
from lp_helpers import marks, write_module

from lineprofiler import LineProfiler
from lineprofiler.lines.render import RECURSION_RULE, format_ns


@pytest.fixture
def timed(here, test_clock, tmp_path):
    """A profiler holding exact times: timed_work a=100, b=30, c=5 ns; timed_helper 10, 20,
    and nothing else (the `with` block lives in a module outside the project folder)."""
    runner = write_module(tmp_path / "outside", "lp_render_runner", RUNNER)
    p = LineProfiler(project_folder=here)
    runner.run(p, wl.timed_work, test_clock)
    return p


RUNNER = "def run(p, fn, *args):\n    with p:\n        return fn(*args)\n"


def printed(method, **kwargs) -> str:
    buf = io.StringIO()
    method(file=buf, **kwargs)
    return buf.getvalue()


def table_rows(text: str) -> list[list[str]]:
    """The rows under each dashed rule, split on runs of two or more spaces."""
    rows, inside, header = [], False, ""
    for prev, line in zip([""] + text.splitlines(), text.splitlines(), strict=False):
        if set(line) == {"-"}:
            header = prev
            inside = True
            continue
        if not line.strip():
            inside = False
            continue
        if inside:
            # the source (last column) may itself hold double spaces: split off at most 5/6 cells
            rows.append(re.split(r"\s{2,}", line.strip(), maxsplit=len(re.split(r"\s{2,}", header.strip())) - 1))
    return rows


def test_print_stats_format(timed):
    out = printed(timed.print_stats)
    m = marks(wl.timed_work)
    work_at = wl.timed_work.__code__.co_firstlineno
    assert f"Function: timed_work at lp_workloads.py:{work_at}" in out
    assert "Total time: 135 ns   Self: 105 ns   Calls: 1" in out
    assert out.splitlines()[-1] == RECURSION_RULE  # what Time means, recursion included
    header = [ln for ln in out.splitlines() if ln.strip().startswith("Line")][0]
    assert re.split(r"\s{2,}", header.strip()) == ["Line", "Hits", "Time", "Self", "Per hit", "% func", "Source"]
    # functions by total time (work 135 before helper 30), lines by time inside each
    assert out.index("Function: timed_work") < out.index("Function: timed_helper")
    rows = table_rows(out)
    assert rows[0] == [str(m["a"]), "1", "100 ns", "100 ns", "100 ns", "74.1", "adv(100)  # @a"]
    assert rows[1][:6] == [str(m["b"]), "1", "30 ns", "0 ns", "30 ns", "22.2"]  # its time is timed_helper's
    assert rows[2][:6] == [str(m["c"]), "1", "5 ns", "5 ns", "5 ns", "3.7"]


def test_print_stats_options(timed):
    m = marks(wl.timed_work)
    by_line = table_rows(printed(timed.print_stats, sort_by="line"))
    h = marks(wl.timed_helper)  # defined above timed_work in the file: its table comes first
    assert [r[0] for r in by_line] == [str(h["h1"]), str(h["h2"]), str(m["a"]), str(m["b"]), str(m["c"])]
    top1 = printed(timed.print_stats, top_n_lines=1)
    assert "(top 1 of 3 lines by time)" in top1
    assert len(table_rows(top1)) == 2  # one line from each of the two functions
    only_big = printed(timed.print_stats, min_time_us=0.1)  # 100 ns: only timed_work (135)
    assert "Function: timed_work" in only_big and "Function: timed_helper" not in only_big
    none = printed(timed.print_stats, min_time_us=1)
    assert none == "No function took at least 1 us (2 recorded).\n"


def test_print_global_top_stats_format(timed):
    out = printed(timed.print_global_top_stats)
    m, h = marks(wl.timed_work), marks(wl.timed_helper)
    assert out.splitlines()[0] == "Top 5 of 5 lines by time (2 functions)"
    assert out.splitlines()[-1] == RECURSION_RULE
    rows = table_rows(out)
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5"]
    assert rows[0][1:4] == ["100 ns", "100 ns", "1"]
    assert rows[0][-3:] == [f"lp_workloads.py:{m['a']}", "timed_work", "adv(100)  # @a"]
    assert [r[1] for r in rows] == ["100 ns", "30 ns", "20 ns", "10 ns", "5 ns"]
    assert rows[2][-3:] == [f"lp_workloads.py:{h['h2']}", "timed_helper", "adv(20)  # @h2"]
    assert "% wall" in out.splitlines()[1]


def test_print_global_top_stats_options(timed):
    assert len(table_rows(printed(timed.print_global_top_stats, top_n=2))) == 2
    assert len(table_rows(printed(timed.print_global_top_stats, top_n=None))) == 5
    big = table_rows(printed(timed.print_global_top_stats, min_time_us=0.021))
    assert [r[1] for r in big] == ["100 ns", "30 ns"]
    by_line = table_rows(printed(timed.print_global_top_stats, sort_by="line"))
    locs = [r[-3] for r in by_line]
    assert locs == sorted(locs, key=lambda s: int(s.rsplit(":", 1)[1]))
    assert printed(timed.print_global_top_stats, min_time_us=5) == "No line took at least 5 us (5 recorded).\n"


def test_hits_sort(here, tmp_path):
    p = LineProfiler(project_folder=here)
    write_module(tmp_path / "outside", "lp_render_runner2", RUNNER).run(p, wl.loop, 30)
    rows = table_rows(printed(p.print_stats, sort_by="hits"))
    assert [int(r[1].replace(",", "")) for r in rows] == [31, 30, 1, 1]
    top = table_rows(printed(p.print_global_top_stats, sort_by="hits", top_n=1))
    assert top[0][3] == "31"


def test_empty_profiler_prints_a_line(here):
    p = LineProfiler(project_folder=here)
    assert printed(p.print_stats) == "No line timings recorded.\n"
    assert printed(p.print_global_top_stats) == "No line timings recorded.\n"


def test_default_file_is_stdout(timed, capsys):
    timed.print_stats()
    timed.print_global_top_stats()
    out = capsys.readouterr().out
    assert "Function: timed_work" in out and "Top 5 of 5 lines" in out


def test_source_unavailable(tmp_path):
    # Code whose file does not exist inside the project folder (generated, deleted).
    ghost = tmp_path / "ghost.py"
    code = compile("def f(n):\n    return n + 1\nfor i in range(3):\n    f(i)\n", str(ghost), "exec")
    p = LineProfiler(project_folder=tmp_path)
    with p:
        exec(code, {})
    stats = p.get_stats()
    assert {k.qualname for k in stats} == {"<module>", "f"}
    assert all(ln.source is None for fs in stats.values() for ln in fs.lines.values())
    out = printed(p.print_stats)
    assert "<source unavailable>" in out and "Function: f at ghost.py:1" in out
    assert "<source unavailable>" in printed(p.print_global_top_stats)


BAD = [
    ({"sort_by": "speed"}, ValueError, "sort_by must be one of 'time', 'self', 'hits', 'line'; got 'speed'"),
    ({"sort_by": None}, ValueError, "sort_by must be one of"),
    ({"min_time_us": -1}, ValueError, "min_time_us must be >= 0"),
    ({"min_time_us": float("nan")}, ValueError, "min_time_us must be >= 0"),
    ({"min_time_us": "1"}, TypeError, "min_time_us must be a number"),
    ({"min_time_us": True}, TypeError, "min_time_us must be a number"),
]


@pytest.mark.parametrize("kwargs, exc, msg", BAD)
def test_bad_arguments_both_printers(here, kwargs, exc, msg):
    p = LineProfiler(project_folder=here)
    for method in (p.print_stats, p.print_global_top_stats):
        with pytest.raises(exc, match=re.escape(msg)):
            method(file=io.StringIO(), **kwargs)


@pytest.mark.parametrize(
    "kwargs, exc",
    [({"top_n_lines": 0}, ValueError), ({"top_n_lines": -3}, ValueError), ({"top_n_lines": 1.5}, TypeError),
     ({"top_n_lines": True}, TypeError)],
)
def test_bad_top_n_lines(here, kwargs, exc):
    with pytest.raises(exc, match="top_n_lines"):
        LineProfiler(project_folder=here).print_stats(file=io.StringIO(), **kwargs)


@pytest.mark.parametrize(
    "kwargs, exc",
    [({"top_n": 0}, ValueError), ({"top_n": -1}, ValueError), ({"top_n": "5"}, TypeError)],
)
def test_bad_top_n(here, kwargs, exc):
    with pytest.raises(exc, match="top_n"):
        LineProfiler(project_folder=here).print_global_top_stats(file=io.StringIO(), **kwargs)


def test_format_ns_units():
    assert format_ns(0) == "0 ns"
    assert format_ns(999) == "999 ns"
    assert format_ns(1500) == "1.50 us"
    assert format_ns(2_500_000) == "2.50 ms"
    assert format_ns(3_210_000_000) == "3.210 s"
