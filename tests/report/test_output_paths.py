"""A path the user names for a command's output is written to, never replaced.

Every command that writes a file the user named (``report --html`` and ``-o``, ``trace --html``
and ``-o``, ``compare --html``, ``export --perfetto``, ``view --html``, ``run -o`` and
``run --html``) runs here as a real process against a real FIFO (read as it is written), a real
character device (a null device made with ``mknod`` in a temporary folder, as root: never the
system's ``/dev``, which a regression would destroy), a link to that device (the shape of
``/dev/stdout``), ``/proc/self/fd/1``, a listening socket, a directory and a missing folder. A
FIFO or a device is written into and is still there afterwards; a regular file is still
replaced whole (a temporary file renamed over it); a directory or a missing folder is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from .test_story_path import slow_actor_run

SCRIPT = textwrap.dedent(
    """
    def work(n):
        total = 0
        for i in range(n):
            total += i * i
        return total

    work(20_000)
    """
)


def cli(*args: object, cwd: Path | None = None, **popen: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LINEPROFILER_PROGRESS_AFTER_S": "1000"}
    env.pop("LINEPROFILER_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "lineprofiler", *map(str, args)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        **popen,  # type: ignore[arg-type]
    )


def finished(process: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, (out or b"").decode(), (err or b"").decode()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A traced run directory, a project with a script, and a line profile saved by ``run -o``."""
    folder = tmp_path_factory.mktemp("inputs")
    slow_actor_run(folder / "run")
    project = folder / "project"
    project.mkdir()
    (project / "work.py").write_text(SCRIPT)
    saved = folder / "saved.json"
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    status, _, err = finished(cli("run", "-o", saved, "work.py", cwd=project, **pipes))
    assert status == 0, err
    return {"run": folder / "run", "project": project, "saved": saved}


def _is_html(data: bytes) -> bool:
    return data.lstrip().lower().startswith(b"<!doctype html") and data.rstrip().endswith(b"</html>")


def _is_json(data: bytes) -> bool:
    return isinstance(json.loads(data), dict)


def _is_story(data: bytes) -> bool:
    return b"Critical path" in data


#: Each command that writes a path the user names: (its arguments for PATH, the working folder's
#: key in ``inputs`` or None, what a complete output looks like).
COMMANDS: dict[str, tuple[Callable[[dict[str, Path], str], list[object]], str | None, Callable[[bytes], bool]]] = {
    "report --html": (lambda i, p: ["report", i["run"], "--html", p, "-q"], None, _is_html),
    "report --json -o": (lambda i, p: ["report", i["run"], "--json", "-o", p, "-q"], None, _is_json),
    "trace --html": (lambda i, p: ["trace", i["run"], "--html", p, "-q"], None, _is_html),
    "trace -o": (lambda i, p: ["trace", i["run"], "-o", p, "-q"], None, _is_story),
    "compare --html": (lambda i, p: ["compare", i["run"], i["run"], "--html", p, "-q"], None, _is_html),
    "export --perfetto": (lambda i, p: ["export", i["run"], "--perfetto", p, "-q"], None, _is_json),
    "view --html": (lambda i, p: ["view", i["saved"], "--html", p, "-q"], None, _is_html),
    "run -o": (lambda i, p: ["run", "-o", p, "work.py"], "project", _is_json),
    "run --html": (lambda i, p: ["run", "--html", p, "work.py"], "project", _is_html),
}


def start(name: str, inputs: dict[str, Path], path: Path | str, **popen: object) -> subprocess.Popen[bytes]:
    args, cwd, _ = COMMANDS[name]
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return cli(*args(inputs, str(path)), cwd=inputs[cwd] if cwd else None, **popen)


def leftovers(folder: Path, *keep: str) -> list[str]:
    """What a write left beside the output: a temporary file that was never renamed, say."""
    return sorted(name for name in os.listdir(folder) if name not in keep)


def read_fifo_while(process: subprocess.Popen[bytes], fifo: Path) -> bytes:
    """Everything written into ``fifo`` while ``process`` runs, read as it comes. The reader is
    open before the process starts writing, without blocking: a command that never opens the
    FIFO (one that renamed a file over it) ends with nothing read, not with a hung test."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got = bytearray()
    try:
        while True:
            ended = process.poll() is not None
            try:
                chunk: bytes | None = os.read(fd, 1 << 16)
            except BlockingIOError:  # a writer is there, with nothing yet
                chunk = None
            if chunk:
                got += chunk
            elif chunk == b"" and ended:  # no writer, and the process that would write has ended
                return bytes(got)
            else:
                threading.Event().wait(0.01)
    finally:
        os.close(fd)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_fifo_is_written_into_and_stays_a_fifo(name, inputs, tmp_path):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    process = start(name, inputs, fifo)
    got = read_fifo_while(process, fifo)
    status, _, err = finished(process)
    assert status == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    assert COMMANDS[name][2](got), got[:200]
    assert leftovers(tmp_path, "out") == []


def test_a_fifo_write_waits_for_its_reader(inputs, tmp_path):
    """The command opens the FIFO and waits there until a reader comes (here after it started)."""
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    process = start("report --html", inputs, fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    reader.join(timeout=120)
    assert not reader.is_alive(), "nothing ever opened the FIFO for writing"
    status, _, err = finished(process)
    assert status == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _is_html(got[0])


def _null_device(folder: Path) -> tuple[Path, os.stat_result]:
    if os.geteuid() != 0:
        pytest.skip("making a character device (mknod) needs root")
    node = folder / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError as error:  # a container without CAP_MKNOD
        pytest.skip(f"mknod of a character device is refused here: {error}")
    return node, os.lstat(node)


def _same_device(node: Path, before: os.stat_result) -> None:
    after = os.lstat(node)
    assert stat.S_ISCHR(after.st_mode), f"{node} is no longer a character device"
    assert (after.st_rdev, after.st_ino) == (before.st_rdev, before.st_ino)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_character_device_is_written_into_never_replaced(name, inputs, tmp_path):
    node, before = _null_device(tmp_path)
    status, out, err = finished(start(name, inputs, node))
    assert status == 0, err
    _same_device(node, before)
    assert leftovers(tmp_path, "null") == []


@pytest.mark.parametrize("name", COMMANDS)
def test_a_link_to_a_device_is_followed_as_dev_stdout_is(name, inputs, tmp_path):
    node, before = _null_device(tmp_path)
    link = tmp_path / "stdout"
    link.symlink_to(node)
    status, _, err = finished(start(name, inputs, link))
    assert status == 0, err
    assert link.is_symlink() and os.readlink(link) == str(node)
    _same_device(node, before)
    assert leftovers(tmp_path, "null", "stdout") == []


@pytest.mark.parametrize("name", ["report --html", "trace -o", "export --perfetto", "view --html"])
def test_proc_self_fd_1_is_the_commands_own_stdout(name, inputs, tmp_path):
    """``/proc/self/fd/1`` (what ``/dev/stdout`` names), stdout a pipe: the output comes down it."""
    status, out, err = finished(start(name, inputs, "/proc/self/fd/1"))
    assert status == 0, err
    output = out.encode()
    assert output.endswith(b"/proc/self/fd/1\n")  # the path, printed after the output
    assert COMMANDS[name][2](output[: -len(b"/proc/self/fd/1\n")])


def test_stdout_appended_to_a_file_gets_the_output_after_what_it_holds(inputs, tmp_path):
    """``--html /dev/stdout >> log``: the page goes where stdout writes (appended to the log),
    never replaces the log with a new file."""
    log = tmp_path / "log"
    log.write_bytes(b"earlier\n")
    before = os.stat(log)
    with open(log, "ab") as stdout:
        status, _, err = finished(start("report --html", inputs, "/proc/self/fd/1", stdout=stdout))
    assert status == 0, err
    assert os.path.samestat(before, os.stat(log))
    data = log.read_bytes()
    assert data.startswith(b"earlier\n") and data.endswith(b"\n/proc/self/fd/1\n")
    assert _is_html(data[len(b"earlier\n") : -len(b"/proc/self/fd/1\n")])


def test_a_listening_socket_is_sent_the_output(inputs, tmp_path):
    path = tmp_path / "sock"
    got = bytearray()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        server.settimeout(120)

        def serve() -> None:
            connection, _ = server.accept()
            with connection:
                while chunk := connection.recv(1 << 16):
                    got.extend(chunk)

        reader = threading.Thread(target=serve, daemon=True)
        reader.start()
        status, _, err = finished(start("report --html", inputs, path))
        reader.join(timeout=120)
    assert status == 0, err
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert _is_html(bytes(got))


@pytest.mark.parametrize("name", ["report --html", "trace -o", "export --perfetto", "view --html", "run -o"])
def test_a_regular_file_is_still_replaced_whole(name, inputs, tmp_path):
    """A new file renamed over the old one: a reader holding the old one (here a hard link)
    keeps it whole, and the name holds the new output."""
    target = tmp_path / "out"
    target.write_bytes(b"old")
    os.link(target, tmp_path / "held")
    status, _, err = finished(start(name, inputs, target))
    assert status == 0, err
    assert (tmp_path / "held").read_bytes() == b"old"
    assert os.stat(target).st_ino != os.stat(tmp_path / "held").st_ino
    assert COMMANDS[name][2](target.read_bytes())
    assert leftovers(tmp_path, "out", "held") == []


def test_a_link_to_a_regular_file_is_kept_and_the_file_replaced(inputs, tmp_path):
    real = tmp_path / "real.html"
    real.write_bytes(b"old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    status, _, err = finished(start("report --html", inputs, link))
    assert status == 0, err
    assert link.is_symlink() and _is_html(real.read_bytes())


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "run -o"])  # run -o DIR: one file per process
def test_a_directory_is_one_line_and_status_2(name, inputs, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    status, _, err = finished(start(name, inputs, folder))
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "directory" in err
    assert folder.is_dir() and os.listdir(folder) == []


@pytest.mark.parametrize("name", COMMANDS)
def test_a_missing_folder_is_one_line_and_status_2(name, inputs, tmp_path):
    target = tmp_path / "no such folder" / "out"
    status, _, err = finished(start(name, inputs, target))
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not target.parent.exists()



def test_attach_takes_a_fifo_or_a_device_as_its_output(tmp_path):
    """``attach -o`` checks its path before attaching (a typo must not lose the window): a FIFO
    or a device is a file to write into, not "not a file". (Attaching itself needs Python
    3.14's sys.remote_exec; the write is :func:`write_output`, which the commands above hold.)"""
    from lineprofiler.lines.attach import AttachError, AttachOptions, _output_target

    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    assert _output_target(AttachOptions(pid=1, output=str(fifo))) == (fifo, False)
    with pytest.raises(AttachError, match="does not exist"):
        _output_target(AttachOptions(pid=1, output=str(tmp_path / "missing" / "out")))


def _api_writers(inputs: dict[str, Path]) -> dict[str, Callable[[Path], object]]:
    from lineprofiler.accounting import write_report, write_trace
    from lineprofiler.lines.saved import SavedProfile

    saved = SavedProfile.load(inputs["saved"])
    return {
        "write_report": lambda p: write_report(inputs["run"], p, format="html"),
        "write_trace": lambda p: write_trace(inputs["run"], p),
        "SavedProfile.to_html": lambda p: saved.to_html(p),
    }


@pytest.mark.parametrize("name", ["write_report", "write_trace", "SavedProfile.to_html"])
def test_the_python_api_writes_into_a_device_too(name, inputs, tmp_path):
    node, before = _null_device(tmp_path)
    _api_writers(inputs)[name](node)
    _same_device(node, before)
    assert leftovers(tmp_path, "null") == []


def test_line_profiler_dump_writes_into_a_fifo(tmp_path):
    from lineprofiler import LineProfiler

    profiler = LineProfiler(project_folder=Path(__file__).parent)
    with profiler:
        sum(i for i in range(100))
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    profiler.dump(fifo)
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _is_json(got[0])
