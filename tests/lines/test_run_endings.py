"""`lineprofiler run` ends as python ends, and the tables survive every ending they can.

Each case runs the same script twice, as a real `lineprofiler run` process and as plain
`python`, and compares the exit status (`returncode`: negative for a death by a signal, so the
wait status itself is compared); then checks that the tables were printed and the `-o` file
written where that is promised, and what is left where it cannot be (SIGKILL).
"""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from lineprofiler.runfiles import linesfile

HELPER = """\
def work(n):
    total = 0
    for i in range(n):
        total += i
    return total

def fail():
    raise ValueError("boom from the script")
"""

# One script, one ending per argument. `work(40)` runs first: its loop line has 41 hits.
ENDINGS = """\
import os, signal, sys, time
import helper

how = sys.argv[1]
helper.work(40)

def wait_to_be_killed():
    print("ready", flush=True)
    while True:
        time.sleep(0.05)

if how == "exit":
    sys.exit(eval(sys.argv[2]))
elif how == "raise":
    helper.fail()
elif how == "interrupt":
    raise KeyboardInterrupt
elif how == "closerange":
    os.closerange(0, 65536)
    sys.exit(3)
elif how == "stdout-none":
    sys.stdout = None
    sys.exit(4)
elif how == "stdout-closed":
    sys.stdout.close()
    sys.exit(6)
elif how == "stderr-closed":
    sys.stderr.close()
    sys.exit(5)
elif how == "stderr-closed-raise":
    sys.stderr.close()
    helper.fail()
elif how == "stderr-none":
    sys.stderr = None
    sys.exit("a message")
elif how == "_exit":
    print("left in the buffer")  # os._exit drops it, under python as under the runner
    os._exit(7)
elif how == "execv":
    os.execv(sys.executable, [sys.executable, "-c", "print('EXECED'); raise SystemExit(9)"])
elif how == "execlp":
    os.execlp("sh", "sh", "-c", "echo EXECED; exit 8")
elif how == "failed-exec":
    try:
        os.execv(sys.argv[2], [sys.argv[2]])
    except OSError as error:
        print("EXEC FAILED", error.errno, flush=True)
    helper.work(5)
elif how == "SIGALRM":
    print("DEFAULT", signal.getsignal(signal.SIGALRM) is signal.SIG_DFL, flush=True)
    signal.alarm(1)
    time.sleep(60)
elif how == "SIGPIPE":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as command-line tools do for `| head`
    reader, writer = os.pipe()
    os.close(reader)
    os.write(writer, b"x")
    time.sleep(60)
elif how == "SIGUSR2":
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(60)
elif how == "handler-then-default":
    previous = signal.signal(signal.SIGTERM, lambda *args: None)
    print("PREVIOUS", previous is signal.SIG_DFL, flush=True)
    signal.signal(signal.SIGTERM, previous)
    print("DEFAULT", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
elif how == "wait":
    wait_to_be_killed()
elif how == "fork-exit":
    pid = os.fork()
    if pid == 0:
        helper.work(3)
        os._exit(0)
    os.waitpid(pid, 0)
"""

TABLE = "Function: work at helper.py:1"
#: Python's own buffering, whatever the environment running the tests asks for.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "helper.py").write_text(HELPER)
    (root / "app" / "endings.py").write_text(ENDINGS)
    return root


def lineprofiler_run(project, *args, output=None, timeout=120):
    """`lineprofiler run [-o output] app/endings.py args...` as a real process."""
    before = ["-o", str(output)] if output is not None else []
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", "run", *before, "app/endings.py", *map(str, args)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def plain_python(project, *args, timeout=120):
    return subprocess.run(
        [sys.executable, "app/endings.py", *map(str, args)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def loop_hits(lines_file):
    """Hits of `for i in range(n):` in work(), from a read line-stats file."""
    for fn in lines_file.functions:
        if fn.qualname == "work":
            return next(r.hits for r in fn.lines if r.source and "for i in range(n)" in r.source)
    return 0


def without_addresses(text):
    return re.sub(r"0x[0-9a-f]+|refcount : \d+", "", text)


def read_one(path):
    files, problems = linesfile.load_lines(path)
    assert not problems and len(files) == 1, (files, problems)
    return files[0]


# -- statuses ----------------------------------------------------------------------------------


def test_sys_exit_keeps_any_code_and_the_file_says_what_the_parent_saw(project, tmp_path):
    for code in ("0", "3", "255", "256", "-1", "True", "None", "'a message'", "[1, 2]", "2**70"):
        saved = tmp_path / "exit.json"
        ours = lineprofiler_run(project, "exit", code, output=saved)
        theirs = plain_python(project, "exit", code)
        assert ours.returncode == theirs.returncode, (code, ours.stderr)
        assert TABLE in ours.stdout, code
        if "OverflowError" not in theirs.stderr:  # python -m words that one differently
            assert ours.stderr.startswith(theirs.stderr), code
        read = read_one(saved)  # readable whatever the code: the file holds the status seen
        assert read.status == "exited" and read.process["exit_code"] == theirs.returncode, code
        assert loop_hits(read) == 41


def test_an_exception_and_ctrl_c_end_as_python_ends(project, tmp_path):
    ours = lineprofiler_run(project, "raise")
    theirs = plain_python(project, "raise")
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr and TABLE in ours.stdout
    saved = tmp_path / "interrupted.json"
    ours = lineprofiler_run(project, "interrupt", output=saved)
    theirs = plain_python(project, "interrupt")
    assert ours.returncode == theirs.returncode == -signal.SIGINT  # python ends by SIGINT itself
    assert ours.stderr.startswith(theirs.stderr) and TABLE in ours.stdout
    read = read_one(saved)
    assert read.status == "signalled" and read.process["signal"] == "SIGINT" and loop_hits(read) == 41


@pytest.mark.parametrize(
    "how, tables_on_stdout",
    [
        ("closerange", False),  # every descriptor closed: the file is what is left
        ("stdout-none", True),  # the stream Python started with still works
        ("stdout-closed", True),  # its descriptor is still open
        ("stderr-closed", True),
        ("stderr-closed-raise", True),
        ("stderr-none", True),
    ],
)
def test_closed_or_dropped_streams_keep_the_status(project, tmp_path, how, tables_on_stdout):
    saved = tmp_path / f"{how}.json"
    ours = lineprofiler_run(project, how, output=saved)
    theirs = plain_python(project, how)
    assert ours.returncode == theirs.returncode, ours.stderr
    assert "internal error" not in ours.stderr + ours.stdout and "Traceback" not in ours.stdout
    assert (TABLE in ours.stdout) == tables_on_stdout
    # The program's own words, where python puts them (a closed stderr: CPython's last-resort dump).
    assert without_addresses(ours.stderr).startswith(without_addresses(theirs.stderr))
    read = read_one(saved)
    assert read.status == "exited" and read.process["exit_code"] == theirs.returncode and loop_hits(read) == 41


# -- endings that skip the runner ---------------------------------------------------------------


def test_os_exit_keeps_its_code_and_the_tables(project, tmp_path):
    saved = tmp_path / "os_exit.json"
    ours = lineprofiler_run(project, "_exit", output=saved)
    theirs = plain_python(project, "_exit")
    assert ours.returncode == theirs.returncode == 7
    assert TABLE in ours.stdout and f"saved to {saved}" in ours.stderr
    for out in (ours.stdout, theirs.stdout):  # os._exit drops it, and the runner does not flush it
        assert "left in the buffer" not in out.splitlines()
    read = read_one(saved)
    assert read.status == "exited" and read.process["exit_code"] == 7 and loop_hits(read) == 41


@pytest.mark.parametrize("how, code", [("execv", 9), ("execlp", 8)])
def test_an_exec_saves_first_and_the_new_program_runs_unchanged(project, tmp_path, how, code):
    saved = tmp_path / f"{how}.json"
    ours = lineprofiler_run(project, how, output=saved)
    theirs = plain_python(project, how)
    assert ours.returncode == theirs.returncode == code
    assert theirs.stdout == "EXECED\n"
    assert ours.stdout.endswith("EXECED\n") and TABLE in ours.stdout  # the tables, then the new program
    read = read_one(saved)
    assert read.status == "exited" and read.process["exit_code"] is None and loop_hits(read) == 41


def test_an_exec_that_fails_goes_on_recording(project, tmp_path):
    not_a_program = tmp_path / "not-a-program"
    not_a_program.write_bytes(b"\0\1\2 neither ELF nor a script\n")
    not_a_program.chmod(0o755)
    saved = tmp_path / "failed.json"
    ours = lineprofiler_run(project, "failed-exec", not_a_program, output=saved)
    theirs = plain_python(project, "failed-exec", not_a_program)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert "EXEC FAILED" in ours.stdout and "EXEC FAILED" in theirs.stdout
    read = read_one(saved)  # the end's file, whole: both calls of work()
    assert read.status == "exited" and read.process["exit_code"] == 0 and loop_hits(read) == 41 + 6


@pytest.mark.parametrize("name", ["SIGALRM", "SIGPIPE", "SIGUSR2"])
def test_a_signal_at_its_default_action_saves_then_ends_the_run_by_that_signal(project, tmp_path, name):
    saved = tmp_path / f"{name}.json"
    ours = lineprofiler_run(project, name, output=saved)
    theirs = plain_python(project, name)
    assert ours.returncode == theirs.returncode == -getattr(signal, name), ours.stderr
    assert TABLE in ours.stdout
    if name == "SIGALRM":  # our stand-in for the default action does not show
        assert "DEFAULT True" in ours.stdout and "DEFAULT True" in theirs.stdout
    read = read_one(saved)
    assert read.status == "signalled" and read.process["signal"] == name and loop_hits(read) == 41


def test_a_handler_put_back_to_the_default_still_saves(project, tmp_path):
    saved = tmp_path / "put-back.json"
    ours = lineprofiler_run(project, "handler-then-default", output=saved)
    theirs = plain_python(project, "handler-then-default")
    assert ours.returncode == theirs.returncode == -signal.SIGTERM
    for out in (ours.stdout, theirs.stdout):
        assert "PREVIOUS True" in out and "DEFAULT True" in out  # what the program is told
    read = read_one(saved)
    assert read.status == "signalled" and read.process["signal"] == "SIGTERM" and loop_hits(read) == 41


def _started_then(project, output, signum):
    """Run `wait`, send ``signum`` once it is ready; (returncode, stdout, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineprofiler", "run", "-o", str(output), "app/endings.py", "wait"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize("to", ["file", "dir"])
def test_sigterm_from_outside_saves_prints_and_ends_by_sigterm(project, tmp_path, to):
    output = tmp_path / "term.json" if to == "file" else tmp_path / "term-dir"
    code, out, err = _started_then(project, f"{output}/" if to == "dir" else output, signal.SIGTERM)
    assert code == -signal.SIGTERM, err
    assert TABLE in out and f"saved to {output}" in err
    read = read_one(output)
    assert read.status == "signalled" and read.process["signal"] == "SIGTERM" and loop_hits(read) == 41


@pytest.mark.parametrize("to", ["file", "dir"])
def test_sigkill_leaves_the_start_file_and_view_says_so(project, tmp_path, to):
    output = tmp_path / "killed.json" if to == "file" else tmp_path / "killed-dir"
    code, out, err = _started_then(project, f"{output}/" if to == "dir" else output, signal.SIGKILL)
    assert code == -signal.SIGKILL
    read = read_one(output)  # written when the run began: it says that it began, and what it was
    assert read.status == "started" and not read.functions
    assert read.process["argv"] == ["app/endings.py", "wait"] and read.process["label"] == "main"
    assert read.process["pid"] > 0 and read.profile["project_folder"] == str(project / "app")
    view = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "view", str(output)], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert view.returncode == 0 and "left nothing" in view.stdout and "No line timings recorded" in view.stdout


def test_a_forked_child_that_calls_os_exit_prints_nothing_of_ours(project, tmp_path):
    saved = tmp_path / "forked.json"
    ours = lineprofiler_run(project, "fork-exit", output=saved)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.count("Top ") == 1 and ours.stderr.count("saved to") == 1
    read = read_one(saved)  # the runner's, in the parent: the child's work is not in it
    assert read.status == "exited" and read.pid != 0 and loop_hits(read) == 41


# -- --children ---------------------------------------------------------------------------------

CHILD = """\
import os, signal, sys, time
import helper

helper.work(40)
how = sys.argv[1]
if how == "_exit":
    os._exit(5)
elif how == "exec":
    os.execv("/bin/sh", ["sh", "-c", "exit 6"])
elif how == "SIGALRM":
    signal.alarm(1)
    time.sleep(60)
elif how == "SIGTERM":
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
"""

DRIVER = """\
import os, subprocess, sys
import helper

here = os.path.dirname(os.path.abspath(__file__))
for how in ("_exit", "exec", "SIGALRM", "SIGTERM"):
    child = subprocess.Popen([sys.executable, os.path.join(here, "child.py"), how])
    print("CHILD", how, child.pid, child.wait(), flush=True)
pid = os.fork()
if pid == 0:
    helper.work(40)
    os._exit(4)
print("CHILD fork", pid, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def test_children_save_on_os_exit_exec_and_signals_at_their_default(project, tmp_path):
    (project / "app" / "child.py").write_text(CHILD)
    (project / "app" / "driver.py").write_text(DRIVER)
    out_dir = tmp_path / "children"
    done = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "run", "--children", "-o", str(out_dir), "app/driver.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    children = {}
    for line in done.stdout.splitlines():
        if line.startswith("CHILD "):
            _, how, pid, code = line.split()
            children[how] = (int(pid), int(code))
    assert {how: code for how, (_, code) in children.items()} == {
        "_exit": 5,
        "exec": 6,
        "SIGALRM": -signal.SIGALRM,
        "SIGTERM": -signal.SIGTERM,
        "fork": 4,
    }
    files = {f.pid: f for f in linesfile.load_lines(out_dir)[0]}
    expected = {
        "_exit": ("exited", None, 5),
        "exec": ("exited", None, None),
        "SIGALRM": ("signalled", "SIGALRM", None),
        "SIGTERM": ("signalled", "SIGTERM", None),
        "fork": ("exited", None, 4),
    }
    for how, (pid, _) in children.items():
        read = files[pid]
        assert (read.status, read.process["signal"], read.process["exit_code"]) == expected[how], how
        assert loop_hits(read) == 41, how
    assert "left nothing" not in done.stdout


def test_the_stand_in_is_taken_out_when_the_run_ends(project):
    """After the program, atexit handlers see the signals and functions as the run found them."""
    (project / "app" / "atexit_view.py").write_text(
        textwrap.dedent(
            """\
            import atexit, os, signal
            import helper

            def look():
                raw = signal.getsignal.__module__, os._exit.__module__, signal.signal.__module__
                print("AT EXIT", signal.getsignal(signal.SIGALRM) is signal.SIG_DFL, raw, flush=True)

            atexit.register(look)
            helper.work(3)
            """
        )
    )
    ours = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "run", "app/atexit_view.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    theirs = subprocess.run(
        [sys.executable, "app/atexit_view.py"], cwd=project, capture_output=True, text=True, timeout=60, env=ENV
    )
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    (line,) = [x for x in theirs.stdout.splitlines() if x.startswith("AT EXIT")]
    assert line in ours.stdout.splitlines()


def test_the_start_file_is_there_while_the_program_runs(project, tmp_path):
    saved = tmp_path / "running.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineprofiler", "run", "-o", str(saved), "app/endings.py", "wait"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        document = json.loads(saved.read_text())
        assert document["process"]["status"] == "started" and document["process"]["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT  # Ctrl-C: as python, the end of the run's file replaces it
    assert read_one(saved).status == "signalled" and TABLE in out
