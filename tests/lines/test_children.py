"""Child processes are line-profiled: every start method, pools, executors, subprocess, signals.

Real processes throughout. The driver runs `work()` only in children; the hits each line of
`work` has, summed over the children, must equal the in-process hits of one call times the
number of calls.
"""

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest
from lp_installed import START_METHODS, start_method

from helpers.cli import run_cli, run_cli_process
from lineprofiler import LineProfiler
from lineprofiler.lines.children import BOOT_DIR, ENV_CONFIG
from lineprofiler.runfiles import linesfile

WORK = """\
def work(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
        else:
            total -= 1
    return total
"""

DRIVER = """\
import multiprocessing as mp, os, subprocess, sys
from concurrent.futures import ProcessPoolExecutor
import work

N = 300

def task(n):
    return work.work(n)

if __name__ == "__main__":
    ctx = mp.get_context(None if sys.argv[1] == "default" else sys.argv[1])
    procs = [ctx.Process(target=task, args=(N,)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    pool = ctx.Pool(2)
    results = pool.map(task, [N] * 4)
    pool.close()
    pool.join()
    with ProcessPoolExecutor(2, mp_context=ctx) as ex:
        results += list(ex.map(task, [N] * 4))
    assert len(results) == 8 and len(set(results)) == 1
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "child.py")], check=True)
    print("DRIVER DONE", flush=True)
"""

CHILD = """\
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import work
work.work(300)
"""


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "work.py").write_text(WORK)
    (root / "driver.py").write_text(DRIVER)
    (root / "child.py").write_text(CHILD)
    return root


def reference_hits(project, n=300):
    """Hits per line of one work(n) call, profiled in this process."""
    sys.path.insert(0, str(project))
    try:
        import importlib

        work = importlib.import_module("work")
        p = LineProfiler(project_folder=project)
        with p:
            work.work(n)
        (fs,) = [f for f in p.get_stats().values() if f.qualname == "work"]
        return {ln: line.hits for ln, line in fs.lines.items()}
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("work", None)


def work_hits(files):
    """line -> hits of work() per process file, for the files that ran it."""
    out = {}
    for f in files:
        for fn in f.functions:
            if fn.qualname == "work":
                out[f.pid] = {r.lineno: r.hits for r in fn.lines}
    return out


@pytest.mark.parametrize("method", START_METHODS)
def test_children_have_the_in_process_hits(project, tmp_path, method):
    actual = multiprocessing.get_context(start_method(method)).get_start_method()
    out_dir = tmp_path / "out"
    done = run_cli_process("run", "--children", "-o", out_dir, "driver.py", method, timeout=240, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "DRIVER DONE" in done.stdout
    files, problems = linesfile.load_lines(out_dir)
    assert problems == []
    one_call = reference_hits(project)
    per_process = work_hits(files)
    calls = 2 + 4 + 4 + 1
    total = {ln: sum(h.get(ln, 0) for h in per_process.values()) for ln in one_call}
    assert total == {ln: hits * calls for ln, hits in one_call.items()}
    for pid, hits in per_process.items():  # each process ran a whole number of calls
        k = hits[min(one_call)] // one_call[min(one_call)]
        assert hits == {ln: h * k for ln, h in one_call.items()}, pid
    # Who is who: the root, the two Process children, the pool and executor workers, the subprocess.
    root = next(f for f in files if f.process["label"] == "main")
    assert root.status == "exited" and root.process["exit_code"] == 0
    assert root.process["argv"] == ["driver.py", method]
    # From 3.14 the fork server imports the main module before it forks (as spawn's children
    # do), so it runs the driver's top level: a process of project code, named as what it is.
    servers = [f for f in files if f.process["label"] == "ForkServer"]
    if actual == "forkserver" and sys.version_info >= (3, 14):
        assert len(servers) == 1 and {fn.qualname for fn in servers[0].functions} == {"<module>"}, servers
    else:
        assert servers == []
    children = [f for f in files if f is not root and f not in servers]
    assert all(f.status == "exited" for f in files), [(f.pid, f.status) for f in files]
    labels = sorted(f.process["label"] for f in children)
    kind = {"spawn": "Spawn", "fork": "Fork", "forkserver": "ForkServer"}[actual]
    assert labels.count(f"{kind}PoolWorker") == 2 and labels.count(f"{kind}Process") == 4, labels
    assert "child.py" in labels
    if actual != "forkserver":  # forkserver children are the server's
        assert all(f.process["parent_pid"] == root.pid for f in children)
    assert len({f.pid for f in files}) == len(files) == 1 + 2 + 2 + 2 + 1 + len(servers)
    assert not any(f.errors for f in files), [f.errors for f in files]
    # The printed tables are the merge: work's loop line with 11 calls' hits.
    loop_line = min(ln for ln in one_call if ln > min(one_call))
    assert re.search(rf"^\s+{loop_line}\s+{one_call[loop_line] * calls:,}\s", done.stdout, re.M)


SIGNALS = """\
import multiprocessing as mp, os, signal, sys, time
import work

def task(ready):
    work.work(300)
    ready.set()
    while True:
        time.sleep(0.05)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    names = ["SIGTERM", "SIGUSR1", "SIGHUP", "SIGKILL"]
    events = [ctx.Event() for _ in names]
    procs = [ctx.Process(target=task, args=(e,)) for e in events]
    for p in procs:
        p.start()
    for e in events:
        assert e.wait(120)
    for p, name in zip(procs, names):
        os.kill(p.pid, getattr(signal, name))
    for p, name in zip(procs, names):
        p.join()
        print("CHILD", p.pid, name, p.exitcode, flush=True)
"""


def test_signals_write_the_file_and_a_kill_is_named(project, tmp_path):
    (project / "signals.py").write_text(SIGNALS)
    out_dir = tmp_path / "out"
    done = run_cli_process("run", "--children", "-o", out_dir, "signals.py", timeout=240, cwd=project)
    assert done.returncode == 0, done.stderr
    found = re.findall(r"CHILD (\d+) (\w+) (-?\d+)", done.stdout)
    children = {int(pid): (name, int(code)) for pid, name, code in found}
    files = {f.pid: f for f in linesfile.load_lines(out_dir)[0]}
    one_call = reference_hits(project)
    for pid, (name, code) in children.items():
        f = files[pid]
        assert code == -getattr(signal, name)  # ended by the signal itself, as without us
        if name == "SIGKILL":
            assert f.status == "started" and not f.functions
            assert re.search(rf"pid {pid} \((multiprocessing child|SpawnProcess)\) on", done.stdout)
            assert "left nothing" in done.stdout
        else:
            assert f.status == "signalled" and f.process["signal"] == name
            assert work_hits([f])[pid] == one_call


API_SCRIPT = """\
import multiprocessing as mp, os, sys
from lineprofiler import LineProfiler
import work

def task(n):
    return work.work(n)

if __name__ == "__main__":
    out = sys.argv[1]
    before = (os.environ.get("PYTHONPATH"), os.environ.get("LINEPROFILER_LINES"))
    profiler = LineProfiler(children=True, output_dir=out)
    with profiler:
        with mp.get_context("spawn").Pool(2) as pool:
            pool.map(task, [300] * 3)
            pool.close()
            pool.join()
    after = (os.environ.get("PYTHONPATH"), os.environ.get("LINEPROFILER_LINES"))
    assert before == after, (before, after)
    merged = LineProfiler.load(out)
    merged.print_global_top_stats(top_n=3)
    print("PROCESSES", len(merged.processes))
"""


def test_the_api_profiles_children_and_restores_the_environment(project, tmp_path):
    (project / "api.py").write_text(API_SCRIPT)
    out_dir = tmp_path / "api-out"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", ENV_CONFIG)}
    done = subprocess.run(
        [sys.executable, "api.py", str(out_dir)], cwd=project, capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert "PROCESSES 3" in done.stdout
    files = linesfile.load_lines(out_dir)[0]
    one_call = reference_hits(project)
    per_process = work_hits(files)
    assert {ln: sum(h.get(ln, 0) for h in per_process.values()) for ln in one_call} == {
        ln: h * 3 for ln, h in one_call.items()
    }
    root = next(f for f in files if f.process["label"] == "main")
    assert root.status == "stopped" and root.process["pid"] not in per_process


USER_SITE = """\
MARK = "the user's own sitecustomize"
print("USER SITECUSTOMIZE RAN", flush=True)
"""

SUBPROCESSES = """\
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
check = (
    "import sitecustomize, sys; print('MARK', sitecustomize.MARK); "
    "print('PATH', [p for p in sys.path if '_boot' in p])"
)
subprocess.run([sys.executable, "-c", check], check=True)
broken = os.path.join(here, "broken")
env = dict(os.environ, PYTHONPATH=os.environ["PYTHONPATH"] + os.pathsep + broken)
subprocess.run([sys.executable, "-c", "print('UNPROFILED CHILD RAN')"], check=True, env=env)
"""


def test_subprocess_children_keep_the_sites_own_customisation(project, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(USER_SITE)
    broken = project / "broken" / "lineprofiler"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this interpreter has no lineprofiler')\n")
    (project / "subs.py").write_text(SUBPROCESSES)
    out_dir = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(site))
    done = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "run", "--children", "-o", out_dir, "subs.py"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "MARK the user's own sitecustomize" in done.stdout  # theirs ran, and `import` gives theirs
    assert "PATH []" in done.stdout  # our folder is off sys.path once started
    assert "UNPROFILED CHILD RAN" in done.stdout
    why = r"left nothing: not profiled: lineprofiler cannot be imported \(ImportError: this interpreter"
    assert re.search(why, done.stdout)
    statuses = sorted(f.status for f in linesfile.load_lines(out_dir)[0])
    assert statuses == ["exited", "exited", "started"]


def test_boot_dir_holds_only_the_startup_module():
    assert sorted(p for p in os.listdir(BOOT_DIR) if not p.startswith("__pycache__")) == ["sitecustomize.py"]


def test_view_of_a_children_run(project, tmp_path):
    out_dir = tmp_path / "out"
    (project / "one.py").write_text(
        textwrap.dedent(
            """\
            import multiprocessing as mp
            from lineprofiler.lines import set_role
            import work
            def task(n):
                return work.work(n)
            if __name__ == "__main__":
                with mp.get_context("fork").Pool(2, initializer=set_role, initargs=("actor",)) as pool:
                    pool.map(task, [300] * 4)
                    pool.close()
                    pool.join()
            """
        )
    )
    done = run_cli_process("run", "--children", "-o", out_dir, "one.py", timeout=240, cwd=project)
    assert done.returncode == 0, done.stderr
    view = run_cli("view", out_dir, "--by-role", "--functions", "0", cwd=project)
    assert view.returncode == 0, view.stderr
    assert view.stdout.startswith("Line profile of 3 processes (main x1, actor x2)")
    assert "ACTOR  (2 processes)" in view.stdout and "MAIN  (1 process)" in view.stdout
    doc = json.loads(next(out_dir.glob("*.json")).read_text())
    assert doc["kind"] == "lineprofiler-lines" and doc["process"]["host"]
