"""Why forks stayed slow, checked as behaviour (the speed itself is ``benchmarks/bench_fork.py``'s).

With threads busy in phases, every wait of the forking thread that lets go of the GIL costs it
a turn behind each of them, and a fork that waited for the snapshot thread's first imports
took seconds. So: the profiler imports what it imports late once, as it starts, and nothing
after that, in the parent's fork hooks, the child's, or the child's flush and close; the
snapshot thread's periodic snapshots import nothing, so a fork never waits for one of its
imports nor leaves one half-done in the child (where it would block the child's first import
of that module forever); a fork taken while the start-up imports still run waits for them.
Every scenario runs alone (solo: the snapshot thread is stopped across the fork) and with four
threads busy in phases (crowded: it stays up).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from lineprofiler.runfiles import workerfile

TIMEOUT = 180

# Shared by the scripts: the profiler, busy threads, a bounded wait for a fork child.
PRELUDE = """
import json
import os
import signal
import sys
import threading
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: forking with the busy threads running

from lineprofiler.accounting import Profiler, _process
from lineprofiler.runfiles import workerfile

run_dir, crowded, out = sys.argv[1], sys.argv[2] == "crowded", sys.argv[3]
stop = threading.Event()


def busy(profiler):
    while not stop.is_set():
        with profiler.phase("busy"):
            with profiler.phase("inner"):
                pass


def start_busy(profiler):
    if crowded:
        for _ in range(4):
            threading.Thread(target=busy, args=(profiler,), daemon=True).start()


def wait_loaded():
    # What the profiler imports late, its first snapshot thread imports as it starts (where
    # a profiler has no such start, there is nothing to wait for).
    deadline = time.monotonic() + 30
    while not getattr(_process.PROCESS, "loaded", True) and time.monotonic() < deadline:
        time.sleep(0.01)


def wait_child(pid, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"
"""

NOTHING_IMPORTED = """
profiler = Profiler(run_dir=run_dir, snapshot_interval_s=30)
start_busy(profiler)
wait_loaded()
seen = set(sys.modules)
pid = os.fork()
if pid == 0:
    hooks = sorted(set(sys.modules) - seen)
    with profiler.phase("child"):
        pass
    profiler.flush()
    flushed = sorted(set(sys.modules) - seen)
    profiler.close()
    closed = sorted(set(sys.modules) - seen)
    with open(out + ".child", "w") as handle:
        json.dump({"hooks": hooks, "flush": flushed, "close": closed}, handle)
    os._exit(0)
parent = sorted(set(sys.modules) - seen)
status = wait_child(pid)
stop.set()
profiler.close()
with open(out + ".child") as handle:
    child = json.load(handle)
with open(out, "w") as handle:
    json.dump({"parent": parent, "child": child, "status": status}, handle)
"""

IMPORT_UNDER_WAY = """
class SlowImports:
    # Stands for imports under heavy GIL contention, which take seconds: an import made by the
    # snapshot thread waits here until the test lets it go (after the fork).
    def __init__(self):
        self.blocked = threading.Event()
        self.release = threading.Event()

    def find_spec(self, name, path=None, target=None):
        if threading.current_thread().name == "lineprofiler-snapshot":
            self.blocked.set()
            self.release.wait(120)
        return None


profiler = Profiler(run_dir=run_dir, snapshot_interval_s=0.5)
wait_loaded()
slow = SlowImports()
sys.meta_path.insert(0, slow)
start_busy(profiler)
path = str(profiler.path)
# The first periodic snapshot: it is written, or it waits inside an import.
deadline = time.monotonic() + 60
while not slow.blocked.is_set() and time.monotonic() < deadline:
    if workerfile.read_worker_file(path)["snapshot"]["writes"] >= 2:
        break
    time.sleep(0.02)
blocked = slow.blocked.is_set()
pid = os.fork()
if pid == 0:
    with profiler.phase("child"):
        pass
    profiler.flush()
    profiler.close()
    os._exit(0)
slow.release.set()
status = wait_child(pid)
stop.set()
profiler.close()
with open(out, "w") as handle:
    json.dump({"status": status, "snapshot_thread_imported": blocked, "child": pid}, handle)
"""

START_UP_IMPORTS = """
class DelayedImports:
    # Makes the profiler's start-up imports last: each one its thread makes takes 20 ms.
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread().name == "lineprofiler-snapshot":
            time.sleep(0.02)
        return None


sys.meta_path.insert(0, DelayedImports())
profiler = Profiler(run_dir=run_dir, snapshot_interval_s=0.5)
start_busy(profiler)
pid = os.fork()  # while the start-up imports run
if pid == 0:
    with profiler.phase("child"):
        pass
    profiler.flush()
    profiler.close()
    os._exit(0)
status = wait_child(pid)
stop.set()
profiler.close()
with open(out, "w") as handle:
    json.dump({"status": status, "child": pid}, handle)
"""


def _run(tmp_path, body: str, crowded: str) -> tuple[dict, list[dict]]:
    script = tmp_path / "fork_script.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body))
    run_dir, out = tmp_path / "profile", tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    result = subprocess.run(
        [sys.executable, str(script), str(run_dir), crowded, str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    documents = [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]
    return json.loads(out.read_text()), documents


def _child_document(documents: list[dict], pid: int) -> dict:
    found = [d for d in documents if d["identity"]["pid"] == pid]
    assert len(found) == 1, [d["identity"]["pid"] for d in documents]
    return found[0]


@pytest.mark.parametrize("crowded", ["solo", "crowded"])
def test_after_the_start_up_imports_neither_a_fork_nor_its_child_imports_anything(tmp_path, crowded):
    report, _ = _run(tmp_path, NOTHING_IMPORTED, crowded)
    assert report["status"] == 0
    assert report["parent"] == []  # the parent's fork hooks
    assert report["child"] == {"hooks": [], "flush": [], "close": []}


@pytest.mark.parametrize("crowded", ["solo", "crowded"])
def test_a_fork_while_the_snapshot_thread_would_import_completes_and_the_child_works(tmp_path, crowded):
    report, documents = _run(tmp_path, IMPORT_UNDER_WAY, crowded)
    assert report["status"] == 0, report  # "hung": the child waited for an import that never ends
    assert not report["snapshot_thread_imported"]
    child = _child_document(documents, report["child"])
    assert child["times"]["status"] == "exited"
    assert {p["path"]: p["entries"] for p in child["phases"]} == {"child": 1}


@pytest.mark.parametrize("crowded", ["solo", "crowded"])
def test_a_fork_during_the_start_up_imports_waits_for_them_and_the_child_works(tmp_path, crowded):
    report, documents = _run(tmp_path, START_UP_IMPORTS, crowded)
    assert report["status"] == 0, report
    child = _child_document(documents, report["child"])
    assert child["times"]["status"] == "exited"
    assert {p["path"]: p["entries"] for p in child["phases"]}.get("child") == 1
