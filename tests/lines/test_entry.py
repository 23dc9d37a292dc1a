"""Where frames are entered: 3.12 pushes a frame at its first LINE event (no PY_START), 3.13+
at PY_START, 3.11 at its first line event; each tells frames apart by the running frame, so
one-line functions, lambdas and recursion of them are counted exactly, and a thread that ends
and a new one that may reuse its thread key start from clean stacks."""

import threading

from lp_helpers import write_module

from lineprofiler import LineProfiler

SOURCE = """\
def one(x): return x + 1
def rec(n): return n if n < 1 else rec(n - 1) + 1
square = lambda x: x * x  # noqa: E731
def gen_one(n): yield from range(n)

def main(n):
    total = 0
    for i in range(n):
        total += one(i)
        total += square(i)
    total += rec(5)
    total += sum(gen_one(3))
    return total
"""


def _hits(stats, name):
    for (_, qualname, _), fs in stats.items():
        if qualname == name:
            return {ln: line.hits for ln, line in fs.lines.items()}
    return {}


def test_one_line_functions_and_recursion(tmp_path):
    mod = write_module(tmp_path, "lp_entry_mod", SOURCE)
    p = LineProfiler(project_folder=tmp_path)
    with p:
        value = mod.main(10)
    assert value == sum(i + 1 + i * i for i in range(10)) + 5 + 3
    stats = p.get_stats()
    assert _hits(stats, "one") == {1: 10}
    assert _hits(stats, "rec") == {2: 6}
    assert _hits(stats, "<lambda>") == {3: 10}
    assert _hits(stats, "main") == {7: 1, 8: 11, 9: 10, 10: 10, 11: 1, 12: 1, 13: 1}
    # main's line 11 calls rec: its time includes all six rec frames
    rec_time = sum(line.time_ns for line in next(fs for k, fs in stats.items() if k.qualname == "rec").lines.values())
    main_lines = next(fs for k, fs in stats.items() if k.qualname == "main").lines
    assert main_lines[11].time_ns >= rec_time / 6


def test_threads_one_after_another(tmp_path):
    mod = write_module(tmp_path, "lp_entry_threads", SOURCE)
    p = LineProfiler(project_folder=tmp_path)
    with p:
        for _ in range(20):  # each thread ends before the next starts, so they may share a key
            t = threading.Thread(target=mod.main, args=(3,))
            t.start()
            t.join()
        mod.main(3)
    stats = p.get_stats()
    assert _hits(stats, "one") == {1: 63}
    assert _hits(stats, "rec") == {2: 126}
    assert _hits(stats, "main")[13] == 21


SHAPES = """\
def one(x): return x + 1
lam = lambda x: x * 2  # noqa: E731
def multi(x):
    y = x + 1
    return y
def outer():
    z = 1
    def clos(x): return x + z
    return clos
def gen1(n): yield n
async def co1(): return 1
def docfn():
    "doc"
def semi(x): y = x; return y  # noqa: E702

def run(restart):
    clos = outer()
    for i in range(3):
        one(i); lam(i); multi(i); clos(i)  # noqa: E702
        list(gen1(i)); list(x for x in range(2))  # noqa: E702
        try:
            co1().send(None)
        except StopIteration:
            pass
        docfn(); semi(i)  # noqa: E702
        restart()
"""


def test_every_shape_of_frame_is_entered(tmp_path):
    import sys

    mod = write_module(tmp_path, "lp_entry_shapes", SHAPES)
    # Another tool re-arming every DISABLE mid-run (3.12+) must not change a count.
    restart = getattr(getattr(sys, "monitoring", None), "restart_events", lambda: None)
    p = LineProfiler(project_folder=tmp_path)
    with p:
        mod.run(restart)
    stats = p.get_stats()
    assert _hits(stats, "one") == {1: 3}
    assert _hits(stats, "<lambda>") == {2: 3}
    assert _hits(stats, "multi") == {4: 3, 5: 3}
    assert _hits(stats, "outer.<locals>.clos") == {8: 3}
    assert _hits(stats, "gen1")[10] >= 3
    assert _hits(stats, "co1") == {11: 3}
    assert _hits(stats, "docfn") == {12: 3}  # a docstring-only body runs on its def line
    assert _hits(stats, "semi") == {14: 3}
    assert _hits(stats, "run.<locals>.<genexpr>")[20] >= 3
    assert _hits(stats, "run")[19] == 3
