"""A fork() made from C (no os.register_at_fork hook runs) never writes the parent's files.

The process forks through libc directly, as a C extension does. Its child enters phases before
it can know it is a child (those are dropped: they cannot be told apart from the parent's),
flushes, records more, closes and leaves with ``os._exit(0)``. The parent's worker file keeps
the parent's identity and numbers, the child's numbers are in a file of the child's pid, and
the parent keeps recording and snapshotting.

``live``: with the live file (the default), the recorder's tree is a shared mapping of it, and
the child's first entries go into the mapping it inherited until the C module's
pthread_atfork child handler detaches it (the lead's change to the live file); until then the
parent may read the child's nodes there, or crash on them. ``no live file`` shows the Python
side alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from lineprofiler.runfiles import workerfile

TIMEOUT = 120

SCRIPT = """
import ctypes
import json
import os
import sys
import time

from lineprofiler.accounting import Profiler
from lineprofiler.runfiles import workerfile

run_dir, live = sys.argv[1], sys.argv[2] == "live"
if not live:
    from lineprofiler.accounting import _snapshots

    _snapshots.attach_live = lambda *args: "left out by the test"
profiler = Profiler(run_dir=run_dir, snapshot_interval_s=0.5)
for _ in range(10):
    with profiler.phase("parent_work"):
        pass
profiler.flush()
parent_file = str(profiler.path)
# PyDLL: fork() called with the GIL held, as a C extension calls it. (CDLL lets go of the GIL
# first; a child forked while another thread held it could not run Python at all.)
pid = ctypes.PyDLL(None).fork()
if pid == 0:
    with profiler.phase("before_noticed"):
        pass
    profiler.flush()
    for _ in range(3):
        with profiler.phase("child_work"):
            pass
    profiler.close()
    os._exit(0)
_, status = os.waitpid(pid, 0)
right_after = workerfile.read_worker_file(parent_file)
live_after = None
if live:
    from lineprofiler.runfiles import livefile

    live_after = {p["path"]: p["entries"] for p in livefile.read_live(livefile.live_path(parent_file)).phases}
writes = right_after["snapshot"]["writes"]
for _ in range(5):
    with profiler.phase("parent_after"):
        pass
deadline = time.monotonic() + 60
while workerfile.read_worker_file(parent_file)["snapshot"]["writes"] <= writes and time.monotonic() < deadline:
    time.sleep(0.05)
periodic = workerfile.read_worker_file(parent_file)["snapshot"]["writes"] > writes
profiler.close()
print(json.dumps({"child": pid, "status": status, "parent_file": parent_file, "right_after": right_after,
                  "live_after": live_after, "periodic_after_fork": periodic}))
"""


def _phases(document) -> dict[str, int]:
    return {p["path"]: p["entries"] for p in document["phases"]}


@pytest.mark.parametrize(
    "live",
    [
        "live",
        "no live file",
    ],
)
def test_a_child_forked_from_c_writes_its_own_files_and_the_parent_keeps_its_own(tmp_path, live):
    run_dir = tmp_path / "profile"
    script = tmp_path / "c_fork.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    result = subprocess.run(
        [sys.executable, str(script), str(run_dir), "live" if live == "live" else "none"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    # What the C change decides, with the live file: the parent survives its snapshots, and
    # its live file holds none of the child's entries.
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    if live == "live":
        assert report["live_after"] == {"parent_work": 10}
    assert os.waitstatus_to_exitcode(report["status"]) == 0, result.stderr
    child_pid = report["child"]

    documents = [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]
    by_pid = {d["identity"]["pid"]: d for d in documents}
    assert len(documents) == 2 and child_pid in by_pid, [d["identity"]["pid"] for d in documents]
    parent_pid = next(pid for pid in by_pid if pid != child_pid)

    # Right after the child ended, the parent's file was still the parent's own.
    right_after = report["right_after"]
    assert right_after["identity"]["pid"] == parent_pid
    assert _phases(right_after) == {"parent_work": 10}
    assert right_after["times"]["status"] == "running"

    # The child's numbers, from when it knew, in its own file; what came before is dropped.
    child = by_pid[child_pid]
    assert child["identity"]["fork_parent_pid"] == parent_pid
    assert child["times"]["status"] == "exited"
    assert _phases(child) == {"child_work": 3}
    notes = [e for e in child["errors"] if "without Python's fork hooks" in e]
    assert len(notes) == 1 and "noticed at flush()" in notes[0] and "dropped" in notes[0], child["errors"]
    # No snapshot thread was started in it: the interpreter's lock there is as the parent's
    # threads left it, and a thread contending for it hung about one child in five.
    assert "no snapshot thread runs here" in notes[0]

    # The parent kept recording and snapshotting after the fork, and closed with its own numbers.
    parent = by_pid[parent_pid]
    assert report["periodic_after_fork"]
    assert parent["times"]["status"] == "exited"
    assert _phases(parent) == {"parent_work": 10, "parent_after": 5}
    assert not [e for e in parent["errors"] if "fork" in e], parent["errors"]
