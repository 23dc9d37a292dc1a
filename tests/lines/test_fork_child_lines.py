"""A forked child's table covers what it ran after the fork, not the frames it inherited.

A fork child copies the parent's open frames. Billed at the child's end, the line that was
running at the fork (the `Pool(...)` line, `iter(loader)` of a DataLoader) took the child's
whole life, with 0 hits, in every child: a line longer than the run. Real processes, through
`lineprofiler run --children`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from lineprofiler.runfiles import linesfile

POOL = """\
import multiprocessing as mp
import time


def work(x):
    time.sleep(0.15)
    return x


def main():
    with mp.get_context("fork").Pool(2) as pool:
        assert sorted(pool.map(work, range(4))) == [0, 1, 2, 3]


if __name__ == "__main__":
    main()
"""

OS_FORK = """\
import os
import time


def child_part():
    t = 0
    for i in range(100):
        t += i
    return t


def main():
    pid = os.fork()
    if pid == 0:
        child_part()
        time.sleep(0.2)
        os._exit(0)
    os.waitpid(pid, 0)


main()
"""


def _run(project, tmp_path, name, source):
    (project / name).write_text(source)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "run", "--children", "-o", str(out), name],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    files, problems = linesfile.load_lines(out)
    assert not problems
    return files


def _tables(file) -> dict[str, dict[int, tuple[int, int]]]:
    return {fn.qualname: {r.lineno: (r.hits, r.time_ns) for r in fn.lines} for fn in file.functions}


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    return root


@pytest.mark.slow
def test_a_pool_workers_table_holds_only_what_it_ran(project, tmp_path):
    files = _run(project, tmp_path, "pool.py", POOL)
    root_pid = {f.process["pid"] for f in files if f.process.get("parent_pid") not in {g.process["pid"] for g in files}}
    children = [f for f in files if f.process["pid"] not in root_pid]
    assert len(children) == 2
    ran_work = 0
    for child in children:
        tables = _tables(child)
        # the parent's frames (main, the module) were open at the fork: not the child's lines
        assert set(tables) <= {"work"}, tables
        ran_work += "work" in tables
        for qualname, lines in tables.items():
            for lineno, (hits, time_ns) in lines.items():
                assert hits > 0 or time_ns == 0, (qualname, lineno, hits, time_ns)
    assert ran_work >= 1


@pytest.mark.slow
def test_an_os_fork_child_keeps_the_lines_it_ran_after_the_fork(project, tmp_path):
    files = _run(project, tmp_path, "forker.py", OS_FORK)
    pids = {f.process["pid"] for f in files}
    children = [f for f in files if f.process.get("parent_pid") in pids]
    assert len(children) == 1
    tables = _tables(children[0])
    fork_line = OS_FORK.splitlines().index("    pid = os.fork()") + 1
    main = tables["main"]
    # what the child ran in the inherited frame after the fork is its own, one hit each
    assert [main[n][0] for n in range(fork_line + 1, fork_line + 5)] == [1, 1, 1, 1]
    assert main[fork_line + 3][1] >= 150_000_000  # time.sleep(0.2)
    # the line that forked and the module's line that called main() ran in the parent
    assert main.get(fork_line, (0, 0))[1] < 50_000_000
    assert all(time_ns == 0 for _, time_ns in tables.get("<module>", {}).values()), tables.get("<module>")
    assert tables["child_part"]
    for qualname, lines in tables.items():
        for lineno, (hits, time_ns) in lines.items():
            assert hits > 0 or time_ns == 0, (qualname, lineno, hits, time_ns)
