"""``lineprofiler run``: run a script or module as ``python`` would, line-profiled, then print.

The target runs in this process exactly as ``python script.py args`` / ``python -m mod args``
runs it: a fresh ``__main__`` module, ``sys.argv`` as Python sets it, ``sys.path[0]`` the
script's folder (the working directory for ``-m``), ``if __name__ == "__main__":`` true, and the
exit status Python would give (``sys.exit(n)``, 1 for an uncaught exception, 130 for Ctrl-C).
Non-daemon threads are waited for, as at interpreter exit, before the tables are printed;
``atexit`` handlers run after them, unprofiled.

While it runs, ``profile`` is a builtin (kernprof's ``@profile``, see
:class:`~.decorate.ProfileBuiltin`), in the children that ``--children`` follows too.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import io
import os
import runpy
import shutil
import signal
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _lifecycle, _signals
from .._terminal import printable
from ..errors import InputError
from ..runfiles import linesfile
from ..runfiles.output import is_stream
from .decorate import ENV_PROFILE_BUILTIN, ProfileBuiltin
from .endings import ENDINGS, Ending
from .project import find_project_root
from .render import HINT_CLI, render_report

if TYPE_CHECKING:
    from .children import Session
    from .profiler import LineProfiler

__all__ = ["RunError", "RunOptions", "run"]

_OWN_PACKAGE = str(Path(__file__).resolve().parent.parent)


class RunError(InputError):
    """Bad input to ``run``: one line for stderr, exit status 2."""


@dataclass
class RunOptions:
    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)
    project: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    top: int = 20
    functions: int | None = 10
    min_us: float = 0.0
    sort: str = "time"
    output: str | None = None
    children: bool = False
    #: ``--html PATH``: the annotated source page, written after the tables.
    html: str | None = None


@dataclass
class _Target:
    run: Callable[[], Any]
    argv0: str
    path0: str
    default_project: Path


def _script_target(script: str) -> _Target:
    path = Path(script)
    if not path.exists():
        raise RunError(f"can't open file {os.path.abspath(script)!r}: no such file or directory")
    real = Path(os.path.realpath(script))
    if real.is_dir() or (real.suffix != ".py" and _is_zip(real)):
        # A folder or zip with __main__.py, as `python folder/` runs it.
        if real.is_dir() and not (real / "__main__.py").exists():
            raise RunError(f"can't find '__main__' module in {os.path.abspath(script)!r}")
        folder = real if real.is_dir() else real.parent
        return _Target(
            run=lambda: runpy.run_path(str(path), run_name="__main__"),
            argv0=script,
            path0=str(path),
            default_project=find_project_root(folder),
        )
    try:
        source = real.read_bytes()
    except OSError as error:
        raise RunError(f"can't open file {os.path.abspath(script)!r}: {error.strerror or error}") from None
    filename = os.path.abspath(script)

    def execute() -> None:
        code = compile(source, filename, "exec", dont_inherit=True)
        main = types.ModuleType("__main__")
        main.__dict__.update(
            __file__=filename,
            __builtins__=builtins,
            __loader__=importlib.machinery.SourceFileLoader("__main__", filename),
            __spec__=None,
            __package__=None,
            __cached__=None,
        )
        sys.modules["__main__"] = main
        exec(code, main.__dict__)

    return _Target(run=execute, argv0=script, path0=str(real.parent), default_project=find_project_root(real.parent))


def _is_zip(path: Path) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _module_target(module: str) -> _Target:
    if not module or module.startswith(".") or not all(part.isidentifier() for part in module.split(".")):
        raise RunError(f"no module named {module!r}")
    cwd = os.getcwd()
    top = module.split(".")[0]
    # Where the top package lies, found without importing anything: the default project.
    spec = importlib.machinery.PathFinder.find_spec(top, [cwd, *sys.path[1:]])
    default = find_project_root(cwd)
    if spec is not None:
        if spec.submodule_search_locations:
            where = Path(list(spec.submodule_search_locations)[0])
            root = find_project_root(where)
            default = root if (root / ".git").exists() else where
        elif spec.origin:
            where = Path(spec.origin).parent
            root = find_project_root(where)
            default = root if (root / ".git").exists() else where

    def execute() -> None:
        runpy.run_module(module, run_name="__main__", alter_sys=True)

    return _Target(run=execute, argv0=module, path0=cwd, default_project=default)


def _check_module(module: str) -> None:
    """RunError when ``python -m module`` would not find it (parents are imported, as there)."""
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(module + ".__main__")
            if spec is None:
                raise RunError(f"no module named {module}.__main__; {module!r} is a package and cannot be run")
    except (ImportError, ValueError) as error:
        raise RunError(f"no module named {module!r} ({error})") from None
    if spec is None:
        raise RunError(f"no module named {module!r}")


def _check_output(opts: RunOptions) -> tuple[Path | None, bool]:
    """(path, is_directory) for -o, after checking it can be written; RunError if not."""
    if opts.output is None:
        return None, False
    path = Path(os.path.abspath(opts.output))
    as_dir = opts.children or path.is_dir() or opts.output.endswith(("/", os.sep))
    if as_dir:
        if path.exists() and not path.is_dir():
            raise RunError(f"-o {opts.output}: --children writes one file per process, so -o must be a directory")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunError(f"-o {opts.output}: cannot create the directory: {error.strerror or error}") from None
        probe_dir = path
    else:
        probe_dir = path.parent
        if not probe_dir.is_dir():
            raise RunError(f"-o {opts.output}: the folder {str(probe_dir)!r} does not exist")
        if path.is_dir():
            raise RunError(f"-o {opts.output}: is a directory")
        if is_stream(path):  # a FIFO or a device: written into at the end, nothing made beside it
            return path, False
    try:
        fd, probe = tempfile.mkstemp(prefix=".tmp_probe_", dir=probe_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise RunError(f"-o {opts.output}: cannot write there: {error.strerror or error}") from None
    return path, as_dir


def _trim(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without the runner's own frames at its start."""
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename).startswith(_OWN_PACKAGE + os.sep):
        tb = tb.tb_next
    return tb


def _print_exception(error: BaseException) -> None:
    """As Python prints an uncaught exception (through sys.excepthook), without our frames;
    nothing when the program closed or dropped its stderr, as there."""
    tb = _trim(error.__traceback__)
    error.__traceback__ = tb  # the default hook prints the exception's own traceback
    try:
        sys.excepthook(type(error), error, tb)
    except Exception:
        try:
            import traceback

            if sys.stderr is not None:
                traceback.print_exception(type(error), error, tb)
        except Exception:
            pass


def _exit_status(error: SystemExit, output: _Output) -> int:
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        text = str(code)
    except Exception:
        text = ""
    output.write(text + "\n", stderr=True)  # where Python prints it: sys.stderr, else the one it started with
    return 1


def _exit_code_seen(code: int) -> int:
    """The exit status a parent sees after ``sys.exit(code)``: Python exits with ``code`` as a
    C long (-1 when it does not fit), and a POSIX parent sees its low 8 bits."""
    if not -(2**63) <= code < 2**63:
        code = -1
    return code & 0xFF if os.name == "posix" else code


def _wait_for_threads() -> None:
    """As the interpreter does at exit: wait for the non-daemon threads the program started."""
    me = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not me and not thread.daemon and thread.is_alive():
            thread.join()


def _stream_fd(stream: Any) -> int | None:
    """The file descriptor behind one of Python's own text streams; None for anything else
    (a StringIO, a wrapper of the program's), which is written through its ``write``."""
    if not isinstance(stream, io.TextIOWrapper):
        return None
    try:
        return stream.fileno()
    except (OSError, ValueError):
        return None


def _fd_identity(fd: int) -> tuple[int, int] | None:
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _write_fd(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # the reader left, the disk is full: our text is lost, the program's status is not


class _Output:
    """Where the profiler's own text goes once the program has ended, whatever it did to its
    streams: the program's ``sys.stdout`` (``sys.stderr``), else the stream Python started
    with, else that stream's descriptor, else nowhere. Never raises.

    Python's own streams are written at the descriptor, after the program's buffered output
    (``flush_program``; not where the process ends without flushing, as ``os._exit``, an exec
    and a signal do), so nothing of ours is left in a buffer to fail at interpreter exit. A
    descriptor 1 or 2 is only written while it is still the file it was when the run began: a
    program that closed it may have opened one of its own files under the same number."""

    def __init__(self) -> None:
        self.identity = {1: _fd_identity(1), 2: _fd_identity(2)}

    def _same(self, fd: int) -> bool:
        known = self.identity.get(fd)
        return known is not None and _fd_identity(fd) == known

    def write(self, text: str, *, stderr: bool = False, flush_program: bool = True) -> None:
        fd = 2 if stderr else 1
        candidates = (sys.stderr, sys.__stderr__) if stderr else (sys.stdout, sys.__stdout__)
        for stream in dict.fromkeys(s for s in candidates if s is not None):
            try:
                if self._write_stream(stream, text, flush_program):
                    return
            except Exception:
                continue
        if self._same(fd):  # Python's stream is closed or dropped; its descriptor is not
            _write_fd(fd, text.encode("utf-8", "backslashreplace"))

    def _write_stream(self, stream: Any, text: str, flush_program: bool) -> bool:
        """False when ``stream`` cannot take the text (closed, its descriptor gone or reused)."""
        if getattr(stream, "closed", False):
            return False
        fd = _stream_fd(stream)
        if fd is None:
            stream.write(text)
            stream.flush()
            return True
        if fd in self.identity and not self._same(fd):
            return False
        if _fd_identity(fd) is None:
            return False
        if flush_program:
            try:
                stream.flush()
            except Exception:
                pass
        _write_fd(fd, text.encode(getattr(stream, "encoding", None) or "utf-8", "backslashreplace"))
        return True

    def say(self, message: str) -> None:
        """One line of ours on stderr (its text may come from files: escaped)."""
        self.write(printable(message) + "\n", stderr=True)


class _Run:
    """What one ``lineprofiler run`` leaves: its file (``-o``) and its tables, written once
    whichever way the program ends: returning (:meth:`save`, then :meth:`show`), or through
    an ending that skips the rest of the runner (a signal, ``os._exit``, an exec), for which
    the process endings call :meth:`on_ending` (it is their :class:`~.endings.Closer`)."""

    def __init__(
        self,
        profiler: LineProfiler,
        opts: RunOptions,
        out_path: Path | None,
        out_is_dir: bool,
        session: Session | None,
        temp_dir: Path | None,
    ) -> None:
        self.pid = os.getpid()
        self.profiler = profiler
        self.opts = opts
        self.out_path = out_path
        self.out_is_dir = out_is_dir
        self.session = session
        self.temp_dir = temp_dir
        self.output = _Output()
        #: ``profile``, kernprof's decorator, for the program.
        self.builtin = ProfileBuiltin(profiler)
        self.written: Path | None = None
        self.saved = False
        self.shown = False
        #: The process whose program ended by KeyboardInterrupt: it ends by SIGINT, as Python.
        self.interrupted_pid: int | None = None

    def start(self) -> None:
        """The start file (with ``-o``): a run killed outright leaves it, saying what it was.
        None into a FIFO or a device: what its reader gets is the one whole file at the end."""
        try:
            if self.session is not None:
                self.session.begin()
            elif self.out_path is not None and not is_stream(self.out_path):
                _write_one(self.profiler, self.out_path, "started", self.output, empty=True)
        except OSError as error:
            raise RunError(f"-o {self.opts.output}: cannot write there: {error.strerror or error}") from None
        ENDINGS.add_closer(self)

    def save(self, status: str, *, exit_code: int | None = None, signal_name: str | None = None) -> None:
        """Recording off, the file written. In a fork child the program made, only its own
        session file (with ``-o DIR``): the runner's file and tables are the parent's."""
        if self.saved:
            return
        self.profiler.stop_recording()
        if self.session is not None:
            self.session.end(status, exit_code=exit_code, signal_name=signal_name)  # once: later calls do nothing
        if os.getpid() != self.pid:
            return
        self.saved = True
        if self.session is not None:
            self.written = self.out_path if self.session.finished else None
        elif self.out_path is not None:
            self.written = _write_one(
                self.profiler, self.out_path, status, self.output, exit_code=exit_code, signal_name=signal_name
            )

    def show(self, *, flush_program: bool = True) -> None:
        """The tables on stdout, where the file went on stderr; the temporary folder removed."""
        if self.shown or os.getpid() != self.pid:
            return
        self.shown = True
        folder = self.out_path if self.out_is_dir else None
        try:
            text, messages = _render_result(self.profiler, self.opts, folder)
        except Exception as error:  # never the program's status: one line, and the file stays
            text, messages = "", [f"lineprofiler: could not print the tables: {error!r}"]
        self.output.write(text, flush_program=flush_program)
        for message in messages + _outside_notes(self.builtin, self.profiler.project_folder):
            self.output.say(message)
        if self.written is not None and self.temp_dir is None:
            where = self.out_path if self.out_is_dir else self.written
            self.output.say(f"lineprofiler: saved to {where} (lineprofiler view {where})")
        if self.opts.html is not None:
            from .annotate.run import write_run_page

            what = self.opts.script or f"-m {self.opts.module}"
            self.output.say(write_run_page(self.opts.html, self.profiler, folder if self.opts.children else None, what))
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def finish(self, status: str, *, exit_code: int | None = None, signal_name: str | None = None) -> None:
        with ENDINGS.holding_signals(), ENDINGS.quiet_sigpipe():
            self.save(status, exit_code=exit_code, signal_name=signal_name)
            self.show(flush_program=False)  # os._exit, exec and a signal drop the program's buffers

    # -- the endings that skip the runner (called by the process endings)

    def on_ending(self, ending: Ending) -> None:
        if ending.how == "signal":
            self.finish("signalled", signal_name=ending.signal_name)
        else:
            self.finish("exited", exit_code=ending.exit_code)

    def on_exec_failed(self) -> None:
        # The program goes on: the file and the tables are written again, whole, at its end.
        self.saved = self.shown = False
        self.written = None

    def end_by_sigint(self) -> None:
        """At interpreter exit, after the program's atexit handlers: end by SIGINT as Python
        does after an uncaught KeyboardInterrupt, so the parent's wait status is the same."""
        if self.interrupted_pid != os.getpid():
            return
        end_by_sigint()


def end_by_sigint() -> None:
    """End this process by SIGINT, as Python does after an uncaught KeyboardInterrupt, so its
    parent's wait status is the same; its output flushed first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    try:
        _signals.install(signal.SIGINT, _signals.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except (OSError, ValueError):
        pass  # the exit status stays 130


def run(opts: RunOptions) -> int:
    """Run the target profiled and print; returns the exit status. RunError for bad input."""
    from .profiler import LineProfiler

    target = _script_target(opts.script) if opts.script is not None else _module_target(opts.module or "")
    out_path, out_is_dir = _check_output(opts)
    if opts.html is not None:
        from .annotate.run import html_target_problem

        if problem := html_target_problem(opts.html):
            raise RunError(problem)
    project = opts.project if opts.project is not None else target.default_project
    try:
        profiler = LineProfiler(project, include=opts.include or None, exclude=opts.exclude or None)
    except (ValueError, TypeError) as error:
        raise RunError(str(error)) from None
    profiler.make_background()  # the program's own LineProfiler, if it has one, takes precedence
    temp_dir: Path | None = None
    if opts.children and out_path is None:
        temp_dir = Path(tempfile.mkdtemp(prefix="lineprofiler-run-"))
        out_path, out_is_dir = temp_dir, True
    session = None
    if out_is_dir:
        from .children import Config, Session

        assert out_path is not None
        session = Session(
            profiler,
            Config.of(profiler, out_path),
            root=True,
            label="main",
            export_env=opts.children,
            start_file=temp_dir is None,
        )
    this_run = _Run(profiler, opts, out_path, out_is_dir, session, temp_dir)
    _lifecycle.at_exit(this_run.end_by_sigint)  # before the program's: it runs after theirs
    saved_argv, saved_path0, saved_main = list(sys.argv), (sys.path[0] if sys.path else None), sys.modules["__main__"]
    sys.argv[:] = [target.argv0, *opts.args]
    if sys.path:
        sys.path[0] = target.path0
    else:
        sys.path.insert(0, target.path0)
    status = 0
    ran = False
    saved_env = os.environ.get(ENV_PROFILE_BUILTIN)
    if opts.children:
        os.environ[ENV_PROFILE_BUILTIN] = "1"  # a spawned child re-imports the decorated code
    this_run.builtin.install()
    try:
        profiler.enable()
        if opts.module is not None:
            _check_module(opts.module)  # imports its parent packages, as python -m does: profiled
        this_run.start()
        ran = True
        try:
            target.run()
        except SystemExit as error:
            status = _exit_status(error, this_run.output)
        except KeyboardInterrupt as error:
            _print_exception(error)
            status = 130
            this_run.interrupted_pid = os.getpid()
        except BaseException as error:
            _print_exception(error)
            status = 1
        try:
            _wait_for_threads()
        except KeyboardInterrupt:
            status = 130
            this_run.interrupted_pid = os.getpid()
    finally:
        profiler.stop_recording()
        try:  # written while sys.argv is still the program's: the file records it
            if ran:
                with ENDINGS.holding_signals():
                    if this_run.interrupted_pid == os.getpid():
                        this_run.save("signalled", signal_name="SIGINT")  # how the process will end
                    else:
                        this_run.save("exited", exit_code=_exit_code_seen(status))
        finally:
            this_run.builtin.uninstall()
            if opts.children:
                _restore_env(ENV_PROFILE_BUILTIN, saved_env)
            sys.argv[:] = saved_argv
            if saved_path0 is not None and sys.path:
                sys.path[0] = saved_path0
            sys.modules["__main__"] = saved_main
    if os.getpid() != this_run.pid:
        # A child the program forked (os.fork) that ran on to the end of the program: it exits
        # as Python would; the tables and the saved file are the runner's, in the parent.
        return status
    try:
        with ENDINGS.holding_signals(), ENDINGS.quiet_sigpipe():
            this_run.show()
    finally:
        ENDINGS.remove_closer(this_run)
        if this_run.interrupted_pid != os.getpid():
            _lifecycle.cancel_at_exit(this_run.end_by_sigint)
    return status


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _outside_notes(builtin: ProfileBuiltin, folder: Path) -> list[str]:
    """One line per ``@profile`` function the run could not record: its file is not the project's."""
    return [
        f"lineprofiler: @profile on {qualname} ({filename}:{lineno}) was not profiled: its file is outside "
        f"the project folder {folder} (pass --include {filename}, or --project DIR)"
        for filename, qualname, lineno in builtin.outside
    ]


def _write_one(
    profiler: LineProfiler,
    path: Path,
    status: str,
    output: _Output,
    *,
    exit_code: int | None = None,
    signal_name: str | None = None,
    empty: bool = False,
) -> Path | None:
    """The run's file at ``path`` (``-o FILE``); None, with one line on stderr, when it cannot
    be written. ``empty=True`` for the start file."""
    from .saved import process_info

    process = process_info(
        status,
        start_unix_ns=profiler.created_unix_ns,
        label="main",
        exit_code=exit_code,
        signal=signal_name,
    )
    document = profiler.lines_document(process, [], empty=empty)
    if status == "started":
        linesfile.write_lines_file(path, document, named=True)  # OSError: the caller's to report
        return path
    try:
        linesfile.write_lines_file(path, document, named=True)
        return path
    except OSError as error:
        output.say(f"lineprofiler: could not save to {path}: {error.strerror or error}")
        return None


def _render_result(profiler: LineProfiler, opts: RunOptions, folder: Path | None) -> tuple[str, list[str]]:
    """What the run prints: the tables (stdout) and lines for stderr."""
    errors: list[str] = []
    if opts.children and folder is not None:
        from .saved import SavedProfile
        from .view import ViewOptions, render_processes, render_view

        try:
            saved = SavedProfile.load(folder)
        except linesfile.LinesFileError as error:
            return "", [f"lineprofiler: {error}"]
        nothing = profiler.nothing_recorded(hint=HINT_CLI) if not saved.get_stats() else None
        if nothing is not None:
            return "\n" + render_processes(saved) + "\n" + nothing, []
        view = ViewOptions(top=opts.top, functions=opts.functions, min_us=opts.min_us, sort=opts.sort)
        return "\n" + render_view(saved, view), []
    stats = profiler.collect_stats(errors)
    messages = [f"lineprofiler: {message}" for message in errors]
    nothing = profiler.nothing_recorded(hint=HINT_CLI) if not stats else None
    if nothing is not None:
        return "\n" + nothing, messages
    text = render_report(
        stats,
        functions=opts.functions,
        top_n=opts.top,
        min_time_us=opts.min_us,
        sort_by=opts.sort,
        root=profiler.project_folder,
        total_ns=profiler.wall_time_ns,
    )
    return "\n" + text, messages
