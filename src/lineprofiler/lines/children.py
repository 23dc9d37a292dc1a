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
  file at once, the data at exit (``atexit``, and multiprocessing's exit finalizers for the
  children it ends with ``os._exit``) and on SIGTERM, SIGUSR1 and SIGHUP. A file still saying
  ``"started"`` names a process that ended without writing (SIGKILL, ``os._exit``).
- multiprocessing's own helper processes (the resource tracker, the forkserver process itself)
  are not profiled; the forkserver's children are.

Not reached: interpreters started with ``-I``, ``-E`` or ``-S`` (they ignore ``PYTHONPATH`` or
``sitecustomize``), children given an environment without these two variables (``env={...}``),
an interpreter that cannot import lineprofiler (its ``"started"`` file says so), a forkserver
that was already running before profiling began, and fork children that end with ``os._exit``
outside multiprocessing (they leave their ``"started"`` file).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _signals
from ..runfiles import linesfile
from .saved import document_from_stats, host_name, process_info

if TYPE_CHECKING:
    from .profiler import LineProfiler

__all__ = ["BOOT_DIR", "ENV_CONFIG", "Config", "Session", "set_role", "start_from_env"]

ENV_CONFIG = "LINEPROFILER_LINES"
CONFIG_VERSION = 1
#: The folder put first on PYTHONPATH: it holds only ``sitecustomize.py``.
BOOT_DIR = str(Path(__file__).resolve().with_name("_boot"))
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
    ) -> None:
        self.profiler = profiler
        self.config = config
        self.root = root
        #: Whether begin() exports the environment that makes children profile (default: root).
        self.export = root if export_env is None else export_env
        self.label = label
        self.exit_code: int | None = None
        self.errors: list[str] = []
        self._env_undo: tuple[str | None, str | None, str, str] | None = None
        self._writing = False
        self._closing = False
        self._pending_signal: int | None = None
        self._mp_hooked = False
        self._open = False
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
        """Open the session: hooks on, environment exported (root), ``"started"`` file (child)."""
        if self._open:
            return
        self._open = True
        os.makedirs(self.config.output_dir, exist_ok=True)
        if self.export:
            self._export_env()
        _Process.register(self)
        if not self.root:
            self.write("started")

    def end(
        self, status: str = "stopped", *, exit_code: int | None = None, signal_name: str | None = None
    ) -> Path | None:
        """Close the session: the profiler is switched off (all levels) and the file written."""
        if not self._open:
            return None
        # From here until the handlers are gone, a SIGTERM (a Pool's terminate() often lands
        # exactly while a worker exits) waits for this last write instead of killing it.
        self._closing = True
        self._open = False
        if exit_code is not None:
            self.exit_code = exit_code
        try:
            return self.write(status, signal_name=signal_name, stop=True)
        finally:
            self._restore_env()
            _Process.unregister(self)
            self._closing = False
            pending, self._pending_signal = self._pending_signal, None
            if pending is not None:
                _Process.on_signal(pending, None)

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
        self._pending_signal = None
        self._mp_hooked = False
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
        self._writing = True
        try:
            if stop:
                self.profiler._stop_all()
            document = self.document(status, signal_name)
            path = self.path
            os.makedirs(path.parent, exist_ok=True)
            linesfile.write_lines_file(path, document)
            if status != "started":
                self.finished = True
            return path
        except Exception as error:
            message = (
                f"lineprofiler: pid {os.getpid()} could not write its line stats to {self.config.output_dir}: {error}"
            )
            self.errors.append(message)
            try:
                print(message, file=sys.stderr)
            except Exception:
                pass
            return None
        finally:
            self._writing = False
            if not self._closing:  # else end() handles it once the handlers are gone
                pending, self._pending_signal = self._pending_signal, None
                if pending is not None:
                    _Process.on_signal(pending, None)

    def document(self, status: str, signal_name: str | None = None) -> dict[str, Any]:
        profiler = self.profiler
        stats = {} if status == "started" else profiler._collect_quietly(self.errors)
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
            stats, process=process, profile=profiler._profile_info(children=True), errors=self.errors
        )


class _Process:
    """What is installed once per process for every open session: exit, fork, signals."""

    sessions: list[Session] = []
    installed = False
    previous_handlers: dict[int, Any] = {}

    @classmethod
    def register(cls, session: Session) -> None:
        if session not in cls.sessions:
            cls.sessions.append(session)
        if not cls.installed:
            cls.installed = True
            atexit.register(cls.at_exit)
            os.register_at_fork(
                before=cls.before_fork, after_in_parent=cls.after_fork_parent, after_in_child=cls.after_fork_child
            )
        cls.install_signals()
        cls.mp_hook(session)

    @classmethod
    def unregister(cls, session: Session) -> None:
        if session in cls.sessions:
            cls.sessions.remove(session)
        if not cls.sessions:
            cls.restore_signals()

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

    # -- fork

    @classmethod
    def before_fork(cls) -> None:
        for session in list(cls.sessions):
            try:
                cls.mp_hook(session)  # multiprocessing may have been imported since
                session.profiler._lock.acquire()
            except Exception:
                pass

    @classmethod
    def after_fork_parent(cls) -> None:
        for session in list(cls.sessions):
            try:
                session.profiler._lock.release()
            except Exception:
                pass

    @classmethod
    def after_fork_child(cls) -> None:
        for session in list(cls.sessions):
            try:
                session.profiler._lock.release()
            except Exception:
                pass
            if not session.profiler.enabled:
                cls.sessions.remove(session)
                continue
            try:
                session.after_fork_child()
            except Exception:
                traceback.print_exc()

    # -- signals

    @classmethod
    def install_signals(cls) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for name in FLUSH_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None or signum in cls.previous_handlers:
                continue
            try:
                previous = signal.getsignal(signum)
                if previous is None:  # a handler installed outside Python: leave it
                    continue
                signal.signal(signum, cls.on_signal)
                cls.previous_handlers[signum] = previous
            except (ValueError, OSError):
                pass

    @classmethod
    def restore_signals(cls) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in list(cls.previous_handlers.items()):
            try:
                if signal.getsignal(signum) == cls.on_signal:
                    signal.signal(signum, previous)
                del cls.previous_handlers[signum]
            except (ValueError, OSError):
                pass

    @classmethod
    def on_signal(cls, signum: int, frame: Any) -> None:
        name = _signals.signal_name(signum)
        previous = cls.previous_handlers.get(signum)
        if previous is None:  # handled late, after the handlers were put back
            previous = signal.getsignal(signum)
            if previous is None or previous == cls.on_signal:
                previous = signal.SIG_DFL
        ending = _signals.ends_process(previous)
        for session in list(cls.sessions):
            if session._writing or session._closing:
                # The signal came in the middle of our own last write: finish it first.
                session._pending_signal = signum
                return
        for session in list(cls.sessions):
            try:
                if ending:
                    session.end("signalled", signal_name=name)
                else:  # the process lives on: a snapshot, and recording goes on
                    session.write("signalled", signal_name=name)
            except Exception:
                pass
        _signals.chain(signum, frame, previous)


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
        profiler._yields = True
        session = Session(profiler, config, root=False)
        session.begin()
        profiler.enable()
    except Exception as error:
        print(f"lineprofiler: pid {os.getpid()} is not profiled: {error}", file=sys.stderr)
