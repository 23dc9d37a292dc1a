"""kernprof's ``@profile`` under ``lineprofiler run``: a script written for kernprof (``@profile``
on a function, no import) runs unchanged, in the workers it starts too, and the builtin is gone
once the run is over."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from helpers.cli import run_cli_process
from lineprofiler import LineProfiler

KERNPROF_SCRIPT = """\
import sys


@profile
def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def in_worker(n, queue):
    queue.put(work(n))


if __name__ == "__main__":
    print("result", work(40))
    if len(sys.argv) > 1:
        import multiprocessing

        ctx = multiprocessing.get_context(sys.argv[1])
        queue = ctx.Queue()
        worker = ctx.Process(target=in_worker, args=(25, queue))
        worker.start()
        worker.join(60)  # a small result: the worker can end before it is read
        print("worker exit", worker.exitcode)
        if worker.exitcode == 0:
            print("from the worker", queue.get(timeout=10))
    sys.exit(3)
"""


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "kp.py").write_text(KERNPROF_SCRIPT)
    return root


def hits_of(stdout, lineno, source):
    """The hits of one line in the function tables."""
    (hits,) = re.findall(rf"^\s+{lineno}\s+([\d,]+)\s.*{re.escape(source)}$", stdout, re.M)
    return int(hits.replace(",", ""))


def test_a_kernprof_script_runs_unchanged(project):
    out = run_cli_process("run", "--functions", "5", "kp.py", cwd=project)
    assert out.returncode == 3, out.stderr  # the script's own status
    assert out.stdout.startswith("result 20540\n")  # its output, first
    assert "NameError" not in out.stderr and "@profile" not in out.stderr
    assert "Function: work at kp.py:4" in out.stdout  # the decorated function's table
    assert hits_of(out.stdout, 8, "total += i * i") == 40


def test_a_forked_worker_runs_the_decorated_code(project, tmp_path):
    out = run_cli_process(
        "run", "--children", "-o", tmp_path / "prof", "--functions", "5", "kp.py", "fork",
        cwd=project,
    )
    assert out.returncode == 3, out.stderr
    assert "from the worker 4900\n" in out.stdout and "worker exit 0\n" in out.stdout, out.stderr
    assert hits_of(out.stdout, 8, "total += i * i") == 40 + 25  # both processes, merged
    saved = LineProfiler.load(tmp_path / "prof")
    assert len(saved.processes) == 2


def test_a_spawned_worker_runs_the_decorated_code(project, tmp_path):
    out = run_cli_process(
        "run", "--children", "-o", tmp_path / "prof", "--functions", "5", "kp.py", "spawn",
        cwd=project,
    )
    assert out.returncode == 3, out.stderr
    assert "from the worker 4900\n" in out.stdout and "worker exit 0\n" in out.stdout, out.stderr
    assert hits_of(out.stdout, 8, "total += i * i") == 40 + 25


def test_the_builtin_is_gone_after_the_run(project):
    (project / "peek.py").write_text("print('during', profile)\n")
    code = textwrap.dedent(
        """
        import builtins
        from lineprofiler.lines.runner import RunOptions, run
        status = run(RunOptions(script="peek.py", functions=0))
        print("status", status, "after", hasattr(builtins, "profile"))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "during <profile: the builtin of lineprofiler run>" in out.stdout
    assert "status 0 after False" in out.stdout


def test_a_decorated_function_outside_the_project_is_recorded(project, tmp_path):
    # kernprof records what @profile marks wherever its file is; the rest of that file, and
    # anything else outside the project, stays out.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "lib.py").write_text(
        "@profile\ndef far(n):\n    return sum([i for i in range(n)])\n\n\ndef near(n):\n    return n\n"
    )
    (project / "uses_lib.py").write_text(
        f"import sys\nsys.path.insert(0, {str(elsewhere)!r})\nimport lib\nprint('far', lib.far(10), lib.near(1))\n"
    )
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = run_cli_process("run", "-o", out_dir / "lines.json", "uses_lib.py", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "far 45 1\n" in out.stdout
    assert "was not profiled" not in out.stderr
    from lineprofiler import LineProfiler

    stats = LineProfiler.load(out_dir / "lines.json").get_stats()
    lib = os.path.realpath(elsewhere / "lib.py")
    kept = {(os.path.realpath(f), q) for f, q, _ in stats}
    assert (lib, "far") in kept and (lib, "near") not in kept
    (far,) = [s for (f, q, _), s in stats.items() if q == "far"]
    assert far.lines[3].hits >= 1
