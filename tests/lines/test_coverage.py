"""coverage.py in the same process as the profiler (a real coverage run, in a child process)."""

import json
import subprocess
import sys
import textwrap

import pytest

MODULE = textwrap.dedent(
    """\
    def before():
        a = 1
        return a

    def during(n):
        t = 0
        for i in range(n):
            t += i
        return t

    def after():
        b = 2
        return b
    """
)

SCRIPT = textwrap.dedent(
    """\
    import json, sys
    import coverage
    sys.path.insert(0, sys.argv[1])
    from lineprofiler import LineProfiler

    order = sys.argv[2]
    cov = coverage.Coverage(data_file=None, config_file=False, include=[sys.argv[1] + "/*"])
    if sys.version_info >= (3, 12):
        cov.set_option("run:core", "sysmon")
    p = LineProfiler(project_folder=sys.argv[1])
    if order == "profiler-inside":
        cov.start()
        import covmod
        covmod.before()
        with p:
            covmod.during(10)
        covmod.after()
        holder = sys.monitoring.get_tool(1) if sys.version_info >= (3, 12) else None
        cov.stop()
    else:  # coverage starts and stops inside the profiler's block
        with p:
            cov.start()
            import covmod
            covmod.before()
            covmod.during(10)
            covmod.after()
            holder = sys.monitoring.get_tool(1) if sys.version_info >= (3, 12) else None
            cov.stop()
    lines = sorted(cov.get_data().lines(covmod.__file__) or [])
    stats = p.get_stats()
    during = stats[(covmod.__file__, "during", 5)]
    print(json.dumps({
        "holder": holder,
        "covered": lines,
        "during_hits": {str(k): v.hits for k, v in during.lines.items()},
        "functions": sorted(k.qualname for k in stats),
    }))
    """
)


def run(tmp_path, order):
    (tmp_path / "covmod.py").write_text(MODULE)
    script = tmp_path / "run_cov.py"
    script.write_text(SCRIPT)
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path), order],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


ALL_LINES = [1, 2, 3, 5, 6, 7, 8, 9, 11, 12, 13]
DURING_HITS = {"6": 1, "7": 11, "8": 10, "9": 1}


@pytest.mark.parametrize("order", ["profiler-inside", "coverage-inside"])
@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring coexistence is 3.12+")
def test_coverage_sysmon_and_profiler_together(tmp_path, order):
    res = run(tmp_path, order)
    assert res["holder"] == "coverage.py"  # coverage really ran on sys.monitoring, id 1
    assert res["covered"] == ALL_LINES  # coverage missed nothing
    assert res["during_hits"] == DURING_HITS  # and neither did the profiler
    assert "during" in res["functions"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 only: one trace function per thread")
def test_coverage_ctrace_is_suspended_then_restored_on_311(tmp_path):
    """On 3.11 the profiler's trace function replaces coverage's while enabled (documented);
    coverage's is put back on disable, so lines after the block are covered again."""
    res = run(tmp_path, "profiler-inside")
    assert res["during_hits"] == DURING_HITS
    covered = set(res["covered"])
    assert {1, 2, 3, 11, 12, 13} <= covered  # before and after the block
    assert not {6, 7, 8, 9} & covered  # inside it, the profiler had the thread
