"""``lineprofiler attach PID``: real target processes, attached through sys.remote_exec (3.14+).

Each target is a real Python process started here; the command runs as its own process too, as a
user runs it. What must hold: exact hits for what ran inside the window (in the main thread and in
a thread that was already running), the target's own output and exit status unchanged, nothing
left on in it afterwards (checked by the target itself), and one clear line for each target that
cannot be attached to.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lineprofiler.lines.saved import SavedProfile

HAS_REMOTE_EXEC = hasattr(sys, "remote_exec")
needs_remote_exec = pytest.mark.skipif(
    not HAS_REMOTE_EXEC, reason=f"sys.remote_exec is new in Python 3.14; this is {sys.version.split()[0]}"
)

STEPS = 200

# Runs STEPS calls of step() in the main thread and of thread_step() in a thread started before
# the window, only while the window is open; then waits until the window is over and says what
# it can see of the profiler: no tool id, no thread, no trace function.
TARGET = f"""\
import sys
import threading
import time

STEPS = {STEPS}


def tools():
    return [sys.monitoring.get_tool(tool) for tool in range(6)]


def on():
    # The tool id is taken first and its events set last: on once they are.
    mon = sys.monitoring
    return any(mon.get_tool(tool) == "lineprofiler" and mon.get_events(tool) for tool in range(6))


def step(i):
    total = 0
    for k in range(3):
        total += k * i
    return total


def thread_step(i):
    return i + 1


def worker(go):
    go.wait()
    for i in range(STEPS):
        thread_step(i)


def main():
    go = threading.Event()
    thread = threading.Thread(target=worker, args=(go,), name="worker")
    thread.start()
    print("ready", flush=True)
    done = 0
    while done < STEPS:
        if on():
            done += 1
            step(done)
            go.set()
        else:
            time.sleep(0.001)
    thread.join()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not on() and [t.name for t in threading.enumerate()] == ["MainThread"]:
            break
        time.sleep(0.01)
    names = [t.name for t in threading.enumerate()]
    print("steps", done, "tools", tools(), "threads", names, "trace", sys.gettrace(), flush=True)
    sys.exit(3)


main()
"""


def _project(tmp_path: Path, source: str, name: str = "target.py") -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    (folder / ".git").mkdir(exist_ok=True)
    (folder / name).write_text(source)
    return folder / name


def _start(script: Path, *python_args: str, python: str = sys.executable, env: dict[str, str] | None = None):
    proc = subprocess.Popen(
        [python, *python_args, str(script)],
        cwd=script.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == "ready\n", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _attach(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(_tmpdir(tmp_path))}
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", "attach", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _tmpdir(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir(exist_ok=True)
    return folder


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("lineprofiler: ", "lineprofiler attach: ")), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


@needs_remote_exec
def test_exact_hits_in_the_window_and_nothing_left(tmp_path: Path) -> None:
    script = _project(tmp_path, TARGET)
    proc = _start(script)
    try:
        out = tmp_path / "attached.json"
        result = _attach(tmp_path, str(proc.pid), "--duration", "2", "-o", str(out))
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        _stop(proc)
    assert result.returncode == 0, result.stderr
    assert f"line stats saved to {out}" in result.stderr
    assert "step" in result.stdout
    # The target's own output and status, as without the profiler, and nothing of it left on.
    assert stdout == f"steps {STEPS} tools [None, None, None, None, None, None] threads ['MainThread'] trace None\n"
    assert stderr == ""
    assert proc.returncode == 3
    stats = SavedProfile.load(out).get_stats()
    by_name = {key.qualname: fs for key, fs in stats.items()}
    source = script.read_text().splitlines()

    def hits(qualname: str, text: str) -> int:
        lineno = next(i for i, line in enumerate(source, 1) if line.strip() == text)
        return by_name[qualname].lines[lineno].hits

    assert hits("step", "total = 0") == STEPS
    assert hits("step", "total += k * i") == 3 * STEPS
    assert hits("step", "return total") == STEPS
    # A thread that was running before the window: its calls inside the window, all of them.
    assert hits("thread_step", "return i + 1") == STEPS
    assert hits("worker", "thread_step(i)") == STEPS
    # The main thread's frame that was running when the profiler came on.
    assert hits("main", "done += 1") == STEPS
    assert hits("main", "step(done)") == STEPS
    assert list(_tmpdir(tmp_path).iterdir()) == []  # the attach folder is gone


@needs_remote_exec
def test_default_output_is_a_file_view_reads(tmp_path: Path) -> None:
    script = _project(tmp_path, TARGET)
    proc = _start(script)
    try:
        result = _attach(tmp_path, str(proc.pid), "--duration", "1")
        proc.communicate(timeout=90)
    finally:
        _stop(proc)
    assert result.returncode == 0, result.stderr
    files = list((tmp_path / "profile" / "lines").glob(f"l_*_{proc.pid}_*.json"))
    assert len(files) == 1
    view = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "view", str(files[0])], capture_output=True, text=True, timeout=60
    )
    assert view.returncode == 0, view.stderr
    assert "attached" in view.stdout and "thread_step" in view.stdout


BLOCKED = """\
import sys

print("ready", flush=True)
sys.stdin.readline()  # blocked in C until the test writes a line
x = 0
for i in range(200000):
    x += i
print("done", [sys.monitoring.get_tool(tool) for tool in range(6)], "lineprofiler" in sys.modules, flush=True)
"""


def _start_blocked(script: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=script.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


@needs_remote_exec
def test_target_blocked_in_c_times_out_and_later_ignores_the_request(tmp_path: Path) -> None:
    script = _project(tmp_path, BLOCKED, "blocked.py")
    proc = _start_blocked(script)
    try:
        result = _attach(tmp_path, str(proc.pid), "--duration", "1", "--start-timeout", "1")
        stdout, stderr = proc.communicate("go\n", timeout=60)
    finally:
        _stop(proc)
    line = _one_line_error(result)
    assert "did not start the line profiler within 1 s" in line and "blocked" in line
    # When the read returned, the target ran the cancelled request: it did nothing, said nothing.
    assert stdout == "done [None, None, None, None, None, None] False\n"
    assert stderr == ""
    assert proc.returncode == 0
    assert list(_tmpdir(tmp_path).iterdir()) == []


SLEEPER = """\
import time

print("ready", flush=True)
time.sleep(60)
"""


@needs_remote_exec
@pytest.mark.parametrize(
    ("how", "expected"),
    [("env", "PYTHON_DISABLE_REMOTE_DEBUG is set"), ("option", "-X disable_remote_debug")],
)
def test_remote_debugging_disabled(tmp_path: Path, how: str, expected: str) -> None:
    script = _project(tmp_path, SLEEPER)
    env = {**os.environ, "PYTHON_DISABLE_REMOTE_DEBUG": "1"} if how == "env" else None
    args = ("-X", "disable_remote_debug") if how == "option" else ()
    proc = _start(script, *args, env=env)
    try:
        line = _one_line_error(_attach(tmp_path, str(proc.pid)))
    finally:
        _stop(proc)
    assert expected in line and f"pid {proc.pid}" in line


@needs_remote_exec
def test_target_without_lineprofiler(tmp_path: Path) -> None:
    script = _project(tmp_path, SLEEPER.replace("time.sleep(60)", "while True:\n    time.sleep(0.01)"))
    proc = _start(script, "-S")  # no site: no site-packages, no lineprofiler
    try:
        line = _one_line_error(_attach(tmp_path, str(proc.pid)))
        assert proc.poll() is None  # it goes on
    finally:
        _stop(proc)
    assert "cannot import lineprofiler" in line and "install with-line-profiler" in line


@needs_remote_exec
def test_target_of_another_python_version(tmp_path: Path) -> None:
    mine = "%d.%d" % sys.version_info[:2]
    others = [shutil.which(f"python{v}") for v in ("3.14", "3.15", "3.16") if v != mine]
    other = next((found for found in others if found), None)
    if other is None:
        pytest.skip("no Python 3.14+ of another version here")
    script = _project(tmp_path, SLEEPER)
    proc = _start(script, python=other)
    try:
        line = _one_line_error(_attach(tmp_path, str(proc.pid)))
    finally:
        _stop(proc)
    assert "needs the same version on both sides" in line


def _older_python() -> str | None:
    if not HAS_REMOTE_EXEC:
        return sys.executable
    for version in ("3.13", "3.12", "3.11"):
        found = shutil.which(f"python{version}")
        if found:
            return found
    return None


def test_target_older_than_3_14(tmp_path: Path) -> None:
    python = _older_python()
    if python is None:
        pytest.skip("no Python older than 3.14 here to start a target with")
    script = _project(tmp_path, SLEEPER)
    proc = _start(script, python=python)
    try:
        line = _one_line_error(_attach(tmp_path, str(proc.pid)))
    finally:
        _stop(proc)
    assert f"pid {proc.pid}" in line and "needs Python 3.14 or newer in the target" in line


def test_no_such_process(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    line = _one_line_error(_attach(tmp_path, str(gone.pid)))
    assert line == f"lineprofiler: no process with pid {gone.pid} is running"


def test_not_python(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.2)  # exec'd
        line = _one_line_error(_attach(tmp_path, str(sleeper.pid)))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert f"pid {sleeper.pid} (sleep) is not a Python process" in line


def test_bad_pid_argument(tmp_path: Path) -> None:
    line = _one_line_error(_attach(tmp_path, "nope"))
    assert "not a process id" in line


def test_version_from_proc() -> None:
    from lineprofiler.lines.attach import target_python

    assert target_python("/usr/bin/python3.14", "") == (3, 14)
    assert target_python("/opt/app/server", "7f0 r-xp /usr/lib/libpython3.12.so.1.0\n") == (3, 12)
    assert target_python("/opt/app/server", "7f0 r-xp /usr/lib/python3.11/lib-dynload/_json.so\n") == (3, 11)
    assert target_python("/usr/bin/sleep", "7f0 r-xp /usr/lib/libc.so.6\n") is None


EXITS_EARLY = f"""\
import sys
import time


def step(i):
    return i * 2


def main():
    print("ready", flush=True)
    mon = sys.monitoring
    while not any(mon.get_tool(tool) == "lineprofiler" and mon.get_events(tool) for tool in range(6)):
        time.sleep(0.001)
    for i in range({STEPS}):
        step(i)
    print("leaving", flush=True)
    sys.exit(5)


main()
"""


@needs_remote_exec
def test_target_exiting_during_the_window_keeps_what_it_recorded(tmp_path: Path) -> None:
    script = _project(tmp_path, EXITS_EARLY)
    proc = _start(script)
    try:
        out = tmp_path / "early.json"
        result = _attach(tmp_path, str(proc.pid), "--duration", "60", "-o", str(out))
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        _stop(proc)
    assert result.returncode == 0, result.stderr
    assert "exited during the window" in result.stderr
    assert (stdout, stderr, proc.returncode) == ("leaving\n", "", 5)
    saved = SavedProfile.load(out)
    assert saved.processes[0].process["status"] == "exited"
    step = next(fs for key, fs in saved.get_stats().items() if key.qualname == "step")
    assert [line.hits for line in step.lines.values()] == [STEPS]


@needs_remote_exec
def test_interrupted_before_the_target_started_leaves_it_unchanged(tmp_path: Path) -> None:
    script = _project(tmp_path, BLOCKED, "blocked.py")
    proc = _start_blocked(script)
    cli = None
    try:
        temp = _tmpdir(tmp_path)
        cli = subprocess.Popen(
            [sys.executable, "-m", "lineprofiler", "attach", str(proc.pid), "--start-timeout", "60"],
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(temp)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while not any(temp.glob("*/request.json")) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # handed to the target by now (the folder is written first)
        cli.send_signal(signal.SIGINT)
        cli_out, cli_err = cli.communicate(timeout=30)
        stdout, stderr = proc.communicate("go\n", timeout=60)
    finally:
        _stop(proc)
        if cli is not None and cli.poll() is None:
            cli.kill()
            cli.communicate()
    assert cli.returncode == 130, cli_err
    assert "Traceback" not in cli_err
    assert (stdout, stderr, proc.returncode) == ("done [None, None, None, None, None, None] False\n", "", 0)
    assert list(temp.iterdir()) == []


def test_another_users_process(tmp_path: Path) -> None:
    import pwd

    if os.geteuid() != 0:
        pytest.skip("needs root, to run the command as another user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' here")
    script = _project(tmp_path, SLEEPER)
    proc = _start(script)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "lineprofiler", "attach", str(proc.pid)],
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
            user=nobody.pw_uid,
            env={**os.environ, "TMPDIR": "/tmp"},
        )
    except PermissionError as error:
        pytest.skip(f"user nobody cannot run {sys.executable}: {error}")
    finally:
        _stop(proc)
    if "lineprofiler: " not in result.stderr:
        pytest.skip(f"user nobody cannot run lineprofiler here: {result.stderr.strip()[-200:]}")
    line = _one_line_error(result)
    assert f"pid {proc.pid} (python" in line and "belongs to uid 0" in line and "as root" in line


def test_interpreter_options_of_a_command_line() -> None:
    from lineprofiler.lines.attach import _interpreter_options

    def parse(line: str) -> tuple[list[bytes], bool]:
        return _interpreter_options([part.encode() for part in line.split()])

    assert parse("python3.14 -X disable_remote_debug app.py") == ([b"disable_remote_debug"], False)
    assert parse("python3.14 -Xdisable_remote_debug -c pass") == ([b"disable_remote_debug"], False)
    assert parse("python3.14 -u -X dev -m serve -X disable_remote_debug") == ([b"dev"], False)
    assert parse("python3.14 app.py -X disable_remote_debug") == ([], False)
    assert parse("python3.14 -sE -W error app.py") == ([], True)
    assert parse("python3.14 -I app.py") == ([], True)


@needs_remote_exec
def test_a_second_attach_during_a_window_is_refused(tmp_path: Path) -> None:
    script = _project(tmp_path, SLEEPER.replace("time.sleep(60)", "while True:\n    time.sleep(0.01)"))
    proc = _start(script)
    first = None
    try:
        first = subprocess.Popen(
            [sys.executable, "-m", "lineprofiler", "attach", str(proc.pid), "--duration", "3", "-o", "first.json"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert first.stderr is not None
        assert first.stderr.readline().startswith(f"lineprofiler: recording pid {proc.pid} ")
        line = _one_line_error(_attach(tmp_path, str(proc.pid), "-o", "second.json"))
        first_out, first_err = first.communicate(timeout=60)
    finally:
        _stop(proc)
        if first is not None and first.poll() is None:
            first.kill()
            first.communicate()
    assert "another lineprofiler attach is recording in this process" in line
    assert first.returncode == 0, first_err
    assert (tmp_path / "first.json").is_file() and not (tmp_path / "second.json").exists()
