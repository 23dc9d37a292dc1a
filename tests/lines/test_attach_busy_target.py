"""``lineprofiler attach`` on a busy target: eight threads spinning in pure Python and its main
thread. There lineprofiler's import in the target is slow (each file it reads gives the GIL up,
and getting it back means waiting behind the spinning threads), and the command must say what
happened: started, or did not start within ``--start-timeout`` while the target lives on (never
"ended"), with nothing turned on in it afterwards, whenever the target gets to the request.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_attach import _attach, _one_line_error, _project, _stop, _tmpdir, needs_remote_exec

from lineprofiler.lines.saved import SavedProfile

# argv: the file whose existence stops it, the switch interval (the program's own setting).
BUSY = """\
import os
import sys
import threading
import time

stop_file = sys.argv[1]
sys.setswitchinterval(float(sys.argv[2]))
stopping = threading.Event()


def work(x):
    return x + 1


def spin():
    x = 0
    while not stopping.is_set():
        x = work(x)


def main():
    spinners = [threading.Thread(target=spin, name=f"spin-{i}") for i in range(8)]
    for thread in spinners:
        thread.start()
    print("ready", flush=True)
    x = 0
    while not (x % 20000 == 0 and os.path.exists(stop_file)):
        x += 1
    stopping.set()
    for thread in spinners:
        thread.join()
    # Until lineprofiler's threads, if it got to the request at all, have ended.
    deadline = time.monotonic() + 120
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    tools = [sys.monitoring.get_tool(tool) for tool in range(6)]
    print("tools", tools, "threads", [t.name for t in threading.enumerate()], flush=True)


main()
"""


def _start_busy(tmp_path: Path, switch_interval: float) -> tuple[subprocess.Popen[str], Path]:
    script = _project(tmp_path, BUSY)
    stop_file = tmp_path / "stop"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(stop_file), str(switch_interval)],
        cwd=script.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc, stop_file


NOTHING_LEFT = "tools [None, None, None, None, None, None] threads ['MainThread']\n"


@needs_remote_exec
@pytest.mark.slow
def test_a_busy_target_that_cannot_start_in_time_is_said_so_and_left_unchanged(tmp_path: Path) -> None:
    # A switch interval of 50 ms (the program's own setting): each of the import's reads costs the
    # starting thread a wait behind the spinners of that order, and the import takes well over
    # the 3 s given (8 to 20 s here), while the main thread gets to the request within them.
    proc, stop_file = _start_busy(tmp_path, 0.05)
    try:
        result = _attach(tmp_path, str(proc.pid), "--duration", "1", "--start-timeout", "3")
        alive = proc.poll() is None
        stop_file.touch()
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        _stop(proc)
    line = _one_line_error(result)
    assert alive
    assert f"pid {proc.pid} (python" in line and "did not start the line profiler within 3 s" in line
    assert "request is cancelled" in line and "ended" not in line
    # It took the cancelled request some time later: turned nothing on, said nothing, removed it.
    assert (stdout, stderr, proc.returncode) == (NOTHING_LEFT, "", 0)
    assert list(_tmpdir(tmp_path).iterdir()) == []


@needs_remote_exec
@pytest.mark.slow
def test_a_busy_target_starts_given_the_time(tmp_path: Path) -> None:
    proc, stop_file = _start_busy(tmp_path, 0.005)  # Python's default
    try:
        out = tmp_path / "busy.json"
        result = _attach(tmp_path, str(proc.pid), "--duration", "1", "--start-timeout", "120", "-o", str(out))
        stop_file.touch()
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        _stop(proc)
    assert result.returncode == 0, result.stderr
    assert f"lineprofiler: recording pid {proc.pid} (python" in result.stderr and "9 thread(s)" in result.stderr
    assert (stdout, stderr, proc.returncode) == (NOTHING_LEFT, "", 0)
    work = next(fs for key, fs in SavedProfile.load(out).get_stats().items() if key.qualname == "work")
    assert all(line.hits > 0 for line in work.lines.values())
    assert list(_tmpdir(tmp_path).iterdir()) == []
