"""``lineprofiler attach`` on a target that forks all through the attach: its stderr stays its own.

``os.fork()`` warns (a DeprecationWarning, "This process ... is multi-threaded, use of fork() may
lead to deadlocks in the child") when the process has any thread besides the one forking. The
target here has none of its own, forks without pause from before the attach to after the window
(while lineprofiler is imported in it, while the window is open, while it is saved), with every
DeprecationWarning shown, each time (``-W always``): none may appear, and nothing else either.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_attach import _attach, _project, _stop, _tmpdir, needs_remote_exec

from lineprofiler.lines.saved import SavedProfile

FORKER = """\
import multiprocessing
import os
import sys
import threading
import time


def on():
    mon = sys.monitoring
    return any(mon.get_tool(tool) == "lineprofiler" and mon.get_events(tool) for tool in range(6))


def nothing():
    pass


def fork_once(how):
    if how == "os.fork":
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    else:
        child = multiprocessing.get_context("fork").Process(target=nothing)
        child.start()
        child.join()


def step(i):
    return i * 2


def main():
    how = sys.argv[1]
    print("ready", flush=True)
    forks = forks_on = 0
    seen_on = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        now_on = on()
        seen_on = seen_on or now_on
        if now_on:
            forks_on += 1
            step(forks_on)
        fork_once(how)
        forks += 1
        # Until the window is over and every thread of lineprofiler's has ended.
        if seen_on and not now_on and threading.enumerate() == [threading.main_thread()]:
            break
    tools = [sys.monitoring.get_tool(tool) for tool in range(6)]
    print("forks in the window", forks_on > 0, "tools", tools, "threads", threading.active_count(), flush=True)


main()
"""


@needs_remote_exec
@pytest.mark.slow
@pytest.mark.parametrize("how", ["os.fork", "multiprocessing"])
def test_a_target_forking_through_the_attach_prints_nothing_new(tmp_path: Path, how: str) -> None:
    script = _project(tmp_path, FORKER)
    # Every DeprecationWarning, each time: multiprocessing's fork warns from its own module,
    # which the default filters hide, and a plain os.fork() only on its first warning.
    proc = subprocess.Popen(
        [sys.executable, "-W", "always::DeprecationWarning", str(script), how],
        cwd=script.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        out = tmp_path / "forking.json"
        result = _attach(tmp_path, str(proc.pid), "--duration", "1", "-o", str(out))
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        _stop(proc)
    assert result.returncode == 0, result.stderr
    assert stderr == ""
    assert stdout == "forks in the window True tools [None, None, None, None, None, None] threads 1\n"
    assert proc.returncode == 0
    step = next(fs for key, fs in SavedProfile.load(out).get_stats().items() if key.qualname == "step")
    assert all(line.hits > 0 for line in step.lines.values())
    assert list(_tmpdir(tmp_path).iterdir()) == []
