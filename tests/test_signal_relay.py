"""A signal that would end the process still ends it when the profiler stands in for its default
action, however it arrives.

Python runs a handler only when its main thread checks for signals. A SIGTERM delivered to
another thread (any thread may take a process-directed signal) or just before a blocking call
(a Pool's terminate() does that to workers waiting for the task queue) leaves a main thread
blocked in a system call waiting for ever: without a profiler the default action would have
ended the process at once. The relay (lineprofiler._signal_relay) sends the signal again to the
main thread until the handler has run. Real processes, real signals, both layers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from lineprofiler.runfiles import linesfile, workerfile

TIMEOUT = 60

# The main thread waits on a pipe nobody writes; another thread takes the SIGTERM.
BLOCKED = """\
import os, signal, sys, threading, time

def work(n):
    total = 0
    for i in range(n):
        total += i
    return total

def take_the_signal():
    time.sleep(0.2)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
    time.sleep(TIMEOUT)

def wait_forever():
    work(40)
    readable, _ = os.pipe()
    threading.Thread(target=take_the_signal, daemon=True).start()
    os.read(readable, 1)
"""


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _project(tmp_path, main: str):
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "app.py").write_text(BLOCKED.replace("TIMEOUT", str(TIMEOUT)) + textwrap.dedent(main))
    return root


def test_plain_python_ends_by_the_signal_taken_by_another_thread(tmp_path):
    """The behaviour to keep: the default action ends the process whichever thread took it."""
    project = _project(tmp_path, "wait_forever()\n")
    assert _run(["app.py"], project).returncode == -signal.SIGTERM


def test_the_line_profilers_stand_in_ends_a_main_thread_blocked_in_a_read(tmp_path):
    project = _project(tmp_path, "wait_forever()\n")
    saved = tmp_path / "lines.json"
    done = _run(["-m", "lineprofiler", "run", "-o", str(saved), "app.py"], project)
    assert done.returncode == -signal.SIGTERM, done.stderr
    files, problems = linesfile.load_lines(saved)
    assert not problems and len(files) == 1
    assert files[0].status == "signalled" and files[0].process["signal"] == "SIGTERM"
    work = next(fn for fn in files[0].functions if fn.qualname == "work")
    assert max(row.hits for row in work.lines) == 41  # the loop line: what ran before is kept


def test_the_accounting_profilers_flush_ends_a_main_thread_blocked_in_a_read(tmp_path):
    run_dir = tmp_path / "run"
    project = _project(
        tmp_path,
        f"""
        from lineprofiler import _signal_relay
        from lineprofiler.accounting import Profiler

        profiler = Profiler(run_dir={str(run_dir)!r}, role="worker", snapshot_interval_s=None)
        print("relayed", _signal_relay.watching(signal.SIGTERM), flush=True)
        with profiler.phase("wait"):
            wait_forever()
        """,
    )
    done = _run(["app.py"], project)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert "relayed True" in done.stdout
    paths = workerfile.find_worker_files(run_dir)
    assert len(paths) == 1
    document = workerfile.read_worker_file(paths[0])
    assert document["times"]["status"] == "signalled" and document["times"]["signal"] == "SIGTERM"


def test_the_relay_leaves_with_the_handler_it_serves(tmp_path):
    """A handler the program installs replaces the relay with Python's own C handler; closing the
    profiler puts the default action back, relay and all."""
    run_dir = tmp_path / "run"
    script = tmp_path / "handlers.py"
    script.write_text(
        textwrap.dedent(f"""
        import signal
        from lineprofiler import _signal_relay
        from lineprofiler.accounting import Profiler

        profiler = Profiler(run_dir={str(run_dir)!r}, snapshot_interval_s=None)
        print("profiler", _signal_relay.watching(signal.SIGTERM))
        profiler.close()
        print("closed", _signal_relay.watching(signal.SIGTERM), signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
        profiler = Profiler(run_dir={str(run_dir)!r}, snapshot_interval_s=None)
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        print("program's own", _signal_relay.watching(signal.SIGTERM))
        """)
    )
    done = _run([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["profiler True", "closed False True", "program's own False"]


def test_a_main_thread_stuck_in_c_gets_the_default_action_after_the_relay_gives_up(tmp_path):
    """sum() over a range runs in C holding the GIL and never checks for signals: no handler can
    run. The relay gives up and takes the default action, as python would have at once."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "stuck.py").write_text('print("ready", flush=True)\nsum(range(10**15))\n')
    saved = tmp_path / "lines.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineprofiler", "run", "-o", str(saved), "stuck.py"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM
