"""`lineprofiler run`: the target runs as `python` would run it, and the tables follow."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers.cli import run_cli, run_cli_process
from lineprofiler import LineProfiler

WHOAMI = """\
import json, sys
def describe():
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    return {
        "argv": sys.argv, "path0": sys.path[0], "name": __name__, "file": __file__,
        "main_is_me": main.__dict__ is globals(), "spec": spec.name if spec else None,
        "package": __package__, "loader": type(__loader__).__name__, "doc": __doc__,
    }
"""

SCRIPT = '''\
"""the doc"""
import sys
import helper

if __name__ == "__main__":
    helper.work(50)
    print("WHOAMI " + helper.json.dumps(helper.describe_main()))
    if len(sys.argv) > 1 and sys.argv[1] == "exit3":
        sys.exit(3)
    if len(sys.argv) > 1 and sys.argv[1] == "exitmsg":
        sys.exit("bad things")
    if len(sys.argv) > 1 and sys.argv[1] == "raise":
        helper.fail()
    if len(sys.argv) > 1 and sys.argv[1] == "interrupt":
        raise KeyboardInterrupt
'''

HELPER = """\
import json, sys

def work(n):
    total = 0
    for i in range(n):
        total += i
    return total

def fail():
    raise ValueError("boom from the script")

def describe_main():
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    return {
        "argv": sys.argv, "path0": sys.path[0], "name": main.__name__, "file": main.__file__,
        "spec": spec.name if spec else None, "package": main.__package__,
        "loader": type(main.__loader__).__name__, "doc": main.__doc__,
    }
"""


def python(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True)


def whoami(stdout):
    (line,) = [x for x in stdout.splitlines() if x.startswith("WHOAMI ")]
    return json.loads(line[len("WHOAMI ") :])


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text(SCRIPT)
    (root / "app" / "helper.py").write_text(HELPER)
    return root


def test_a_script_runs_as_python_runs_it(project):
    cwd = project
    ours = run_cli_process("run", "app/main.py", "a", "--top", "3", cwd=cwd)
    theirs = python("app/main.py", "a", "--top", "3", cwd=cwd)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert whoami(ours.stdout) == whoami(theirs.stdout)
    info = whoami(ours.stdout)
    assert info["argv"] == ["app/main.py", "a", "--top", "3"] and info["name"] == "__main__"
    assert info["path0"] == str(project / "app") and info["doc"] == "the doc"
    # The tables: the script's own lines and its helper's.
    assert "Function: work at helper.py:" in ours.stdout  # the folder of the script: no git root
    assert re.search(r"Top \d+ of \d+ lines by time", ours.stdout)


def test_exit_statuses_are_pythons(project):
    # KeyboardInterrupt: python ends by SIGINT itself (a shell shows 130), and so does the runner.
    for arg, status in (("exit3", 3), ("exitmsg", 1), ("raise", 1), ("interrupt", -signal.SIGINT)):
        ours = run_cli_process("run", "app/main.py", arg, cwd=project)
        theirs = python("app/main.py", arg, cwd=project)
        assert ours.returncode == theirs.returncode == status, (arg, ours.stderr)
        assert "Top " in ours.stdout, arg  # what was recorded is printed all the same
    ours = run_cli_process("run", "app/main.py", "exitmsg", cwd=project)
    assert ours.stderr.strip() == "bad things"


def test_an_uncaught_exception_prints_pythons_traceback_first(project):
    ours = run_cli_process("run", "app/main.py", "raise", cwd=project)
    theirs = python("app/main.py", "raise", cwd=project)
    assert ours.returncode == 1
    assert ours.stderr == theirs.stderr  # same frames, same text: none of ours
    assert "lineprofiler" not in ours.stderr


def test_ctrl_c_prints_what_was_recorded(project):
    (project / "app" / "slow.py").write_text(
        "import helper, time\nhelper.work(10)\nprint('ready', flush=True)\nwhile True:\n    time.sleep(0.01)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineprofiler", "run", "app/slow.py"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT  # as python's own: it ends by the signal
    assert "KeyboardInterrupt" in err and "Function: work at helper.py" in out


def test_a_module_runs_as_python_m_runs_it(project):
    pkg = project / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(HELPER)
    (pkg / "cli.py").write_text(
        "from pkg import helper\nif __name__ == '__main__':\n"
        "    helper.work(5)\n    print('WHOAMI ' + helper.json.dumps(helper.describe_main()))\n"
    )
    (pkg / "__main__.py").write_text((pkg / "cli.py").read_text())
    for module in ("pkg.cli", "pkg"):
        ours = run_cli_process("run", "-m", module, "x", "-y", cwd=project)
        theirs = python("-m", module, "x", "-y", cwd=project)
        assert ours.returncode == theirs.returncode == 0, ours.stderr
        assert whoami(ours.stdout) == whoami(theirs.stdout)
        assert whoami(ours.stdout)["argv"][1:] == ["x", "-y"]
        assert "Function: work at helper.py" in ours.stdout  # the package folder


def test_the_console_script_and_options(project):
    exe = Path(sys.executable).with_name("lineprofiler")
    out = subprocess.run(
        [exe, "run", "--top", "2", "--functions", "0", "--sort", "hits", "app/main.py"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "Function:" not in out.stdout
    rows = [line for line in out.stdout.splitlines() if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 2 and "Top 2 of" in out.stdout and "lines by hits" in out.stdout
    assert "for i in range(n):" in rows[0]  # 51 hits: the most
    out = run_cli_process("run", "--min-us", "1e9", "app/main.py", cwd=project)
    assert "No line took at least" in out.stdout
    out = run_cli_process("run", "--exclude", "helper.py", "app/main.py", cwd=project)
    assert "helper.py" not in out.stdout and "main.py" in out.stdout


def test_the_project_folder_is_the_scripts_git_root(project):
    (project / "lib").mkdir()
    (project / "lib" / "far.py").write_text("def far():\n    return sum(range(10))\n")
    (project / "app" / "uses_far.py").write_text(
        "import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\n"
        "import far\nfar.far()\n"
    )
    out = run_cli_process("run", "proj/app/uses_far.py", cwd=project.parent)
    assert "Function: far at" not in out.stdout  # no git root: the script's folder only
    (project / ".git").mkdir()
    out = run_cli_process("run", "proj/app/uses_far.py", cwd=project.parent)
    assert "Function: far at lib/far.py:1" in out.stdout
    out = run_cli_process("run", "--project", project / "lib", "proj/app/uses_far.py", cwd=project.parent)
    assert "Function: far at far.py:1" in out.stdout and "uses_far" not in out.stdout
    out = run_cli_process(
        "run", "--project", project / "lib", "--include", "*/app/*", "proj/app/uses_far.py", cwd=project.parent
    )
    assert "uses_far.py" in out.stdout


def test_nothing_recorded_says_where_and_what_to_pass(project, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_cli_process("run", "--project", empty, "app/main.py", cwd=project)
    assert out.returncode == 0
    assert f"Project folder traced: {empty.resolve()}" in out.stdout
    assert re.search(r"Code objects that ran outside it: [\d,]+", out.stdout)
    assert "app/main.py" in out.stdout or "main.py" in out.stdout
    assert "--project DIR" in out.stdout and "--include GLOB" in out.stdout


def test_output_to_a_file_and_to_a_directory(project, tmp_path):
    target = tmp_path / "saved.json"
    out = run_cli_process("run", "-o", target, "app/main.py", "exit3", cwd=project)
    assert out.returncode == 3 and f"saved to {target}" in out.stderr
    saved = LineProfiler.load(target)
    (proc,) = saved.processes
    assert proc.status == "exited" and proc.process["exit_code"] == 3
    assert proc.process["argv"][0] == "app/main.py"
    assert any(key.qualname == "work" for key in saved.get_stats())
    view = run_cli("view", target, cwd=project)
    assert view.returncode == 0 and "Function: work at helper.py" in view.stdout
    out = run_cli_process("run", "-o", f"{tmp_path}/dir/", "app/main.py", cwd=project)
    (written,) = (tmp_path / "dir").iterdir()
    assert out.returncode == 0 and re.fullmatch(r"l_.+_\d+_[0-9a-f]{8}\.json", written.name)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "missing.py"], "can't open file"),
        (["run", "-m", "no_such_module_here"], "no module named 'no_such_module_here'"),
        (["run", "-m", "app"], "'app' is a package and cannot be run"),  # the stdlib's runnable set grows
        (["run", "-o", "app/main.py/out.json", "app/main.py"], "does not exist"),
        (["run", "-o", "/proc/lineprofiler-test.json", "app/main.py"], "cannot write there"),
        (["run", "--children", "-o", "app/main.py", "app/main.py"], "must be a directory"),
        (["run", "--project", "/no/such/folder", "app/main.py"], "project_folder does not exist"),
        (["run"], "give a script to run"),
        (["run", "--top", "0", "app/main.py"], "--top"),
        (["view", "nowhere"], "no such file"),
        (["view", "app/main.py"], "corrupt or truncated JSON"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(project, args, message):
    out = run_cli_process(*args, cwd=project)
    assert out.returncode == 2, out
    assert message in out.stderr and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "WHOAMI" not in out.stdout  # the script never ran


def test_view_of_a_future_file(project, tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"kind": "lineprofiler-lines", "schema_version": 99}))
    out = run_cli("view", path, cwd=project)
    assert out.returncode == 2 and "upgrade lineprofiler" in out.stderr and out.stderr.count("\n") == 1


def test_the_programs_own_profiler_takes_precedence(project):
    (project / "app" / "own.py").write_text(
        textwrap.dedent(
            """\
            import helper
            from lineprofiler import LineProfiler
            mine = LineProfiler()
            with mine:
                helper.work(30)
            mine.print_global_top_stats(top_n=1)
            helper.work(7)
            """
        )
    )
    (project / ".git").mkdir()
    out = run_cli_process("run", "app/own.py", cwd=project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Top 1 of")  # the program's own table, unharmed
    # The runner stepped aside during the program's block and recorded the rest.
    body = re.search(r"\n\s+\d+\s+([\d,]+)\s+.*total \+= i", out.stdout.split("Function: work")[1])
    assert body and body.group(1) == "7"


def test_threads_are_waited_for(project):
    (project / "app" / "threads.py").write_text(
        "import threading, time, helper\n"
        "def later():\n    time.sleep(0.2)\n    helper.work(99)\n"
        "threading.Thread(target=later).start()\n"
    )
    started = time.monotonic()
    out = run_cli_process("run", "app/threads.py", cwd=project)
    assert out.returncode == 0 and time.monotonic() - started >= 0.2
    assert re.search(r"\s+99\s+.*total \+= i", out.stdout)


def test_env_is_left_alone_without_children(project):
    (project / "app" / "env.py").write_text("import os\nprint('ENV', os.environ.get('PYTHONPATH'))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = run_cli_process("run", "-o", "somewhere/", "app/env.py", cwd=project, env=env)
    assert "ENV None" in out.stdout


def test_a_forked_child_that_runs_to_the_end_prints_nothing_of_ours(project, tmp_path):
    (project / "app" / "forky.py").write_text(
        "import os, helper\npid = os.fork()\nhelper.work(10)\nif pid:\n    os.waitpid(pid, 0)\n"
    )
    target = tmp_path / "forky.json"
    out = run_cli_process("run", "-o", target, "app/forky.py", cwd=project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("Top ") == 1 and out.stderr.count("saved to") == 1
    assert LineProfiler.load(target).processes[0].status == "exited"  # one writer: the runner
