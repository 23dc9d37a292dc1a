"""``Profiler(backend="lines")``: the line profiler for a window of a phase, in real processes.

A window ``(start, stop)`` is on from the start-th entry into ``window_phase`` to the stop-th, so
the code run inside entries ``start .. stop - 1`` is line-profiled, and each process writes one
line-stats file, ``run_dir/lines/<host>/l_<run>_<pid>_<uuid8>.json``, named after its worker
file. The hits of a function called once per entry are therefore its hits in one call (measured
in-process with a LineProfiler) times the window's entries.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lp_integration_helpers import clean_env, worker_documents

from lineprofiler.runfiles import linesfile

# The child's common part: a function whose lines have fixed hits per call, and a phase loop.
WORK = """
import json, os, sys
from pathlib import Path

def work(n=7):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
    return total

def loop(p, n):
    for _ in range(n):
        with p.phase("iteration"):
            with p.phase("step"):
                work()

def reference():
    from lineprofiler import LineProfiler
    lp = LineProfiler(os.path.dirname(os.path.abspath(__file__)))
    with lp:
        work()
    (stats,) = [s for s in lp.get_stats().values() if s.qualname == "work"]
    return {str(k): v.hits for k, v in stats.lines.items()}
"""


def lines_files(run_dir: Path) -> list[linesfile.LinesFile]:
    if not (run_dir / "lines").exists():
        return []
    return [linesfile.read_lines_file(p) for p in linesfile.find_lines_files(run_dir / "lines")]


def work_hits(file: linesfile.LinesFile) -> dict[str, int]:
    (fn,) = [f for f in file.functions if f.qualname == "work"]
    return {str(line.lineno): line.hits for line in fn.lines}


def times(reference: dict[str, int], k: int) -> dict[str, int]:
    return {line: hits * k for line, hits in reference.items()}


def run_script(tmp_path: Path, code: str, env: dict[str, str] | None = None, name: str = "main.py") -> str:
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=clean_env(env), cwd=tmp_path, timeout=240
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout


def test_a_window_profiles_entries_start_to_stop_and_pairs_its_file_with_the_worker_file(tmp_path):
    run_dir = tmp_path / "run"
    out = run_script(
        tmp_path,
        WORK
        + f"""
from lineprofiler.accounting import Profiler
ref = reference()
p = Profiler(run_dir={str(run_dir)!r}, role="actor", backend="lines", backend_window=(3, 7),
             window_phase="iteration", snapshot_interval_s=None)
loop(p, 10)
p.close()
print(json.dumps(ref))
""",
    )
    reference = json.loads(out)
    (file,) = lines_files(run_dir)
    assert work_hits(file) == times(reference, 4)  # entries 3, 4, 5 and 6
    (worker,) = worker_documents(run_dir)
    identity = worker["identity"]
    worker_path = next((run_dir / "workers").rglob("w_*.json"))
    assert file.path == run_dir / "lines" / worker_path.parent.name / ("l_" + worker_path.name[2:])
    process = file.process
    assert (process["run_id"], process["attempt"], process["uuid"]) == (
        identity["run_id"], identity["attempt"], identity["uuid"],
    )
    assert (process["pid"], process["host"], process["role"], process["status"]) == (
        identity["pid"], identity["host"], "actor", "stopped",
    )
    window = file.window
    assert window is not None and not file.partial
    assert (window["phase"], window["start"], window["stop"]) == ("iteration", 3, 7)
    assert (window["started_entry"], window["stopped_entry"], window["entries"]) == (3, 7, 4)
    assert file.profile["project_folder"] == str(tmp_path.resolve())
    described = worker["backend_window"]
    assert described["backend"] == "lines" and described["state"] == "done" and described["truncated"] is False
    assert described["artifact"] == str(file.path.relative_to(run_dir))
    # The profiler's own accounting is unchanged by the window: every entry is counted.
    assert {p["path"]: p["entries"] for p in worker["phases"]} == {"iteration": 10, "iteration/step": 10}
    metadata = json.loads(next((run_dir / "metadata").rglob("*.json")).read_text())
    assert metadata["backend"]["state"] == "done"


@pytest.mark.parametrize("ending, status", [("p.close()", "stopped"), ("", "exited")])
def test_a_window_open_when_the_profiler_ends_is_written_partial(tmp_path, ending, status):
    run_dir = tmp_path / "run"
    out = run_script(
        tmp_path,
        WORK
        + f"""
from lineprofiler.accounting import Profiler
ref = reference()
p = Profiler(run_dir={str(run_dir)!r}, backend="lines", backend_window=(2, 100), window_phase="iteration",
             snapshot_interval_s=None)
loop(p, 5)
print(json.dumps(ref))
{ending}
""",
    )
    (file,) = lines_files(run_dir)
    assert file.partial and file.status == status
    assert (file.window["started_entry"], file.window["stopped_entry"], file.window["entries"]) == (2, None, 4)
    assert work_hits(file) == times(json.loads(out), 4)  # entries 2 to 5
    (worker,) = worker_documents(run_dir)
    assert worker["backend_window"]["state"] == "done" and worker["backend_window"]["truncated"] is True


def test_a_window_never_reached_writes_no_file(tmp_path):
    run_dir = tmp_path / "run"
    run_script(
        tmp_path,
        WORK
        + f"""
from lineprofiler.accounting import Profiler
with Profiler(run_dir={str(run_dir)!r}, backend="lines", backend_window=(20, 30), window_phase="iteration",
              snapshot_interval_s=None) as p:
    loop(p, 5)
""",
    )
    assert lines_files(run_dir) == []
    (worker,) = worker_documents(run_dir)
    assert worker["backend_window"]["state"] == "waiting" and worker["backend_window"]["artifact"] is None


def test_a_sigterm_during_the_window_leaves_a_partial_signalled_file(tmp_path):
    """Slurm's time limit: SIGTERM with its default action ends the process without atexit; the
    open window is written, marked partial, and the process still ends by the signal."""
    run_dir = tmp_path / "run"
    script = tmp_path / "child.py"
    script.write_text(
        WORK
        + f"""
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, role="actor", backend="lines", backend_window=(2, 10**9),
             window_phase="iteration", snapshot_interval_s=None)
loop(p, 3)
print(os.getpid(), flush=True)
while True:
    loop(p, 1)
"""
    )
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=clean_env())
    try:
        pid = int(child.stdout.readline())
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        child.kill()
        child.stdout.close()
    (file,) = lines_files(run_dir)
    assert file.pid == pid and file.partial
    assert (file.status, file.process["signal"]) == ("signalled", "SIGTERM")
    hits = work_hits(file)
    assert hits and min(hits.values()) >= 2  # at least entries 2 and 3 ran every line of work()
    (worker,) = worker_documents(run_dir)
    assert worker["times"]["status"] == "signalled" and worker["backend_window"]["truncated"] is True


def test_each_forked_process_counts_its_own_entries_and_writes_its_own_file(tmp_path):
    run_dir = tmp_path / "run"
    out = run_script(
        tmp_path,
        WORK
        + f"""
from lineprofiler.accounting import Profiler
ref = reference()
p = Profiler(run_dir={str(run_dir)!r}, backend="lines", backend_window=(2, 4), window_phase="iteration",
             snapshot_interval_s=None)
loop(p, 2)  # the window is open in the parent when it forks
pid = os.fork()
if pid == 0:
    loop(p, 5)
    p.close()
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
loop(p, 3)
p.close()
print(json.dumps([os.getpid(), pid, ref]))
""",
    )
    parent, child, reference = json.loads(out)
    files = {f.pid: f for f in lines_files(run_dir)}
    assert sorted(files) == sorted([parent, child])
    for pid in (parent, child):
        assert work_hits(files[pid]) == times(reference, 2), pid  # entries 2 and 3 of that process
        assert not files[pid].partial
    assert files[child].process["parent_pid"] == parent


def test_spawned_workers_each_leave_a_file_with_the_hits_of_their_own_window(tmp_path):
    run_dir = tmp_path / "run"
    out = run_script(
        tmp_path,
        WORK
        + f"""
import multiprocessing
from lineprofiler.accounting import Profiler

def actor(i):
    p = Profiler(role="actor", backend="lines", backend_window=(2, 5), window_phase="iteration",
                 snapshot_interval_s=None)  # run dir and run id from the parent's environment
    with p:
        loop(p, 6 + i)
    return os.getpid()

if __name__ == "__main__":
    ref = reference()
    learner = Profiler(run_dir={str(run_dir)!r}, role="learner", snapshot_interval_s=None)
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        pids = pool.map(actor, range(3))
    learner.close()
    print(json.dumps([pids, ref, learner.run_id]))
""",
    )
    pids, reference, run_id = json.loads(out)
    files = lines_files(run_dir)
    assert sorted(f.pid for f in files) == sorted(pids)  # one file per Profiler, even when a worker ran two
    for file in files:
        assert file.role == "actor" and file.process["run_id"] == run_id and not file.partial
    merged = linesfile.merge_lines(files)
    (work,) = [fn for fn in merged.functions.values() if fn.qualname == "work"]
    assert {str(n): ln.hits for n, ln in work.lines.items()} == times(reference, 3 * len(files))


def test_the_project_folder_is_the_git_root_of_the_main_script_or_the_environment(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "lib").mkdir()
    (project / "app").mkdir()
    (project / "lib" / "helper.py").write_text("def helper():\n    return sum(range(10))\n")
    other = tmp_path / "other"
    other.mkdir()
    code = f"""
import json, os, sys
sys.path.insert(0, {str(project / "lib")!r})
from helper import helper
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(tmp_path / "run")!r}, backend="lines", backend_window=(1, 3), window_phase="it",
             snapshot_interval_s=None)
for _ in range(4):
    with p.phase("it"):
        helper()
p.close()
"""
    run_script(project / "app", code)
    (file,) = lines_files(tmp_path / "run")
    assert file.profile["project_folder"] == str(project.resolve())
    assert {f.qualname for f in file.functions} >= {"helper", "<module>"}
    (fn,) = [f for f in file.functions if f.qualname == "helper"]
    assert fn.lines[0].hits == 2
    # LINEPROFILER_LINES_PROJECT names another folder: only what lies there is profiled.
    env = {"LINEPROFILER_LINES_PROJECT": str(project / "lib")}
    run_script(project / "app", code.replace("/run'", "/run2'"), env=env)
    (file,) = lines_files(tmp_path / "run2")
    assert file.profile["project_folder"] == str((project / "lib").resolve())
    assert {f.qualname for f in file.functions} == {"helper"}


def test_a_project_folder_that_does_not_exist_is_a_state_not_an_error(tmp_path):
    run_dir = tmp_path / "run"
    run_script(
        tmp_path,
        WORK
        + f"""
from lineprofiler.accounting import Profiler
with Profiler(run_dir={str(run_dir)!r}, backend="lines", backend_window=(1, 3), window_phase="iteration",
              snapshot_interval_s=None) as p:
    loop(p, 4)
""",
        env={"LINEPROFILER_LINES_PROJECT": str(tmp_path / "gone")},
    )
    assert lines_files(run_dir) == []
    (worker,) = worker_documents(run_dir)
    window = worker["backend_window"]
    assert window["state"] == "unavailable" and "LINEPROFILER_LINES_PROJECT" in window["unavailable_reason"]
    assert {p["path"]: p["entries"] for p in worker["phases"]}["iteration"] == 4


def test_a_window_that_cannot_switch_on_fails_quietly_and_the_program_profiles_on(tmp_path):
    """The program's own LineProfiler records when the window would open: the program wins, the
    window records why it stayed shut."""
    run_dir = tmp_path / "run"
    out = run_script(
        tmp_path,
        WORK
        + f"""
from lineprofiler import LineProfiler
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(run_dir)!r}, backend="lines", backend_window=(1, 3), window_phase="iteration",
             snapshot_interval_s=None)
ref = reference()
own = LineProfiler(os.path.dirname(os.path.abspath(__file__)))
with own:
    loop(p, 4)
p.close()
(stats,) = [s for s in own.get_stats().values() if s.qualname == "work"]
print(json.dumps([ref, {{str(k): v.hits for k, v in stats.lines.items()}}]))
""",
    )
    reference, own = json.loads(out)
    assert own == times(reference, 4)
    assert lines_files(run_dir) == []
    (worker,) = worker_documents(run_dir)
    window = worker["backend_window"]
    assert window["state"] == "failed" and "RuntimeError" in window["error"]


def test_importing_the_accounting_layer_or_a_profiler_without_the_lines_backend_loads_no_line_layer(tmp_path):
    code = f"""
import sys
from lineprofiler.accounting import Profiler
p = Profiler(run_dir={str(tmp_path / "run")!r}, backend="viztracer", backend_window=(1, 2), window_phase="it",
             snapshot_interval_s=None)
p.close()
print(sorted(m for m in sys.modules if m.startswith("lineprofiler.lines")))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
