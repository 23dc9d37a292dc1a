"""``lineprofiler attach PID``: the line profiler, for a window, in a Python process already running.

Through ``sys.remote_exec`` (PEP 768, CPython 3.14+), which this command and its target must both
have, in the same major.minor version. The command checks what it can from ``/proc`` first (the
process exists, is Python, of which version, with remote debugging allowed), writes a request and
a bootstrap script into a fresh attach folder, and asks the target to run the script. The target
runs it at its main thread's next check between bytecodes: a main thread blocked in C (a
``time.sleep``, a lock, a read) runs it only when that call returns, so the command waits
``--start-timeout`` seconds and then cancels the request, which the target then ignores whenever
it gets to it; a target that ran it but is still importing lineprofiler (slow where other threads
keep the GIL busy) is told the same, and turns nothing on when the import ends. Either way the
command says it did not start within the timeout, never that a process that lives has ended.
Once started (:mod:`lineprofiler.lines._attach_agent`), the window closes itself after
``--duration`` seconds and the target writes its line-stats file into the attach folder; the
command copies it to ``-o`` and prints the tables, as ``lineprofiler view`` would.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._terminal import printable
from ..errors import InputError
from ..runfiles import linesfile
from ..runfiles.output import is_stream, write_output
from ._attach_agent import (
    CANCELLED_NAME,
    CLAIMED_NAME,
    REQUEST_NAME,
    REQUEST_TAKEN,
    RESULT_NAME,
    SCRIPT_NAME,
    STATUS_NAME,
    THREAD_NAME,
    write_json,
)

__all__ = ["AttachError", "AttachOptions", "attach", "target_python"]

#: Where the file goes without ``-o`` (relative to the working directory), as for children=True.
DEFAULT_OUTPUT_DIR = os.path.join("profile", "lines")
#: The oldest Python ``sys.remote_exec`` exists in.
REMOTE_EXEC_SINCE = (3, 14)
#: How long after the window's end the command waits for the target's file.
SAVE_GRACE_S = 30.0
#: How long a fork waits for the thread that starts the window (see _bootstrap): a bound, for a
#: fork made while the program holds an import lock that thread needs.
_FORK_WAITS_FOR_START_S = 5.0
#: How long the command waits for the started status once the target claimed the request.
CLAIMED_GRACE_S = 30.0
_POLL_S = 0.02
# A window short enough, or a target ending soon enough, may be saved before the command looks.
_STARTED_OR_AFTER = ("started", "failed", "saved")
_VERSION = re.compile(r"python(\d+)\.(\d+)")


class AttachError(InputError):
    """Why the command cannot attach, or heard nothing back: one line, exit status 2."""


@dataclass(frozen=True)
class AttachOptions:
    pid: int
    duration: float = 5.0
    output: str | None = None
    project_folder: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    start_timeout: float = 10.0
    top: int = 20
    functions: int | None = 10
    min_us: float = 0.0
    sort: str = "time"


@dataclass(frozen=True)
class _Target:
    pid: int
    name: str
    uid: int
    gid: int
    #: (major, minor) when /proc tells it; None when the process may be Python of an unknown version.
    python: tuple[int, int] | None

    @property
    def who(self) -> str:
        return f"pid {self.pid} ({self.name})"


def _read_proc(pid: int, name: str) -> bytes:
    with open(f"/proc/{pid}/{name}", "rb") as stream:
        return stream.read()


def _inspect(pid: int) -> _Target:
    """What /proc says of ``pid``; AttachError when it is not running, not Python or not ours."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise AttachError(f"no process with pid {pid} is running") from None
    except PermissionError:
        pass  # running, but another user's: said below with what /proc lets us see
    try:
        name = _read_proc(pid, "comm").decode("utf-8", "replace").strip() or "?"
        info = os.stat(f"/proc/{pid}")
    except FileNotFoundError:
        raise AttachError(f"no process with pid {pid} is running") from None
    except OSError as error:
        raise AttachError(f"cannot read /proc/{pid}: {error.strerror or error}") from None
    if pid == os.getpid():
        raise AttachError(f"pid {pid} is this lineprofiler itself: give the pid of the program to profile")
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        maps = _read_proc(pid, "maps").decode("utf-8", "replace")
    except PermissionError:
        raise AttachError(
            f"pid {pid} ({name}) belongs to uid {info.st_uid}, and this user may not inspect it: "
            "run lineprofiler attach as that user, or as root"
        ) from None
    except OSError as error:
        if not os.path.exists(f"/proc/{pid}"):
            raise AttachError(f"no process with pid {pid} is running") from None
        raise AttachError(f"cannot read /proc/{pid}: {error.strerror or error}") from None
    python = target_python(exe, maps)
    looks_python = python is not None or "python" in os.path.basename(exe).lower() or "libpython" in maps
    if not looks_python:
        raise AttachError(
            f"pid {pid} ({name}) is not a Python process: neither its executable "
            f"({exe}) nor a library it loaded is Python"
        )
    return _Target(pid, name, info.st_uid, info.st_gid, python)


def target_python(exe: str, maps: str) -> tuple[int, int] | None:
    """The (major, minor) of the Python a process runs, from its executable's name
    (``python3.14``) or the libpython / standard library it mapped; None when neither says."""
    found = _VERSION.search(os.path.basename(exe).lower())
    if found is None:
        found = re.search(r"libpython(\d+)\.(\d+)", maps) or re.search(r"/python(\d+)\.(\d+)/", maps)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _check_versions(target: _Target) -> Any:
    """``sys.remote_exec``, when this Python has it and it can reach the target's."""
    mine = sys.version_info[:2]
    theirs = target.python
    if theirs is not None and theirs < REMOTE_EXEC_SINCE:
        raise AttachError(
            f"{target.who} runs Python {_dotted(theirs)}: attaching needs Python 3.14 or newer in the "
            "target (sys.remote_exec, PEP 768); start the program with lineprofiler run instead"
        )
    remote_exec = getattr(sys, "remote_exec", None)
    wanted = f"python{_dotted(theirs)}" if theirs is not None else "python3.14"
    if remote_exec is None:
        raise AttachError(
            f"this lineprofiler runs on Python {_dotted(mine)}, which has no sys.remote_exec: run it with the "
            f"target's Python ({wanted} -m lineprofiler attach {target.pid})"
        )
    if theirs is not None and theirs != mine:
        raise AttachError(
            f"{target.who} runs Python {_dotted(theirs)} and this lineprofiler Python {_dotted(mine)}: "
            f"sys.remote_exec needs the same version on both sides ({wanted} -m lineprofiler attach {target.pid})"
        )
    return remote_exec


def _interpreter_options(argv: list[bytes]) -> tuple[list[bytes], bool]:
    """The ``-X`` options of a Python command line, and whether it ignores PYTHON* variables
    (``-E``, ``-I``); what follows the script, ``-c`` or ``-m`` is the program's, not Python's."""
    x_options: list[bytes] = []
    ignores_env = False
    i = 1
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith(b"-") or arg in (b"-", b"--") or arg.startswith(b"--"):
            break
        letters = arg[1:]
        for j, letter in enumerate(letters):
            if letter in b"XW":
                value = letters[j + 1 :] or (argv[i + 1] if i + 1 < len(argv) else b"")
                if not letters[j + 1 :]:
                    i += 1
                if letter == ord("X"):
                    x_options.append(value)
                break
            if letter in b"cm":
                return x_options, ignores_env
            if letter in b"EI":
                ignores_env = True
        i += 1
    return x_options, ignores_env


def _remote_debug_refused(target: _Target) -> str | None:
    """Why the target refuses remote debugging, when its command line or environment says so
    (where remote_exec itself would succeed and the target never run the script)."""
    fix = "start it without that to attach"
    try:
        environ = _read_proc(target.pid, "environ").split(b"\0")
        argv = _read_proc(target.pid, "cmdline").split(b"\0")
    except OSError:
        return None  # remote_exec will say
    x_options, ignores_env = _interpreter_options(argv)
    if b"disable_remote_debug" in x_options:
        return f"{target.who} turned remote debugging off (-X disable_remote_debug): {fix}"
    if not ignores_env and any(
        entry.startswith(b"PYTHON_DISABLE_REMOTE_DEBUG=") and entry != b"PYTHON_DISABLE_REMOTE_DEBUG="
        for entry in environ
    ):
        return f"{target.who} turned remote debugging off (PYTHON_DISABLE_REMOTE_DEBUG is set): {fix}"
    return None


def _ptrace_hint() -> str:
    try:
        scope = Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        return "run as the target's user or as root"
    if scope == "0":
        return "run as the target's user or as root"
    if scope == "1":
        return "kernel.yama.ptrace_scope is 1: run as root (or with CAP_SYS_PTRACE), or set it to 0"
    return f"kernel.yama.ptrace_scope is {scope}: run as root with CAP_SYS_PTRACE"


def _remote_exec_failed(target: _Target, error: BaseException) -> AttachError:
    text = str(error)
    lowered = text.lower()
    if isinstance(error, ProcessLookupError) or "no such process" in lowered:
        return AttachError(f"pid {target.pid} ended before lineprofiler could attach")
    if isinstance(error, PermissionError) or "permission" in lowered or "not permitted" in lowered:
        return AttachError(f"not allowed to attach to {target.who} ({text}): {_ptrace_hint()}")
    if "not enabled" in lowered or "disable" in lowered:
        return AttachError(f"{target.who} does not allow remote debugging ({text})")
    if "pyruntime" in lowered or "python" in lowered and "find" in lowered:
        return AttachError(f"{target.who} does not look like a Python process ({text})")
    return AttachError(f"could not attach to {target.who}: {text}")


def _output_target(opts: AttachOptions) -> tuple[Path, bool]:
    """(path, is a directory): checked before attaching, so that a typo does not lose the window;
    a directory to make is made only when there is a file to put in it."""
    raw = opts.output if opts.output is not None else DEFAULT_OUTPUT_DIR + os.sep
    path = Path(os.path.abspath(raw))
    is_dir = opts.output is None or path.is_dir() or raw.endswith(("/", os.sep))
    if not is_dir and is_stream(path):  # a FIFO or a device: written into, nothing made beside it
        return path, False
    if path.exists() and not is_dir and not path.is_file():
        raise AttachError(f"cannot write {raw}: it is not a file")
    existing = path if is_dir else path.parent
    while not existing.exists():
        if not is_dir and existing == path.parent:
            raise AttachError(f"cannot write {raw}: its folder {path.parent} does not exist")
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise AttachError(f"cannot write {raw}: {existing} is not a writable folder")
    return path, is_dir


def _bootstrap(folder: str) -> str:
    """The script the target runs in its main thread: takes the request (unless it was
    cancelled) and starts the thread that does the rest, importing lineprofiler there (says why
    when it cannot); a fork while that thread starts waits for it (see
    :mod:`lineprofiler.lines._attach_agent`). It defines no name that outlives it, but for that
    fork hook, and lets no exception out (the target would print it)."""
    return f"""\
# lineprofiler attach: run by sys.remote_exec in this process's main thread.
def _lineprofiler_attach(folder):
    import os
    import sys
    import threading

    def leave_nothing():  # cancelled by the command, which has gone
        for name in ({CANCELLED_NAME!r}, {SCRIPT_NAME!r}):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass
        try:
            os.rmdir(folder)
        except OSError:
            pass

    try:
        os.rename(os.path.join(folder, {REQUEST_NAME!r}), os.path.join(folder, {REQUEST_TAKEN!r}))
    except OSError:
        leave_nothing()
        return

    def start():
        try:
            from lineprofiler.lines._attach_agent import run
        except BaseException as error:
            import json

            try:  # said only while the command waits, as a start is
                os.rename(os.path.join(folder, {REQUEST_TAKEN!r}), os.path.join(folder, {CLAIMED_NAME!r}))
            except OSError:
                leave_nothing()
                return
            said = {{
                "state": "failed", "reason": "import", "error": type(error).__name__ + ": " + str(error),
                "executable": sys.executable, "pid": os.getpid(),
            }}
            try:
                partial = os.path.join(folder, {STATUS_NAME!r} + ".part")
                with open(partial, "w") as stream:
                    json.dump(said, stream)
                os.replace(partial, os.path.join(folder, {STATUS_NAME!r}))
            except BaseException:
                pass
            return
        run(folder)

    starting = threading.Thread(target=start, name={THREAD_NAME!r}, daemon=True)

    def before_fork():
        # os.fork() warns when the process has other threads than the one forking. Where ours
        # would be the only other, the fork waits for it to start the window and end (the
        # window's own timer steps aside then); where the program has others, it need not.
        if not starting.is_alive() or starting is threading.current_thread():
            return
        ours = sum(1 for thread in threading.enumerate() if thread.name.startswith({THREAD_NAME!r}))
        try:
            threads = len(os.listdir("/proc/self/task"))
        except OSError:
            threads = threading.active_count()
        if threads - ours > 1:
            return
        starting.join({_FORK_WAITS_FOR_START_S!r})
        task = "/proc/self/task/" + str(starting.native_id)
        for _ in range(1000):  # joined: gone a moment later from the threads the kernel counts
            if not os.path.exists(task):
                break
            os.sched_yield()
        agent = sys.modules.get("lineprofiler.lines._attach_agent")
        if agent is not None:
            agent.before_fork()

    os.register_at_fork(before=before_fork)
    starting.start()


try:
    _lineprofiler_attach({folder!r})
except Exception:
    pass
finally:
    del _lineprofiler_attach
"""


def _make_folder(target: _Target) -> str:
    folder = tempfile.mkdtemp(prefix=f"lineprofiler-attach-{target.pid}-")
    if os.geteuid() == 0 and target.uid != 0:
        os.chown(folder, target.uid, target.gid)  # root attaching to a user's process: theirs to write
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child not waited for yet) has ended too
        return _read_proc(pid, "stat").split(b") ")[-1][:1] != b"Z"
    except OSError:
        return False


def _read_status(folder: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(folder, STATUS_NAME), encoding="utf-8") as stream:
            found = json.load(stream)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _wait_for(folder: str, pid: int, states: tuple[str, ...], timeout_s: float) -> dict[str, Any] | None:
    """The status once it is one of ``states``; None at the timeout or when the process ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = _read_status(folder)
        if status is not None and status.get("state") in states:
            return status
        if not _alive(pid):
            status = _read_status(folder)  # written just before it ended
            return status if status is not None and status.get("state") in states else None
        if time.monotonic() >= deadline:
            return None
        time.sleep(_POLL_S)


def _hand_over(remote_exec: Any, target: _Target, opts: AttachOptions, folder: str) -> None:
    """The request and the bootstrap into ``folder``, and the bootstrap to the target."""
    request = {
        "duration_s": opts.duration,
        "project_folder": os.path.abspath(opts.project_folder) if opts.project_folder is not None else None,
        "include": list(opts.include),
        "exclude": list(opts.exclude),
    }
    write_json(os.path.join(folder, REQUEST_NAME), request)
    script = os.path.join(folder, SCRIPT_NAME)
    Path(script).write_text(_bootstrap(folder), encoding="utf-8")
    for path in (folder, script, os.path.join(folder, REQUEST_NAME)):
        os.chmod(path, os.stat(path).st_mode | 0o044 | (0o011 if os.path.isdir(path) else 0))
    try:
        remote_exec(target.pid, script)
    except Exception as error:
        raise _remote_exec_failed(target, error) from None


def _wait_started(target: _Target, opts: AttachOptions, folder: str) -> dict[str, Any]:
    """The target's ``started`` status; AttachError when it failed, ended or did not start within
    the timeout (the request is cancelled then, and the target, which lives on, turns nothing on)."""
    status = _wait_for(folder, target.pid, _STARTED_OR_AFTER, opts.start_timeout)
    if status is None and _alive(target.pid):
        cancelled = _cancel(folder)
        if cancelled == REQUEST_NAME:
            raise AttachError(
                f"{target.who} did not start the line profiler within {opts.start_timeout:g} s: sys.remote_exec "
                "runs only when its main thread executes Python code, and it is blocked in a call into C "
                "(time.sleep, a lock, a read) or busy in one (or remote debugging is off in it); the request is "
                "cancelled (the process ignores it when it gets to it): try again when it runs Python code, or with "
                "a longer --start-timeout"
            )
        if cancelled == REQUEST_TAKEN:
            raise AttachError(
                f"{target.who} did not start the line profiler within {opts.start_timeout:g} s: it took the request "
                "but was still importing lineprofiler, slowly where its other threads keep the GIL busy; the request "
                "is cancelled (the process turns nothing on and goes on): try again with a longer --start-timeout"
            )
        # It claimed the request first: turning the profiler on now.
        status = _wait_for(folder, target.pid, _STARTED_OR_AFTER, CLAIMED_GRACE_S)
        if status is None and _alive(target.pid):
            raise AttachError(
                f"{target.who} took the request but did not say within {opts.start_timeout + CLAIMED_GRACE_S:g} s "
                "that the line profiler started; if it did, it turns it off at the window's end"
            )
    if status is None:
        raise AttachError(f"pid {target.pid} ended before it started the line profiler")
    if status.get("state") == "failed":
        why = str(status.get("error"))
        if status.get("reason") == "import":
            raise AttachError(
                f"{target.who} cannot import lineprofiler ({why}): install with-line-profiler into the "
                f"environment of its Python ({status.get('executable')}) and start the program again"
            )
        if status.get("reason") == "save":
            raise AttachError(f"{target.who} could not save its line stats: {why}")
        raise AttachError(f"could not start the line profiler in {target.who}: {why}")
    return status


def _cancel(folder: str) -> str | None:
    """Take the request back before the target claims it: the name it had (``request.json``, not
    run yet; ``request.taken``, run, lineprofiler still importing); None when it was claimed."""
    for name in (REQUEST_NAME, REQUEST_TAKEN):
        try:
            os.rename(os.path.join(folder, name), os.path.join(folder, CANCELLED_NAME))
        except FileNotFoundError:
            continue
        return name
    return None


def _say(message: str) -> None:
    print(printable(message), file=sys.stderr, flush=True)


def attach(opts: AttachOptions) -> int:
    """Attach, record for the window, save and print; returns the exit status (0). AttachError
    (exit status 2) for anything that keeps it from attaching or from getting the file back."""
    from .saved import SavedProfile
    from .view import ViewOptions, render_view

    if opts.project_folder is not None and not os.path.isdir(opts.project_folder):
        raise AttachError(f"--project-folder {opts.project_folder}: no such folder")
    target = _inspect(opts.pid)
    remote_exec = _check_versions(target)
    refused = _remote_debug_refused(target)
    if refused is not None:
        raise AttachError(refused)
    out_path, out_is_dir = _output_target(opts)
    folder = _make_folder(target)
    handed = False
    try:
        _hand_over(remote_exec, target, opts, folder)
        handed = True
        started = _wait_started(target, opts, folder)
        _say(
            f"lineprofiler: recording {target.who} for {opts.duration:g} s "
            f"(Python {started.get('python')}, {started.get('threads')} thread(s), "
            f"project folder {started.get('project_folder')})"
        )
        done = _wait_for(folder, target.pid, ("saved", "failed"), opts.duration + SAVE_GRACE_S)
        if done is None:
            if _alive(target.pid):
                raise AttachError(
                    f"{target.who} did not save its line stats within {SAVE_GRACE_S:g} s of the window's end"
                )
            raise AttachError(
                f"pid {target.pid} ended during the window without saving (killed?): nothing was recorded"
            )
        if done.get("state") == "failed":
            raise AttachError(f"{target.who} could not save its line stats: {done.get('error')}")
        result = os.path.join(folder, RESULT_NAME)
        saved = SavedProfile.load(result)
        destination = out_path
        try:
            if out_is_dir:
                out_path.mkdir(parents=True, exist_ok=True)
                host = str(started.get("host") or "localhost")
                destination = out_path / linesfile.lines_file_name(host, target.pid, secrets.token_hex(4))
            write_output(destination, Path(result).read_bytes())
        except OSError as error:
            raise AttachError(f"cannot write {destination}: {error.strerror or error}") from None
        if done.get("status") == "exited":
            _say(f"lineprofiler: {target.who} exited during the window: what ran until then is saved")
        options = ViewOptions(top=opts.top, functions=opts.functions, min_us=opts.min_us, sort=opts.sort)
        text = render_view(saved, options)
        print("\n".join(printable(line) for line in text.split("\n")), end="")
        sys.stdout.flush()
        _say(f"lineprofiler: line stats saved to {destination} (lineprofiler view {destination})")
        return 0
    finally:
        if handed:
            _cancel(folder)  # interrupted before the target claimed the request
        if not (handed and os.path.exists(os.path.join(folder, CANCELLED_NAME)) and _alive(target.pid)):
            shutil.rmtree(folder, ignore_errors=True)
        # else the bootstrap, which the target still runs some day, removes the folder then
