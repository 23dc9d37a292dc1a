"""The C tracer against the pure-Python reference (lp_reference.py): hits and exact times."""

import lp_workloads as wl
from lp_helpers import write_module
from lp_reference import Reference

from lineprofiler import LineProfiler
from lineprofiler.lines._tracer_testing import fake_clock, set_presize

RUNNER = "def run(p, fn, *args):\n    with p:\n        return fn(*args)\n"


def c_result(here, tmp_path, presize):
    runner = write_module(tmp_path / "outside", f"lp_ref_runner_{presize}", RUNNER)
    p = LineProfiler(project_folder=here)
    with fake_clock(callback_cost=1000) as advance:
        previous = set_presize(presize)
        try:
            value = runner.run(p, wl.diff_main, advance)
        finally:
            set_presize(previous)
    stats = p.get_stats()
    return value, {k: {n: [ln.hits, ln.time_ns] for n, ln in fs.lines.items()} for k, fs in stats.items()}


def test_c_tracer_matches_reference(here, tmp_path):
    p = LineProfiler(project_folder=here)
    import lp_reference

    own = lp_reference.__file__  # the reference's own lines run inside its session: not workload
    ref = Reference(lambda code: code.co_filename != own and p.is_project_file(code.co_filename))
    value_ref = ref.run(wl.diff_main)
    expected = ref.result()
    assert expected  # the reference saw the workload
    for presize in (True, False):
        value, got = c_result(here, tmp_path, presize)
        assert value == value_ref
        assert set(got) == set(expected)
        for key in expected:
            assert got[key] == expected[key], key
