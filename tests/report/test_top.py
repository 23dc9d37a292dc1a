"""``lineprofiler top``: a real running job (a subprocess with a Profiler doing phases in a loop),
viewed once (``--once``) and live under tmux, where ``q`` must quit and leave the terminal as it
was."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

JOB = """
import sys, time
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role="trainer", enabled=True, snapshot_interval_s=30.0)
with prof.phase("warmup"):
    pass
steps = 0
while True:
    with prof.phase("step"):
        with prof.phase("forward"):
            time.sleep(0.002)
        with prof.phase("backward"):
            time.sleep(0.001)
            prof.count("samples", 32)
    steps += 1
    if steps == 3:
        print("ready", flush=True)  # some whole steps are in the live file
"""


@pytest.fixture
def job(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "ready\n", (line, proc.stderr.read() if proc.stderr else "")
        yield proc, run_dir
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(timeout=30)


def _top(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", "top", *args], capture_output=True, text=True, timeout=60
    )


def test_once_prints_the_role_and_its_phases(job: tuple[subprocess.Popen[str], Path]) -> None:
    proc, run_dir = job
    result = _top(str(run_dir), "--once")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out  # one frame, plain text
    assert "role trainer  (1 process" in out
    for phase in ("step/forward", "step/backward", "step"):
        assert f"  {phase} " in out
    assert "counter samples (step/backward)" in out
    assert "rates: since start" in out
    assert f"updating: pid {proc.pid}" in out
    forward = next(line for line in out.splitlines() if line.strip().startswith("step/forward"))
    share, rate = forward.split()[1:3]
    assert share.endswith("%") and float(share[:-1]) > 0
    assert rate.endswith("/s") and float(rate[:-2].replace(",", "")) > 0


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = _top(str(tmp_path / "nope"), "--once")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "no such directory" in missing.stderr
    (tmp_path / "empty" / "workers").mkdir(parents=True)
    empty = _top(str(tmp_path / "empty"))
    assert empty.returncode == 2
    assert empty.stderr.count("\n") == 1 and "no live files" in empty.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert _top(str(a_file), "--once").returncode == 2
    bad_interval = _top(str(tmp_path), "--interval", "0")
    assert bad_interval.returncode == 2 and bad_interval.stderr.count("\n") == 1


class _Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30, check=True
        )
        return done.stdout

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self("capture-pane", "-p", "-t", "top")
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not on the screen within {timeout}s:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_live_view_under_tmux_quits_on_q_and_restores_the_terminal(
    job: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    proc, run_dir = job
    tmux = _Tmux(f"lp-top-{os.getpid()}")
    marker = tmp_path / "after"
    # After top exits, the shell prints the terminal's modes: cbreak must be undone.
    shell = (
        f"{sys.executable} -m lineprofiler top {run_dir} --interval 0.25; echo TOP-EXITED rc=$?; "
        f"stty -a > {marker}; sleep 60"
    )
    tmux("new-session", "-d", "-s", "top", "-x", "120", "-y", "40", shell)
    try:
        screen = tmux.wait_for("rates: last 0.25s")
        screen = tmux.wait_for("step/backward")
        assert "role trainer" in screen and "step/forward" in screen
        # Waited for, not read off that screen: a job held up for three intervals (a loaded
        # machine) is rightly shown stalled until it writes again.
        tmux.wait_for(f"updating: pid {proc.pid}")
        # A process that stops changing its live file is marked.
        os.kill(proc.pid, signal.SIGSTOP)
        screen = tmux.wait_for(f"STALLED: pid {proc.pid}")
        assert "1 process: 1 stalled" in screen
        os.kill(proc.pid, signal.SIGCONT)
        tmux.wait_for(f"updating: pid {proc.pid}")
        tmux("send-keys", "-t", "top", "q")
        screen = tmux.wait_for("TOP-EXITED rc=0")
        assert "role trainer" not in screen  # the alternate screen is gone: the shell's own screen is back
        deadline = time.monotonic() + 10
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        modes = marker.read_text().split()
        assert "icanon" in modes and "echo" in modes, modes
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_ctrl_c_quits_cleanly(job: tuple[subprocess.Popen[str], Path], tmp_path: Path) -> None:
    _, run_dir = job
    tmux = _Tmux(f"lp-top-c-{os.getpid()}")
    marker = tmp_path / "after"
    shell = f"{sys.executable} -m lineprofiler top {run_dir}; echo TOP-EXITED rc=$?; stty -a > {marker}; sleep 60"
    tmux("new-session", "-d", "-s", "top", "-x", "100", "-y", "30", shell)
    try:
        tmux.wait_for("role trainer")
        tmux("send-keys", "-t", "top", "C-c")
        screen = tmux.wait_for("TOP-EXITED rc=0")
        assert "Traceback" not in screen
        deadline = time.monotonic() + 10
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        modes = marker.read_text().split()
        assert "icanon" in modes and "echo" in modes, modes
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True, timeout=30)
