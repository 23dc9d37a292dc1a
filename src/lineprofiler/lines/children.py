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
  ends it (see :mod:`lineprofiler.lines.endings`). A file still saying ``"started"`` names a
  process that ended without writing (SIGKILL, a crash, a signal at its default action that
  Python never saw).
- multiprocessing's own helper processes (the resource tracker, the forkserver process itself)
  are not profiled; the forkserver's children are.

Not reached: interpreters started with ``-I``, ``-E`` or ``-S`` (they ignore ``PYTHONPATH`` or
``sitecustomize``), children given an environment without these two variables (``env={...}``),
an interpreter that cannot import lineprofiler (its ``"started"`` file says so), and a
forkserver that was already running before profiling began.

Here: the configuration a child inherits (:class:`Config`) and a process's file
(:class:`Session`). A child's start is :mod:`lineprofiler.lines.child_start`; what a session
needs of its profiler is :class:`Recording`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .._terminal import printable
from ..runfiles import linesfile
from .endings import ENDINGS, Ending, EndingProfiler
from .saved import host_name, process_info

__all__ = ["BOOT_DIR", "ENV_CONFIG", "Config", "Recording", "Session", "set_role"]

ENV_CONFIG = "LINEPROFILER_LINES"
CONFIG_VERSION = 1
#: The folder put first on PYTHONPATH: it holds only ``sitecustomize.py``.
BOOT_DIR = str(Path(__file__).resolve().with_name("_boot"))
_MP_NAME_SUFFIX = re.compile(r"(-\d+)(:\d+)*$")


def set_role(role: str | None) -> None:
    """Name the role this process plays (``"actor"``): written into its line-stats file, and what
    ``lineprofiler view --by-role`` groups by. The same as setting ``LINEPROFILER_ROLE``."""
    if role is None:
        os.environ.pop("LINEPROFILER_ROLE", None)
    else:
        os.environ["LINEPROFILER_ROLE"] = str(role)


class Settings(Protocol):
    """What a child copies of its parent's profiler (a LineProfiler)."""

    @property
    def project_folder(self) -> Path: ...
    @property
    def include(self) -> tuple[str, ...]: ...
    @property
    def exclude(self) -> tuple[str, ...]: ...


class Recording(EndingProfiler, Protocol):
    """What a session does with its profiler (a LineProfiler): stop it for the last write,
    collect what it recorded without raising, describe it, forget the parent's in a fork child."""

    def stop_recording(self) -> None: ...
    def lines_document(
        self, process: dict[str, Any], errors: list[str], *, empty: bool = False, children: bool | None = None
    ) -> dict[str, Any]: ...
    def clear_after_fork(self) -> None: ...


@dataclass(frozen=True)
class Config:
    """What a child needs to profile as its parent does."""

    output_dir: Path
    project_folder: Path
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    root_pid: int

    @classmethod
    def of(cls, profiler: Settings, output_dir: Path) -> Config:
        """This process's children profile as ``profiler`` does, writing into ``output_dir``."""
        return cls(
            output_dir=output_dir,
            project_folder=profiler.project_folder,
            include=profiler.include,
            exclude=profiler.exclude,
            root_pid=os.getpid(),
        )

    def to_env(self) -> str:
        return json.dumps(
            {
                "version": CONFIG_VERSION,
                "output_dir": str(self.output_dir),
                "project_folder": str(self.project_folder),
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
            output_dir=Path(str(data["output_dir"])),
            project_folder=Path(str(data["project_folder"])),
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
        profiler: Recording,
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
        #: Whether its multiprocessing exit finalizer is registered (see endings.ProcessEndings).
        self.mp_hooked = False
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
        return self.config.output_dir / linesfile.lines_file_name(host_name(), self.pid, self.uuid8)

    # -- life ------------------------------------------------------------------------------

    def begin(self) -> None:
        """Open the session: hooks on, environment exported (root), ``"started"`` file (child,
        and a root that asks for one), once."""
        if self._open:
            return
        self._open = True
        self.config.output_dir.mkdir(parents=True, exist_ok=True)
        if self.export:
            self._export_env()
        ENDINGS.register(self)
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
        with ENDINGS.holding_signals():
            self._open = False
            if exit_code is not None:
                self.exit_code = exit_code
            try:
                return self.write(status, signal_name=signal_name, stop=True)
            finally:
                self._restore_env()
                ENDINGS.unregister(self)

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
        self.mp_hooked = False
        self._started_written = True
        try:
            self.profiler.clear_after_fork()  # the parent's open lines are not the child's
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
        with ENDINGS.holding_signals():
            self._writing = True
            try:
                if stop:
                    self.profiler.stop_recording()
                document = self.document(status, signal_name)
                path = self.path
                path.parent.mkdir(parents=True, exist_ok=True)
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
        process = process_info(
            status,
            start_unix_ns=self.start_unix_ns,
            label=self.label or _auto_label(self.config.root_pid),
            signal=signal_name,
            exit_code=self.exit_code,
            pid=self.pid,
            parent_pid=self.parent_pid,
        )
        return self.profiler.lines_document(process, self.errors, empty=status == "started", children=True)
