"""Per-code-object decisions: freed and reused code objects, foreign code not kept alive."""

import gc
import weakref

from lineprofiler import LineProfiler
from lineprofiler.lines._tracer_testing import set_foreign_limit, set_presize

FOREIGN_SRC = "def f():\n    return 1\nf()\n"
PROJECT_SRC = "def g():\n    return 2\ng()\n"


def test_freed_and_reused_code_objects_are_decided_again(tmp_path):
    """A project code object allocated where a foreign one was just freed must not inherit the
    foreign decision. code.replace() makes a same-sized object right after the free, so the
    address is reused (checked: the test asserts the reuse happened)."""
    project = tmp_path / "proj"
    project.mkdir()
    inside = str(project / "made_inside.py")  # no such file: source unavailable, still ours
    base = compile("x = 1\ny = 2\n", str(tmp_path / "made_outside.py"), "exec")
    p = LineProfiler(project_folder=project)
    n, reused = 200, 0
    with p:
        for i in range(n):
            foreign = base.replace(co_name=f"m{i}")
            exec(foreign, {})  # decided foreign, its locations disabled
            addr = id(foreign)
            del foreign
            mine = base.replace(co_filename=inside)
            reused += id(mine) == addr
            exec(mine, {})
            del mine
    assert reused > n // 2
    stats = p.get_stats()
    assert list(stats) == [(inside, "<module>", 1)]
    assert {ln: s.hits for ln, s in stats[(inside, "<module>", 1)].lines.items()} == {1: n, 2: n}


def test_foreign_code_is_not_kept_alive(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    p = LineProfiler(project_folder=project)
    ns: dict = {}
    with p:
        exec(compile(FOREIGN_SRC, str(tmp_path / "elsewhere.py"), "exec"), ns)
        code_ref = weakref.ref(ns["f"].__code__)
        ns.clear()
        gc.collect()
        assert code_ref() is None  # the tracer holds no reference to foreign code


def test_many_foreign_code_objects_stay_correct(tmp_path):
    # More foreign code objects than the decision cache keeps: it is flushed and rebuilt, and
    # project code is recorded throughout.
    project = tmp_path / "proj"
    project.mkdir()
    inside = str(project / "inside.py")
    p = LineProfiler(project_folder=project)
    keep = []
    previous = set_foreign_limit(50)
    try:
        with p:
            for i in range(1000):
                code = compile("x = 1", f"{tmp_path}/foreign_{i}.py", "exec")
                exec(code, {})
                keep.append(code)  # alive: their addresses cannot be reused
                assert p._tracer.n_foreign <= 50
                if i % 100 == 0:
                    exec(compile(PROJECT_SRC, inside, "exec"), {})
            for code in keep:  # decided again after the flushes: still foreign
                exec(code, {})
    finally:
        set_foreign_limit(previous)
    assert previous == 65536
    stats = p.get_stats()
    assert {k.filename for k in stats} == {inside}
    assert stats[(inside, "g", 1)].lines[2].hits == 10


def test_line_arrays_grow_under_open_frames(here, test_clock):
    """Without pre-sized arrays, every new line grows the array while recursive frames of the
    same code hold open lines in it: counts and exact times must survive the moves."""
    import lp_workloads as wl
    from lp_helpers import hits, times

    previous = set_presize(False)
    try:
        p = LineProfiler(project_folder=here)
        with p:
            wl.fib(10)
            wl.timed_work(test_clock)
            wl.timed_consume(test_clock)
            wl.timed_deep(test_clock, 3)
    finally:
        set_presize(previous)
    assert previous is True
    stats = p.get_stats()
    assert hits(stats, wl.fib) == {"test": 177, "base": 89, "rec": 88}
    assert times(stats, wl.timed_work) == {"a": 100, "b": 30, "c": 5}
    assert times(stats, wl.timed_consume) == {"k1": 0, "k2": 1, "k3": 1000, "k4": 2, "k5": 50, "k6": 0}
    # `far` is first reached by the innermost frame that gets there, while the outer frames hold
    # `r` open (paused under the recursion): each bills its 2 ns after the inner call returns
    # into the moved array. The inner calls' time is their own lines' (see lp_nest()).
    assert hits(stats, wl.timed_deep) == {"t": 4, "z": 1, "r": 3, "far": 3, "ret": 3}
    assert times(stats, wl.timed_deep) == {"t": 0, "z": 1, "r": 3 * 2, "far": 9, "ret": 0}
