"""Self time per line, calls per function, and ``<module>`` tables after the functions'."""

import io
import json
import re
import sys
import time

import lp_workloads as wl
from lp_helpers import func_stats, marks, write_module

from lineprofiler import LineProfiler
from lineprofiler.runfiles import linesfile

RUNNER = "def run(p, fn, *args):\n    with p:\n        return fn(*args)\n"


def profiled(here, tmp_path, fn, *args) -> LineProfiler:
    """fn(*args) profiled, started from a module outside the project folder."""
    runner = write_module(tmp_path / "outside", f"lp_self_runner_{fn.__name__}", RUNNER)
    p = LineProfiler(project_folder=here)
    runner.run(p, fn, *args)
    return p


def self_times(stats, func) -> dict[str, int | None]:
    fs = func_stats(stats, func)
    return {name: fs.lines[ln].self_ns for name, ln in marks(func).items() if ln in fs.lines}


def printed(method, **kwargs) -> str:
    buf = io.StringIO()
    method(file=buf, **kwargs)
    return buf.getvalue()


def test_a_calling_line_keeps_only_its_own_time(here, tmp_path, test_clock):
    stats = profiled(here, tmp_path, wl.timed_work, test_clock).get_stats()
    work, helper = func_stats(stats, wl.timed_work), func_stats(stats, wl.timed_helper)
    m = marks(wl.timed_work)
    # Line b calls timed_helper: its 30 ns are b's time, not its self time; they are helper's.
    assert work.lines[m["b"]].time_ns == 30 and work.lines[m["b"]].self_ns == 0
    assert self_times(stats, wl.timed_work) == {"a": 100, "b": 0, "c": 5}
    assert self_times(stats, wl.timed_helper) == {"h1": 10, "h2": 20}
    assert work.self_ns == 105 and helper.self_ns == 30
    # Self times add up to the time of the outermost frame: nothing counted twice or lost.
    assert work.self_ns + helper.self_ns == work.time_ns == 135


def test_a_generator_resumed_from_a_line_takes_its_time_away(here, tmp_path, test_clock):
    stats = profiled(here, tmp_path, wl.timed_consume, test_clock).get_stats()
    consume = self_times(stats, wl.timed_consume)
    # next(g) runs the generator's lines (1 ns, then 2 ns): none of it is the calling line's.
    assert consume["k2"] == 0 and consume["k4"] == 0
    assert consume["k3"] == 1000 and consume["k5"] == 50
    assert self_times(stats, wl.timed_gen) == {"g1": 1, "g2": 0, "g3": 2, "g4": 0}


def test_self_time_with_the_real_clock(here, tmp_path):
    """The calling line of a slow callee: large time, small self time; the callee has the time."""
    mod = write_module(
        tmp_path / "proj",
        "lp_self_slow",
        "import time\n\n"
        "def slow():\n"
        "    time.sleep(0.05)  # @sleep\n\n"
        "def caller():\n"
        "    slow()  # @call\n"
        "    return 1  # @ret\n",
    )
    runner = write_module(tmp_path / "outside", "lp_self_real_runner", RUNNER)
    p = LineProfiler(project_folder=tmp_path / "proj")
    runner.run(p, mod.caller)
    stats = p.get_stats()
    call = func_stats(stats, mod.caller).lines[marks(mod.caller)["call"]]
    sleep = func_stats(stats, mod.slow).lines[marks(mod.slow)["sleep"]]
    assert call.time_ns >= 50_000_000
    assert call.self_ns is not None and call.self_ns < call.time_ns / 10
    # time.sleep is outside the project: its time stays the sleeping line's own.
    assert sleep.self_ns is not None and sleep.self_ns >= 50_000_000
    for fs in stats.values():
        for line in fs.lines.values():
            assert line.self_ns is not None and 0 <= line.self_ns <= line.time_ns


def test_calls_count_frames_not_line_hits(here, tmp_path):
    def work():
        for _ in range(7):
            wl.loop(10)  # 10 iterations: about 22 line hits per call
        wl.fib(6)  # 25 calls, recursive
        for _ in range(3):
            wl.consume_countdown(4)  # one generator frame each, resumed 4 times
        return sum(wl.countdown(5))

    stats = profiled(here, tmp_path, work).get_stats()
    loop = func_stats(stats, wl.loop)
    assert loop.calls == 7 and loop.hits > 7 * 10
    assert func_stats(stats, wl.fib).calls == 25
    assert func_stats(stats, wl.consume_countdown).calls == 3
    assert func_stats(stats, wl.countdown).calls == 4
    out = printed(profiled(here, tmp_path, wl.fib, 6).print_stats)
    assert re.search(r"Total time: .*   Self: .*   Calls: 25\n", out), out


def test_module_tables_come_last(tmp_path):
    """A module's top level (its imports) holds the most time, yet its table is the last."""
    proj = tmp_path / "proj"
    write_module(proj, "lp_self_dep", "import time\n\ntime.sleep(0.03)\n\ndef quick():\n    return 1\n")
    code = compile("import lp_self_dep\nlp_self_dep.quick()\n", str(proj / "main.py"), "exec")
    sys.modules.pop("lp_self_dep", None)
    sys.path.insert(0, str(proj))
    try:
        p = LineProfiler(project_folder=proj)
        with p:
            exec(code, {"__name__": "lp_self_main"})
    finally:
        sys.path.remove(str(proj))
    stats = p.get_stats()
    assert max(stats.values(), key=lambda f: f.time_ns).qualname == "<module>"
    for sort_by in ("time", "self", "hits"):
        out = printed(p.print_stats, sort_by=sort_by)
        titles = re.findall(r"^Function: (\S+)", out, re.M)
        assert titles[0] == "quick" and set(titles[1:]) == {"<module>"}, (sort_by, titles)


def test_sort_by_self(here, tmp_path, test_clock):
    p = profiled(here, tmp_path, wl.timed_work, test_clock)
    out = printed(p.print_stats, sort_by="self")
    # timed_work (self 105) before timed_helper (30); inside, a (100), c (5), b (0).
    assert out.index("Function: timed_work") < out.index("Function: timed_helper")
    m = marks(wl.timed_work)
    work_table = out[out.index("Function: timed_work") : out.index("Function: timed_helper")]
    rows = [int(line.split()[0]) for line in work_table.splitlines() if re.match(r"\s+\d+\s", line)]
    assert rows == [m["a"], m["c"], m["b"]]
    top = printed(p.print_global_top_stats, sort_by="self", top_n=2)
    assert "Top 2 of 5 lines by self" in top and f"lp_workloads.py:{m['a']}" in top


def test_self_time_and_calls_survive_the_file(here, tmp_path, test_clock):
    p = profiled(here, tmp_path, wl.timed_work, test_clock)
    loaded = LineProfiler.load(p.dump(tmp_path / "lines.json")).get_stats()
    assert self_times(loaded, wl.timed_work) == {"a": 100, "b": 0, "c": 5}
    assert func_stats(loaded, wl.timed_work).calls == 1
    assert printed(LineProfiler.load(tmp_path / "lines.json").print_stats) == printed(p.print_stats)


def test_a_version_1_file_loads_with_self_time_and_calls_unknown(here, tmp_path, test_clock):
    p = profiled(here, tmp_path, wl.timed_work, test_clock)
    doc = json.loads(p.dump(tmp_path / "lines.json").read_text())
    doc["schema_version"] = 1
    doc.pop("regions")
    for fn in doc["functions"]:
        fn.pop("calls")
        fn["lines"] = [row[:4] for row in fn["lines"]]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    saved = LineProfiler.load(old)
    work = func_stats(saved.get_stats(), wl.timed_work)
    assert work.calls is None and work.self_ns is None
    assert all(line.self_ns is None and line.time_ns > 0 for line in work.lines.values())
    out = printed(saved.print_stats, sort_by="self")
    assert "Self: -   Calls: -" in out and " 0 ns" not in out  # unknown, never zero
    # A version 1 row with a fifth item is malformed.
    doc["functions"][0]["lines"][0].append(5)
    old.write_text(json.dumps(doc))
    try:
        linesfile.read_lines_file(old)
    except linesfile.LinesFileError as error:
        assert "malformed row" in str(error)
    else:
        raise AssertionError("a version 1 row of five items was accepted")


def test_an_old_and_a_new_file_merge_with_self_time_unknown(here, tmp_path, test_clock):
    p = profiled(here, tmp_path, wl.timed_work, test_clock)
    (tmp_path / "runs").mkdir()
    new = p.dump(tmp_path / "runs" / "l_h_1_00000001.json")
    doc = json.loads(new.read_text())
    doc["schema_version"] = 1
    doc["process"]["pid"] = 2
    doc.pop("regions")
    for fn in doc["functions"]:
        fn.pop("calls")
        fn["lines"] = [row[:4] for row in fn["lines"]]
    (tmp_path / "runs" / "l_h_2_00000002.json").write_text(json.dumps(doc))
    work = func_stats(LineProfiler.load(tmp_path / "runs").get_stats(), wl.timed_work)
    assert work.calls is None and work.time_ns == 270
    assert all(line.self_ns is None for line in work.lines.values())


def test_self_times_add_up_to_the_outermost_frame(tmp_path):
    """Self times of one thread add up to the recorded time of its outermost frame."""
    mod = write_module(
        tmp_path / "proj",
        "lp_self_sum",
        "import time\n\n"
        "def leaf(n):\n"
        "    time.sleep(n)\n\n"
        "def mid():\n"
        "    leaf(0.01)\n"
        "    leaf(0.02)\n\n"
        "def top():\n"
        "    mid()\n"
        "    leaf(0.005)\n",
    )
    runner = write_module(tmp_path / "outside", "lp_self_sum_runner", RUNNER)
    p = LineProfiler(project_folder=tmp_path / "proj")
    started = time.perf_counter_ns()
    runner.run(p, mod.top)
    elapsed = time.perf_counter_ns() - started
    stats = p.get_stats()
    total_self = sum(fs.self_ns or 0 for fs in stats.values())
    # Each line's ticks are rounded to ns on their own: a few ns of rounding, no more.
    assert abs(total_self - func_stats(stats, mod.top).time_ns) <= 20
    assert 35_000_000 <= total_self <= elapsed
