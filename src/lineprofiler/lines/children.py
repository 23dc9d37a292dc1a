"""Line profiles of child processes: every Python process of a run writes its own file.

How a child starts profiling (``LineProfiler(children=True)`` or ``lineprofiler run
--children``):

- The profiling process exports ``LINEPROFILER_LINES`` (a JSON object: output folder, project
  folder, include and exclude globs, the root pid) and puts the folder ``lines/_boot`` first on
  ``PYTHONPATH``. That folder holds a ``sitecustomize`` module and nothing else: every Python
  interpreter started with that environment (a ``spawn`` or ``forkserver`` child of
  multiprocessing, a ``subprocess`` running Python, a grandchild) imports it at startup, and it
  starts a LineProfiler with the parent's settings for the life of the process. It then runs the
  ``sitecustomize`` it shadows, if there is one, so a site's own customisation still happens.
- ``fork`` children (``os.fork``, multiprocessing's fork context, a Pool or executor on it)
  keep the parent's enabled profiler: a fork hook zeroes what the child inherited and gives it
  an identity (pid, parent, file name) of its own.
- Each child writes ``l_<host>_<pid>_<uuid8>.json`` into the output folder: a ``"started"``
  file at once, then the data when it ends: at exit (``atexit``, multiprocessing's exit
  finalizers), in ``os._exit`` and before an ``os.exec*``, and on a signal whose default action
  ends it (see :class:`_Process`). A file still saying ``"started"`` names a process that ended
  without writing (SIGKILL, a crash, a signal at its default action that Python never saw).
- multiprocessing's own helper processes (the resource tracker, the forkserver process itself)
  are not profiled; the forkserver's children are.

Not reached: interpreters started with ``-I``, ``-E`` or ``-S`` (they ignore ``PYTHONPATH`` or
``sitecustomize``), children given an environment without these two variables (``env={...}``),
an interpreter that cannot import lineprofiler (its ``"started"`` file says so), and a
forkserver that was already running before profiling began.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import operator
import os
import re
import secrets
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import _signals
from .._terminal import printable
from ..runfiles import linesfile
from .saved import document_from_stats, host_name, process_info

if TYPE_CHECKING:
    from .profiler import LineProfiler

__all__ = ["BOOT_DIR", "ENV_CONFIG", "Config", "Session", "set_role", "start_from_env"]

ENV_CONFIG = "LINEPROFILER_LINES"
CONFIG_VERSION = 1
#: The folder put first on PYTHONPATH: it holds only ``sitecustomize.py``.
BOOT_DIR = str(Path(__file__).resolve().with_name("_boot"))
#: Signals whose default action ends the process without a word to Python. While a line-stats
#: file is open, a handler of ours stands in for the default action of each one (at the start,
#: and when the program sets one back to SIG_DFL): it saves, puts the default action back and
#: sends the signal again, so the process still ends by it. SIGINT is Python's own
#: (KeyboardInterrupt); SIGQUIT is left to end a process at once, stuck or not.
ENDING_SIGNALS = (
    "SIGTERM",
    "SIGHUP",
    "SIGUSR1",
    "SIGUSR2",
    "SIGALRM",
    "SIGPIPE",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
)
#: Handled over a handler of the program's too: a snapshot of the file, then the program's own
#: handler runs (or the signal stays ignored).
FLUSH_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGHUP")
#: multiprocessing runs exit finalizers of priority >= 0 before joining a process's own children
#: and the rest after: ours run after, when the work of the process is over.
_MP_EXIT_PRIORITY = -90
_MP_NAME_SUFFIX = re.compile(r"(-\d+)(:\d+)*$")


def set_role(role: str | None) -> None:
    """Name the role this process plays (``"actor"``): written into its line-stats file, and what
    ``lineprofiler view --by-role`` groups by. The same as setting ``LINEPROFILER_ROLE``."""
    if role is None:
        os.environ.pop("LINEPROFILER_ROLE", None)
    else:
        os.environ["LINEPROFILER_ROLE"] = str(role)


@dataclass(frozen=True)
class Config:
    """What a child needs to profile as its parent does."""

    output_dir: str
    project_folder: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    root_pid: int

    @classmethod
    def of(cls, profiler: LineProfiler, output_dir: Path) -> Config:
        """This process's children profile as ``profiler`` does, writing into ``output_dir``."""
        return cls(
            output_dir=str(output_dir),
            project_folder=str(profiler.project_folder),
            include=profiler.include,
            exclude=profiler.exclude,
            root_pid=os.getpid(),
        )

    def to_env(self) -> str:
        return json.dumps(
            {
                "version": CONFIG_VERSION,
                "output_dir": self.output_dir,
                "project_folder": self.project_folder,
                "include": list(self.include),
                "exclude": list(self.exclude),
                "root_pid": self.root_pid,
            }
        )

    @classmethod
    def from_env(cls, text: str) -> Config:
        """Raises ValueError for a value this version cannot use."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != CONFIG_VERSION:
            raise ValueError(f"{ENV_CONFIG} is not a version {CONFIG_VERSION} configuration")
        return cls(
            output_dir=str(data["output_dir"]),
            project_folder=str(data["project_folder"]),
            include=tuple(str(g) for g in data.get("include", ())),
            exclude=tuple(str(g) for g in data.get("exclude", ())),
            root_pid=int(data["root_pid"]),
        )


@dataclass(frozen=True)
class Ending:
    """A way a process ends that skips ``atexit``: ``how`` is ``"signal"`` (``signum`` set),
    ``"os._exit"`` (``exit_code`` set) or ``"exec"``."""

    how: str
    signum: int | None = None
    exit_code: int | None = None

    @property
    def signal_name(self) -> str | None:
        return None if self.signum is None else _signals.signal_name(self.signum)


class Closer(Protocol):
    """What else a process saves when it ends that way (``lineprofiler run``'s own file and
    tables): called after the sessions have written theirs, in the process ``pid`` only."""

    pid: int
    profiler: LineProfiler

    def on_ending(self, ending: Ending) -> None: ...

    def on_exec_failed(self) -> None: ...


def _auto_label(root_pid: int) -> str:
    """What a process is, for a file without a role: ``main`` for the root, the multiprocessing
    process kind (``SpawnPoolWorker``) for its children, else the script or ``python -c``."""
    if os.getpid() == root_pid:
        return "main"
    mp_process = sys.modules.get("multiprocessing.process")
    if mp_process is not None:
        try:
            name = mp_process.current_process().name
        except Exception:
            name = "MainProcess"
        if name != "MainProcess":
            return _MP_NAME_SUFFIX.sub("", name) or name
    orig = getattr(sys, "orig_argv", [])
    if "-c" in orig and any("multiprocessing.forkserver" in a for a in orig):
        return "ForkServer"  # the server itself (3.14+ runs the main module's top level there)
    if "-c" in orig and any("multiprocessing.spawn" in a for a in orig):
        return "multiprocessing child"
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 in ("", "-c"):
        return "python -c"
    return os.path.basename(argv0)


class Session:
    """One process's line-stats file in the output folder: its identity and when it is written.

    ``root=True``: the process that started profiling; its environment is exported while the
    session is open (:meth:`begin` to :meth:`end`). A child's session is open for the life of
    the process and ends at exit.
    """

    def __init__(
        self,
        profiler: LineProfiler,
        config: Config,
        *,
        root: bool,
        label: str | None = None,
        export_env: bool | None = None,
        start_file: bool | None = None,
    ) -> None:
        self.profiler = profiler
        self.config = config
        self.root = root
        #: Whether begin() exports the environment that makes children profile (default: root).
        self.export = root if export_env is None else export_env
        #: Whether begin() writes a ``"started"`` file (default: children; the runner asks too).
        self.start_file = (not root) if start_file is None else start_file
        self.label = label
        self.exit_code: int | None = None
        self.errors: list[str] = []
        self._env_undo: tuple[str | None, str | None, str, str] | None = None
        self._writing = False
        self._mp_hooked = False
        self._open = False
        self._started_written = False
        self._new_identity(parent_pid=os.getppid())

    def _new_identity(self, parent_pid: int) -> None:
        self.pid = os.getpid()
        self.parent_pid = parent_pid
        self.uuid8 = secrets.token_hex(4)
        self.start_unix_ns = time.time_ns()
        self.finished = False

    @property
    def path(self) -> Path:
        return Path(self.config.output_dir) / linesfile.lines_file_name(host_name(), self.pid, self.uuid8)

    # -- life ------------------------------------------------------------------------------

    def begin(self) -> None:
        """Open the session: hooks on, environment exported (root), ``"started"`` file (child,
        and a root that asks for one), once."""
        if self._open:
            return
        self._open = True
        os.makedirs(self.config.output_dir, exist_ok=True)
        if self.export:
            self._export_env()
        _Process.register(self)
        if self.start_file and not self._started_written:
            self._started_written = True
            self.write("started")

    def end(
        self, status: str = "stopped", *, exit_code: int | None = None, signal_name: str | None = None
    ) -> Path | None:
        """Close the session: the profiler is switched off (all levels) and the file written."""
        if not self._open:
            return None
        # From here until the handlers are gone, a SIGTERM (a Pool's terminate() often lands
        # exactly while a worker exits) waits for this last write instead of killing it.
        with _Process.holding_signals():
            self._open = False
            if exit_code is not None:
                self.exit_code = exit_code
            try:
                return self.write(status, signal_name=signal_name, stop=True)
            finally:
                self._restore_env()
                _Process.unregister(self)

    def on_ending(self, ending: Ending) -> None:
        """The process ends without atexit (a signal, ``os._exit``, an exec): the last write. An
        exec puts the environment back first, so the new program runs as it would unprofiled."""
        if ending.how == "signal":
            self.end("signalled", signal_name=ending.signal_name)
        else:
            self.end("exited", exit_code=ending.exit_code)

    def on_exec_failed(self) -> None:
        """The exec raised: the process goes on, and so does its file."""
        self.begin()

    def after_fork_child(self) -> None:
        """In a fork child: a process of its own, starting from zero, ending at exit."""
        self._new_identity(parent_pid=self.pid)
        self.root = False
        self.export = False
        self.label = None
        self.exit_code = None
        self.errors = []  # the parent's are in the parent's file
        self._env_undo = None  # the variables stay: they are this child's environment now
        self._writing = False
        self._mp_hooked = False
        self._started_written = True
        try:
            self.profiler.clear()
        except Exception as error:
            self.errors.append(f"clearing after fork: {error!r}")
        self.write("started")

    # -- environment -----------------------------------------------------------------------

    def _export_env(self) -> None:
        old_config = os.environ.get(ENV_CONFIG)
        old_path = os.environ.get("PYTHONPATH")
        new_config = self.config.to_env()
        parts = [p for p in (old_path or "").split(os.pathsep) if p and p != BOOT_DIR]
        new_path = os.pathsep.join([BOOT_DIR, *parts])
        os.environ[ENV_CONFIG] = new_config
        os.environ["PYTHONPATH"] = new_path
        self._env_undo = (old_config, old_path, new_config, new_path)

    def _restore_env(self) -> None:
        if self._env_undo is None:
            return
        old_config, old_path, new_config, new_path = self._env_undo
        self._env_undo = None
        for key, old, new in ((ENV_CONFIG, old_config, new_config), ("PYTHONPATH", old_path, new_path)):
            if os.environ.get(key) != new:
                continue  # changed by someone else since: theirs now
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old

    # -- writing ---------------------------------------------------------------------------

    def write(self, status: str, *, signal_name: str | None = None, stop: bool = False) -> Path | None:
        """Write the file now; never raises (a failure is one line on stderr). ``stop`` switches
        the profiler off first, so lines still running are billed up to now."""
        if self._writing or self.pid != os.getpid():
            return None
        with _Process.holding_signals():
            self._writing = True
            try:
                if stop:
                    self.profiler.stop_recording()
                document = self.document(status, signal_name)
                path = self.path
                os.makedirs(path.parent, exist_ok=True)
                linesfile.write_lines_file(path, document)
                if status != "started":
                    self.finished = True
                return path
            except Exception as error:
                message = (
                    f"lineprofiler: pid {os.getpid()} could not write its line stats to "
                    f"{self.config.output_dir}: {error}"
                )
                self.errors.append(message)
                try:
                    if sys.stderr is not None:
                        print(printable(message), file=sys.stderr)
                except Exception:
                    pass
                return None
            finally:
                self._writing = False

    def document(self, status: str, signal_name: str | None = None) -> dict[str, Any]:
        profiler = self.profiler
        stats = {} if status == "started" else profiler.collect_stats(self.errors)
        process = process_info(
            status,
            start_unix_ns=self.start_unix_ns,
            label=self.label or _auto_label(self.config.root_pid),
            signal=signal_name,
            exit_code=self.exit_code,
            pid=self.pid,
            parent_pid=self.parent_pid,
        )
        return document_from_stats(
            stats, process=process, profile=profiler.profile_info(children=True), errors=self.errors
        )


class _Process:
    """What is installed once per process while a line-stats file is open: exit, fork, and the
    endings that skip ``atexit``.

    - ``atexit``, and multiprocessing's exit finalizers (:meth:`mp_hook`).
    - ``os._exit`` is wrapped: the files are written, then the process exits with the same code.
    - ``os.execv`` and ``os.execve`` (which every ``os.exec*`` ends in) are wrapped: the files are
      written before the exec, and the program's environment is put back, so the new program
      runs unchanged; if the exec raises, recording goes on.
    - Signals: a handler for each of :data:`ENDING_SIGNALS` at its default action (a stand-in
      for it, also when the program later sets it back to SIG_DFL through :mod:`signal`, which
      then reports SIG_DFL as before), and for :data:`FLUSH_SIGNALS` over any Python handler.
      An ending signal writes the files, puts the default action back and is sent again, so the
      process ends by it; any other writes a snapshot and chains to the program's handler.
    - fork: the profilers' locks are held across it, and a child's files are its own.

    Everything is put back when the last file closes, where it is still ours (another tool may
    have wrapped on top: ours then passes through)."""

    sessions: list[Session] = []
    #: The runner's own file and tables (see :class:`Closer`).
    closers: list[Closer] = []
    installed = False
    #: The functions replaced while hooked, by name: what the hooks call.
    replaced: dict[str, Any] = {}
    previous_handlers: dict[int, Any] = {}
    #: A signal that came while a last write was under way waits here for it to finish.
    held_signal: int | None = None
    holding = 0
    ending = False

    @classmethod
    def register(cls, session: Session) -> None:
        if session not in cls.sessions:
            cls.sessions.append(session)
        cls.install()
        cls.mp_hook(session)

    @classmethod
    def unregister(cls, session: Session) -> None:
        if session in cls.sessions:
            cls.sessions.remove(session)
        if cls.idle():
            cls.uninstall()

    @classmethod
    def add_closer(cls, closer: Closer) -> None:
        if closer not in cls.closers:
            cls.closers.append(closer)
        cls.install()

    @classmethod
    def remove_closer(cls, closer: Closer) -> None:
        if closer in cls.closers:
            cls.closers.remove(closer)
        if cls.idle():
            cls.uninstall()

    @classmethod
    def idle(cls) -> bool:
        return not cls.sessions and not cls.closers

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            cls.installed = True
            atexit.register(cls.at_exit)
            os.register_at_fork(
                before=cls.before_fork, after_in_parent=cls.after_fork_parent, after_in_child=cls.after_fork_child
            )
        for module, name, hook in _hooks():
            if name not in cls.replaced:  # else still ours, under another tool's wrapper
                cls.replaced[name] = getattr(module, name)
                setattr(module, name, hook)
        cls.install_signals()

    @classmethod
    def uninstall(cls) -> None:
        cls.restore_signals()
        for module, name, hook in _hooks():
            if name in cls.replaced and getattr(module, name) is hook:
                setattr(module, name, cls.replaced.pop(name))

    # -- exit

    @classmethod
    def at_exit(cls) -> None:
        for session in list(cls.sessions):
            session.end("exited")

    @classmethod
    def mp_hook(cls, session: Session) -> None:
        """multiprocessing ends fork and forkserver children with ``os._exit``, after running
        its exit finalizers: register one, again after its post-fork reset in each child."""
        util = sys.modules.get("multiprocessing.util")
        if util is None or session._mp_hooked:
            return
        session._mp_hooked = True
        try:
            util.Finalize(None, _mp_exit, args=(session,), exitpriority=_MP_EXIT_PRIORITY)
            util.register_after_fork(session, _mp_after_fork)
        except Exception as error:
            session.errors.append(f"multiprocessing exit hook: {error!r}")

    @classmethod
    def process_ends(cls, ending: Ending) -> Callable[[], None] | None:
        """This process ends without atexit: every open file of it is written (sessions, then
        closers). Never raises. For an exec, returns what undoes it if the exec fails."""
        if cls.ending:
            return None
        cls.ending = True
        pid = os.getpid()
        sessions = [s for s in cls.sessions if s.pid == pid]
        closers = [c for c in cls.closers if c.pid == pid]
        depths: dict[int, tuple[LineProfiler, int]] = {}
        for owner in (*sessions, *closers):
            depths.setdefault(id(owner.profiler), (owner.profiler, owner.profiler.depth))
        try:
            for owner in (*sessions, *closers):
                try:
                    owner.on_ending(ending)
                except Exception:
                    pass
        finally:
            cls.ending = False
        if ending.how != "exec":
            return None

        def undo() -> None:
            for profiler, depth in depths.values():
                try:
                    while profiler.depth < depth:
                        profiler.enable()
                except Exception:
                    pass
            for owner in (*sessions, *closers):
                try:
                    owner.on_exec_failed()
                except Exception:
                    pass

        return undo

    # -- fork

    @classmethod
    def before_fork(cls) -> None:
        for session in list(cls.sessions):
            try:
                cls.mp_hook(session)  # multiprocessing may have been imported since
                session.profiler.lock_for_fork()
            except Exception:
                pass

    @classmethod
    def after_fork_parent(cls) -> None:
        for session in list(cls.sessions):
            try:
                session.profiler.unlock_after_fork()
            except Exception:
                pass

    @classmethod
    def after_fork_child(cls) -> None:
        cls.ending = False
        cls.holding = 0
        cls.held_signal = None
        cls.closers = [c for c in cls.closers if c.pid == os.getpid()]  # the parent's are not ours
        for session in list(cls.sessions):
            try:
                session.profiler.unlock_after_fork()
            except Exception:
                pass
            if not session.profiler.enabled:
                cls.sessions.remove(session)
                continue
            try:
                session.after_fork_child()
            except Exception:
                traceback.print_exc()
        if cls.idle():
            cls.uninstall()  # a child with nothing to save runs as it would without us

    # -- signals

    @classmethod
    def install_signals(cls) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for name in dict.fromkeys(ENDING_SIGNALS + FLUSH_SIGNALS):
            signum = _signals.number(name)
            if signum is None or signum in cls.previous_handlers:
                continue
            try:
                previous = _signals.current(signum)
                if previous is None:  # a handler installed outside Python: leave it
                    continue
                if name not in FLUSH_SIGNALS and previous != _signals.SIG_DFL:
                    continue
                _signals.install(signum, cls.on_signal)
                cls.previous_handlers[signum] = previous
            except (ValueError, OSError):
                pass

    @classmethod
    def restore_signals(cls) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in list(cls.previous_handlers.items()):
            try:
                if _signals.current(signum) == cls.on_signal:
                    _signals.install(signum, previous)
                del cls.previous_handlers[signum]
            except (ValueError, OSError):
                pass

    @classmethod
    @contextlib.contextmanager
    def holding_signals(cls) -> Iterator[None]:
        """While a last write is under way, a signal of ours waits for it instead of cutting it
        short (a Pool's terminate() often lands exactly while its workers exit)."""
        cls.holding += 1
        try:
            yield
        finally:
            cls.holding -= 1
            if not cls.holding and cls.held_signal is not None:
                held, cls.held_signal = cls.held_signal, None
                if threading.current_thread() is threading.main_thread():
                    cls.on_signal(held, None)
                else:  # only the main thread may handle it: send it again, for that one
                    try:
                        os.kill(os.getpid(), held)
                    except OSError:
                        pass

    @classmethod
    @contextlib.contextmanager
    def quiet_sigpipe(cls) -> Iterator[None]:
        """While the profiler prints: a pipe whose reader left is an error it ignores, not the
        end of the program (when our stand-in is SIGPIPE's handler, as Python's SIG_IGN is not)."""
        signum = _signals.number("SIGPIPE")
        swapped: int | None = None
        try:
            if (
                signum is not None
                and threading.current_thread() is threading.main_thread()
                and _signals.current(signum) == cls.on_signal
            ):
                _signals.install(signum, _signals.SIG_IGN)
                swapped = signum
        except (ValueError, OSError):
            pass
        try:
            yield
        finally:
            if swapped is not None:
                try:
                    _signals.install(swapped, cls.on_signal)
                except (ValueError, OSError):
                    pass

    @classmethod
    def on_signal(cls, signum: int, frame: Any) -> None:
        if cls.ending:
            return  # came in the middle of the last writes of a process that is ending anyway
        previous = cls.previous_handlers.get(signum)
        if previous is None:  # handled late, after the handlers were put back
            previous = _signals.current(signum)
            if previous is None or previous == cls.on_signal:
                previous = _signals.SIG_DFL
        if cls.holding:
            cls.held_signal = signum
            return
        if _signals.ends_process(previous):
            cls.process_ends(Ending("signal", signum=signum))
        else:  # the process lives on: a snapshot, and recording goes on
            for session in list(cls.sessions):
                try:
                    session.write("signalled", signal_name=_signals.signal_name(signum))
                except Exception:
                    pass
        _signals.chain(signum, frame, previous)

    @classmethod
    def set_handler(cls, signalnum: Any, handler: Any) -> Any:
        """``signal.signal`` while hooked: SIG_DFL for one of the ending signals puts our
        stand-in there instead; what the program is told was there is what it set."""
        real = cls.replaced.get("signal", _REAL["signal"])
        stand_in = (
            not cls.idle()
            and isinstance(handler, int)
            and not isinstance(handler, bool)
            and handler == _signals.SIG_DFL
            and signalnum in _ending_numbers()
            and threading.current_thread() is threading.main_thread()
        )
        before = real(signalnum, cls.on_signal if stand_in else handler)
        shown = cls.shown(signalnum, before)
        if stand_in:
            cls.previous_handlers[signalnum] = _signals.SIG_DFL
        elif before == cls.on_signal:
            cls.previous_handlers.pop(signalnum, None)
        return shown

    @classmethod
    def get_handler(cls, signalnum: Any) -> Any:
        """``signal.getsignal`` while hooked: the handler the program set, not our stand-in."""
        real = cls.replaced.get("getsignal", _REAL["getsignal"])
        return cls.shown(signalnum, real(signalnum))

    @classmethod
    def shown(cls, signalnum: Any, handler: Any) -> Any:
        if handler == cls.on_signal and signalnum in cls.previous_handlers:
            handler = cls.previous_handlers[signalnum]
            if isinstance(handler, int):
                try:
                    return signal.Handlers(handler)
                except ValueError:
                    return handler
        return handler

    # -- exec

    @classmethod
    def exec_through(cls, name: str, path: Any, *args: Any, **kwargs: Any) -> None:
        real = cls.replaced.get(name, _REAL[name])
        undo = cls.process_ends(Ending("exec")) if _may_exec(path) else None
        try:
            real(path, *args, **kwargs)
        except BaseException:
            if undo is not None:
                undo()
            raise


#: What the hooks fall back on when called after they were taken out (a reference kept by
#: another tool that wrapped them).
_REAL: dict[str, Any] = {
    "_exit": os._exit,
    "execv": os.execv,
    "execve": os.execve,
    "signal": signal.signal,
    "getsignal": signal.getsignal,
}


def _ending_numbers() -> set[int]:
    return {n for n in map(_signals.number, ENDING_SIGNALS) if n is not None}


def _exit_code(status: Any) -> int | None:
    """The code ``os._exit(status)`` exits with, or None when it would refuse ``status``."""
    try:
        code = operator.index(status)
    except TypeError:
        return None
    return code if -(2**31) <= code < 2**31 else None


def _may_exec(path: Any) -> bool:
    """Whether an exec of ``path`` has a chance (``os.execvp`` tries every PATH folder: the
    files are written once, for the one that is there)."""
    if isinstance(path, int):
        return True
    try:
        where = os.fspath(path)
        return os.access(where, os.X_OK) and not os.path.isdir(where)
    except Exception:
        return False


def _exit_hook(status: Any) -> None:
    """``os._exit`` while a line-stats file is open: write, then exit with the same code."""
    real = _Process.replaced.get("_exit", _REAL["_exit"])
    code = _exit_code(status)
    if code is not None:
        try:
            _Process.process_ends(Ending("os._exit", exit_code=code))
        except BaseException:
            pass
    real(status)


def _execv_hook(path: Any, argv: Any, /) -> None:
    _Process.exec_through("execv", path, argv)


def _execve_hook(path: Any, argv: Any, env: Any) -> None:
    _Process.exec_through("execve", path, argv, env)


def _signal_hook(signalnum: Any, handler: Any) -> Any:
    return _Process.set_handler(signalnum, handler)


def _getsignal_hook(signalnum: Any) -> Any:
    return _Process.get_handler(signalnum)


_signal_hook.__doc__ = signal.signal.__doc__
_getsignal_hook.__doc__ = signal.getsignal.__doc__


def _hooks() -> tuple[tuple[Any, str, Callable[..., Any]], ...]:
    return (
        (os, "_exit", _exit_hook),
        (os, "execv", _execv_hook),
        (os, "execve", _execve_hook),
        (signal, "signal", _signal_hook),
        (signal, "getsignal", _getsignal_hook),
    )


def _mp_exit(session: Session) -> None:
    session.end("exited")


def _mp_after_fork(session: Session) -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None and session in _Process.sessions:
        util.Finalize(None, _mp_exit, args=(session,), exitpriority=_MP_EXIT_PRIORITY)


# -- the child's side ---------------------------------------------------------------------------

_booted_pid: int | None = None


def _mp_helper_kind() -> str | None:
    """``"forkserver"`` or ``"helper"`` when this interpreter is one of multiprocessing's own
    processes (judged from the ``-c`` command it was started with), else None."""
    orig = list(getattr(sys, "orig_argv", []))
    if "-c" not in orig:
        return None
    command = orig[orig.index("-c") + 1] if orig.index("-c") + 1 < len(orig) else ""
    if not command.startswith("from multiprocessing."):
        return None
    if "multiprocessing.spawn import" in command:
        return None
    if "multiprocessing.forkserver import" in command:
        return "forkserver"
    return "helper"


def start_from_env() -> None:
    """Called at interpreter startup by the boot ``sitecustomize`` when ``LINEPROFILER_LINES``
    is set: profile this process for its whole life. Never raises."""
    global _booted_pid
    text = os.environ.get(ENV_CONFIG)
    if not text or _booted_pid == os.getpid():
        return
    _booted_pid = os.getpid()
    try:
        config = Config.from_env(text)
    except (ValueError, KeyError, TypeError) as error:
        print(f"lineprofiler: {ENV_CONFIG} is unusable ({error}); this process is not profiled", file=sys.stderr)
        return
    kind = _mp_helper_kind()
    if kind == "helper":
        return
    if kind == "forkserver":
        # The server itself runs no user code; each child it forks is profiled from its start.
        os.register_at_fork(after_in_child=lambda: _start_child(config))
        return
    _start_child(config)


def _start_child(config: Config) -> None:
    from .profiler import LineProfiler

    try:
        profiler = LineProfiler(config.project_folder, include=config.include or None, exclude=config.exclude or None)
        profiler.make_background()
        session = Session(profiler, config, root=False)
        session.begin()
        profiler.enable()
    except Exception as error:
        print(f"lineprofiler: pid {os.getpid()} is not profiled: {error}", file=sys.stderr)
