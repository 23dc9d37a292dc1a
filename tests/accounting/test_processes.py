"""Real processes: spawn, fork and forkserver workers, real signals, SIGKILL, os.fork.

Each scenario runs a small script in a fresh interpreter, so the profiler's process-wide
wiring (signal handlers, fork hooks, atexit) is exercised exactly as in a user's program.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from lp_installed import START_METHODS

from lineprofiler.runfiles import workerfile

TIMEOUT = 300


def run_script(tmp_path, body, *args, wait=True, env=None):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    full_env.update(env or {})
    command = [sys.executable, str(script), *map(str, args)]
    if not wait:
        return subprocess.Popen(command, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=TIMEOUT)


def documents(run_dir):
    return [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]


def wait_for_line(proc, expected):
    line = proc.stdout.readline()
    assert line.strip() == expected, (line, proc.stderr.read() if proc.poll() is not None else "")


WORKERS = """
import multiprocessing as mp
import os
import sys

from lineprofiler.accounting import Profiler


def work(i, raise_at):
    profiler = Profiler(role="actor", snapshot_interval_s=60)  # joins through the environment
    for _ in range(5):
        with profiler.phase("iteration"):
            with profiler.phase("step"):
                profiler.count("items", i + 1)
    if i == raise_at:
        raise RuntimeError("worker failed on purpose")


if __name__ == "__main__":
    method, n, run_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ctx = mp.get_context(None if method == "default" else method)
    learner = Profiler(run_dir=run_dir, role="learner", snapshot_interval_s=60)
    with learner.phase("launch"):
        procs = [ctx.Process(target=work, args=(i, n - 1)) for i in range(n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
    print(",".join(str(p.exitcode) for p in procs))
    learner.close()
"""


def check_workers(tmp_path, method, n):
    run_dir = tmp_path / "profile"
    result = run_script(tmp_path, WORKERS, method, n, run_dir)
    assert result.returncode == 0, result.stderr
    assert "multi-threaded" not in result.stderr  # our thread is stopped across each fork
    exitcodes = [int(c) for c in result.stdout.strip().split(",")]
    assert exitcodes == [0] * (n - 1) + [1]  # the last worker raised
    docs = documents(run_dir)
    roles = sorted(d["identity"]["role"] for d in docs)
    assert roles == ["actor"] * n + ["learner"], roles  # one file per process, no duplicates
    assert len({d["identity"]["run_id"] for d in docs}) == 1
    assert len({(d["identity"]["pid"], d["identity"]["uuid"]) for d in docs}) == n + 1
    totals = []
    for doc in docs:
        assert doc["times"]["status"] == "exited", doc["times"]
        if doc["identity"]["role"] == "learner":
            assert [p["path"] for p in doc["phases"]] == ["launch"]
            continue
        phases = {p["path"]: p["entries"] for p in doc["phases"]}
        assert phases == {"iteration": 5, "iteration/step": 5}  # a fork child's tree starts empty
        (counter,) = doc["counters"]
        assert counter["phase"] == "iteration/step"
        totals.append(counter["total"])
    assert sorted(totals) == [5 * (i + 1) for i in range(n)]  # the raising worker's data is there too


@pytest.mark.parametrize("method", START_METHODS)
@pytest.mark.parametrize("n", [1, 4])
def test_workers_join_the_run(tmp_path, method, n):
    check_workers(tmp_path, method, n)


@pytest.mark.slow
@pytest.mark.parametrize("method", START_METHODS)
def test_sixteen_workers_join_the_run(tmp_path, method):
    check_workers(tmp_path, method, 16)


WAITING = """
import signal
import sys
import time

from lineprofiler.accounting import Profiler

mode = sys.argv[2]
if mode == "python":
    def previous(signum, frame):
        open(sys.argv[1] + ".marker", "w").write(signal.Signals(signum).name)
        sys.exit(3)
    for name in ("SIGTERM", "SIGUSR1", "SIGHUP"):
        signal.signal(getattr(signal, name), previous)
elif mode == "ignore":
    for name in ("SIGTERM", "SIGUSR1", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
else:  # "default", whatever this process inherited (nohup ignores SIGHUP)
    for name in ("SIGTERM", "SIGUSR1", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)

profiler = Profiler(run_dir=sys.argv[1], role="waiter", snapshot_interval_s=3600)
for _ in range(3):
    with profiler.phase("work"):
        profiler.count("done")
print("ready", flush=True)
deadline = time.monotonic() + 60
idled = False
while time.monotonic() < deadline:
    with profiler.phase("idle"):
        time.sleep(0.01)
    if not idled:
        print("idled", flush=True)  # one whole idle entry is recorded
        idled = True
print("survived", flush=True)
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGUSR1", "SIGHUP"])
def test_a_signal_flushes_then_ends_the_process_as_it_would_have(tmp_path, signame):
    run_dir = tmp_path / "profile"
    proc = run_script(tmp_path, WAITING, run_dir, "default", wait=False)
    try:
        wait_for_line(proc, "ready")
        wait_for_line(proc, "idled")
        proc.send_signal(getattr(signal, signame))
        proc.wait(TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == -getattr(signal, signame)  # killed by the signal, as by default
    (doc,) = documents(run_dir)
    assert doc["times"]["status"] == "signalled" and doc["times"]["signal"] == signame
    phases = {p["path"]: p["entries"] for p in doc["phases"]}
    assert phases["work"] == 3 and phases["idle"] >= 1
    assert doc["counters"][0]["total"] == 3


def test_a_signal_chains_to_the_previous_python_handler(tmp_path):
    run_dir = tmp_path / "profile"
    proc = run_script(tmp_path, WAITING, run_dir, "python", wait=False)
    try:
        wait_for_line(proc, "ready")
        proc.send_signal(signal.SIGTERM)
        proc.wait(TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 3  # the previous handler ran and chose the exit status
    assert (tmp_path / "profile.marker").read_text() == "SIGTERM"
    (doc,) = documents(run_dir)
    # flushed by the signal, then again at exit (the handler raised SystemExit)
    assert doc["times"]["status"] == "exited" and doc["times"]["signal"] == "SIGTERM"
    assert {p["path"] for p in doc["phases"]} >= {"work"}


def test_an_ignored_signal_is_still_ignored_after_the_flush(tmp_path):
    run_dir = tmp_path / "profile"
    proc = run_script(tmp_path, WAITING, run_dir, "ignore", wait=False)
    try:
        wait_for_line(proc, "ready")
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            docs = documents(run_dir)
            if docs and docs[0]["times"]["status"] == "signalled":
                break
            time.sleep(0.05)
        assert proc.poll() is None  # still running
        assert docs[0]["times"]["signal"] == "SIGUSR1"
        proc.send_signal(signal.SIGTERM)  # ignored as well
        time.sleep(0.3)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(TIMEOUT)


def test_sigkill_before_the_first_flush_leaves_the_start_file(tmp_path):
    run_dir = tmp_path / "profile"
    proc = run_script(tmp_path, WAITING, run_dir, "default", wait=False)
    try:
        wait_for_line(proc, "ready")
        proc.send_signal(signal.SIGKILL)
        proc.wait(TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    (doc,) = documents(run_dir)
    assert doc["times"]["status"] == "started" and doc["phases"] == []
    assert doc["identity"]["role"] == "waiter" and doc["identity"]["pid"] == proc.pid


FORK = """
import json
import os
import sys
import threading

from lineprofiler.accounting import Profiler, _phases

profiler = Profiler(run_dir=sys.argv[1], role="parent", snapshot_interval_s=0.05)
with profiler.phase("outer"):
    profiler.count("before_fork")
    pid = os.fork()
    if pid == 0:
        # the child: its own file, an empty tree, a clean stack (no "outer/" prefix)
        with profiler.phase("child_work"):
            profiler.count("in_child")
        alive = [t.name for t in threading.enumerate()]
        print(json.dumps({"threads": alive, "main_phase": _phases.main_thread_phase()}), flush=True)
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
with profiler.phase("after"):
    pass
print(json.dumps([t.name for t in threading.enumerate()]), flush=True)
profiler.close()
"""


def test_a_fork_child_gets_its_own_file_tree_stack_and_thread(tmp_path):
    run_dir = tmp_path / "profile"
    result = run_script(tmp_path, FORK, run_dir)
    assert result.returncode == 0, result.stderr
    assert "DeprecationWarning" not in result.stderr  # our thread is stopped across the fork
    child_line, parent_line = result.stdout.strip().splitlines()
    import json

    child = json.loads(child_line)
    assert "lineprofiler-snapshot" in child["threads"]  # restarted in the child
    assert child["main_phase"] == -1
    assert "lineprofiler-snapshot" in json.loads(parent_line)  # and in the parent
    docs = {d["identity"]["role"] + ("-child" if d["identity"]["fork_parent_pid"] else ""): d
            for d in documents(run_dir)}
    assert set(docs) == {"parent", "parent-child"}
    parent, child_doc = docs["parent"], docs["parent-child"]
    assert child_doc["identity"]["uuid"] != parent["identity"]["uuid"]
    assert child_doc["identity"]["fork_parent_pid"] == parent["identity"]["pid"]
    assert child_doc["identity"]["run_id"] == parent["identity"]["run_id"]
    assert [p["path"] for p in child_doc["phases"]] == ["child_work"]
    one = {"total": 1, "calls": 1, "min": 1, "max": 1}
    assert child_doc["counters"] == [{"phase": "child_work", "name": "in_child", **one}]
    assert child_doc["times"]["status"] == "exited"
    assert {p["path"] for p in parent["phases"]} == {"outer", "after"}
    assert parent["counters"] == [{"phase": "outer", "name": "before_fork", **one}]
