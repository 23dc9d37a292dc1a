"""Project code called from code outside the project, and back, many times: exact hits every
time, whichever way the tracer keeps foreign frames cheap (on 3.11 a frame-evaluation hook runs
foreign frames untraced once their code is known; on 3.12+ DISABLE), and with a profile function
(cProfile) running beside it."""

import cProfile

from lp_helpers import write_module

from lineprofiler import LineProfiler

OUTSIDE = """\
def each(fn, items):
    out = []
    for x in items:
        out.append(fn(x))
    return out

def deep(fn, n):
    if n == 0:
        return fn(0)
    return deep(fn, n - 1) + 1
"""

PROJECT = """\
def leaf(x):
    y = x * 2
    return y + 1

def middle(x):
    return sum(OUT.each(leaf, range(x)))

def main(rounds):
    total = 0
    for r in range(rounds):
        total += sum(OUT.each(middle, range(4)))
        total += OUT.deep(leaf, 3)
    return total
"""


def _hits(stats, name):
    for (_, qualname, _), fs in stats.items():
        if qualname == name:
            return {ln: line.hits for ln, line in fs.lines.items()}
    return {}


def _load(tmp_path, tag):
    outside = write_module(tmp_path / "outside", f"lp_outside_{tag}", OUTSIDE)
    project = write_module(tmp_path / "project", f"lp_project_{tag}", PROJECT)
    project.OUT = outside
    return project


def _expected_value(rounds):
    middle = [sum(2 * x + 1 for x in range(i)) for i in range(4)]
    return rounds * (sum(middle) + 1 + 3)


def _check(p, rounds, blocks=1):
    stats = p.get_stats()
    calls_leaf = rounds * (0 + 1 + 2 + 3 + 1)
    assert _hits(stats, "leaf") == {2: calls_leaf, 3: calls_leaf}
    assert _hits(stats, "middle") == {6: 4 * rounds}
    assert _hits(stats, "main") == {9: blocks, 10: rounds + blocks, 11: rounds, 12: rounds, 13: blocks}
    assert not any("lp_outside" in key.filename for key in stats)
    total = {key.qualname: fs.time_ns for key, fs in stats.items()}
    # callees, through foreign frames, are inside main's lines (middle's include leaf's)
    assert total["main"] >= total["middle"] and total["main"] >= total["leaf"]


def test_project_called_from_foreign_code(tmp_path):
    mod = _load(tmp_path, "plain")
    p = LineProfiler(project_folder=tmp_path / "project")
    with p:
        value = mod.main(30)
    assert value == _expected_value(30)
    _check(p, 30)


def test_beside_a_profile_function(tmp_path):
    mod = _load(tmp_path, "cprof")
    p = LineProfiler(project_folder=tmp_path / "project")
    prof = cProfile.Profile()  # 3.11: a profile function; 3.12+: sys.monitoring's PROFILER_ID
    prof.enable()
    try:
        with p:
            value = mod.main(20)
    finally:
        prof.disable()
    assert value == _expected_value(20)
    _check(p, 20)
    leaf_calls = [entry.callcount for entry in prof.getstats() if getattr(entry.code, "co_name", "") == "leaf"]
    assert leaf_calls == [20 * 7]


def test_again_after_foreign_code_is_known(tmp_path):
    mod = _load(tmp_path, "again")
    p = LineProfiler(project_folder=tmp_path / "project")
    for _ in range(3):  # later blocks find the foreign code already decided
        with p:
            mod.main(5)
    _check(p, 15, blocks=3)
