"""``backend="lines"``: the line profiler for a bounded window of a long run.

``Profiler(run_dir="profile", role="actor", backend="lines", backend_window=(100, 110),
window_phase="iteration")`` switches a :class:`~lineprofiler.LineProfiler` on at the 100th entry
into a phase whose leaf name is ``iteration`` and off at the 110th, in every process that
constructs such a profiler, so entries 100 to 109 are line-profiled there. The window is wired
as the torch and VizTracer windows are (a watch on the phase, an attachment of the profiler);
its result is a line-stats file (:mod:`lineprofiler.runfiles.linesfile`) named after the
process's worker file::

    <run_dir>/lines/<host>/l_<run>_<pid>_<uuid8>.json

written through :func:`~lineprofiler.runfiles.layout.write_atomic` (nothing under the run
directory is followed) when the window closes, or, when the process ends, is signalled
(SIGTERM, SIGUSR1, SIGHUP with their default action) or closes its profiler while the window is
open, then, marked ``partial``. The file's ``process`` carries the worker's run id, attempt and
uuid, so ``lineprofiler report --lines`` keeps the files of the attempt it shows.

The project folder is ``lines_project=``, else ``LINEPROFILER_LINES_PROJECT``, else the git root
of the program's main script (``__main__.__file__``: in a ``spawn`` child, the parent's script),
else the git root of the working directory, else the working directory: what
:class:`~lineprofiler.LineProfiler` and ``lineprofiler run`` profile.

Writing the file at the window's close happens in the thread that entered the phase, before the
phase's clock starts (the core calls its watch first), so it is not billed to that phase. Nothing
here raises into the user's code after construction: a failure is the window's ``error``,
recorded in the worker file and ``metadata.json``.

What the window reads of the accounting profiler that owns it is a
:class:`~._surfaces.WindowOwner`; this module never imports the profiler's.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...runfiles import linesfile
from .. import _phases
from ..identity import ENV_LINES_PROJECT
from .window_state import WindowState

if TYPE_CHECKING:
    from ...lines.profiler import LineProfiler
    from .._surfaces import WindowOwner

__all__ = ["LinesWindow", "project_folder"]


def project_folder(explicit: str | None = None) -> Path:
    """The folder a lines window profiles: ``explicit``, else ``LINEPROFILER_LINES_PROJECT``, else
    the git root of the main script's folder, else that of the working directory (else it).
    Raises ValueError when the folder named by the environment does not exist."""
    from ...lines.project import find_project_root

    if explicit is not None:
        return Path(explicit)
    named = os.environ.get(ENV_LINES_PROJECT, "").strip()
    if named:
        if not os.path.isdir(named):
            raise ValueError(f"{ENV_LINES_PROJECT}={named!r} is not an existing folder")
        return Path(os.path.realpath(named))
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if isinstance(script, str) and os.path.isfile(script):
        return find_project_root(os.path.dirname(os.path.abspath(script)))
    return find_project_root()


class LinesWindow(WindowState):
    """The line profiler of one process, on for entries ``start .. stop - 1`` of a phase.

    States as :class:`~.windows.Window`'s: ``"unavailable"`` (the line layer could not be set
    up: ``unavailable_reason`` says why), ``"waiting"``, ``"active"``, ``"done"`` (file written),
    ``"failed"`` (switching on or writing failed; ``error`` says what).
    """

    backend_name = "lines"

    def __init__(
        self,
        owner: WindowOwner,
        window: tuple[int, int],
        phase: str,
        *,
        project: str | None = None,
    ) -> None:
        self._init_state(owner.run_paths, window, phase)
        self._owner = owner
        #: The last entry that began while the window was open (a truncated window's extent).
        self.last_entry: int | None = None
        self.project: Path | None = None
        self._profiler: LineProfiler | None = None
        try:
            from ...lines.profiler import LineProfiler

            self.project = project_folder(project)
            self._profiler = LineProfiler(self.project)
        except Exception as error:  # a missing folder, a line layer that cannot load
            self.state = "unavailable"
            self.unavailable_reason = f"{type(error).__name__}: {error}"

    # ---- the watch callback ----

    def on_entry(self, n: int) -> None:
        """The core's watch callback: ``n`` counts entries into :attr:`watch_name` from 1."""
        try:
            if n == self.start_at and self.state == "waiting":
                self._start(n)
            elif self.state == "active":
                if n >= self.stop_at:
                    self._stop(n, partial=False)
                else:
                    self.last_entry = n
        except Exception as error:  # the last guard: _start and _stop catch their own
            self._fail(error)

    __call__ = on_entry

    def _fail(self, error: BaseException | str) -> None:
        self.state = "failed"
        self.error = error if isinstance(error, str) else f"{type(error).__name__}: {error}"

    def _start(self, n: int) -> None:
        with self._lock:
            if self.state != "waiting" or self._profiler is None:
                return
            try:
                # RuntimeError when another LineProfiler of the program records, or no
                # sys.monitoring tool id is free: the window records why and stays shut.
                self._profiler.enable()
            except Exception as error:
                self._fail(error)
                return
            self.state = "active"
            self.started_entry = self.last_entry = n
            self.started_unix_ns = time.time_ns()

    def _stop(self, n: int | None, *, partial: bool, status: str = "stopped", signal: str | None = None) -> None:
        with self._lock:
            if self.state != "active" or self._profiler is None:
                return
            self._profiler.stop_recording()  # open lines end now; an internal error stays for the file
            self.stopped_entry = n
            self.stopped_unix_ns = time.time_ns()
            self.truncated = partial
            try:
                self.artifact = self._write(status, signal)
            except Exception as error:
                self._fail(f"line stats not written: {type(error).__name__}: {error}")
                return
            self.state = "done"

    @property
    def entries(self) -> int | None:
        """Entries into the phase that ran with the window open (the last one cut short when
        the window is partial); None before it opened."""
        if self.started_entry is None or self.last_entry is None:
            return None
        if self.stopped_entry is not None:
            return self.stopped_entry - self.started_entry
        return self.last_entry - self.started_entry + 1

    # ---- the file ----

    def path(self) -> Path | None:
        """Where this process's file goes: beside nothing, named after its worker file."""
        worker = self._owner.path
        return None if worker is None else self.paths.lines(worker)

    def document(self, status: str, signal: str | None = None) -> dict[str, Any]:
        from ...lines.saved import document_from_stats, process_info

        assert self._profiler is not None
        owner = self._owner
        errors: list[str] = []
        stats = self._profiler.collect_stats(errors)
        identity = owner.identity
        extra: dict[str, Any] = {}
        if identity is not None:
            extra = {"run_id": identity.run_id, "attempt": identity.attempt, "uuid": identity.uuid}
            extra["rank"] = identity.rank
        process = process_info(
            status,
            start_unix_ns=owner.start_unix_ns or self.started_unix_ns or time.time_ns(),
            role=owner.role,
            signal=signal,
            extra=extra,
        )
        if identity is not None:  # the worker file's host and parent, not the line layer's guess
            process.update(host=identity.host, pid=identity.pid, parent_pid=identity.parent_pid)
        profile = self._profiler.profile_info(children=False)
        profile["window"] = {
            "phase": self.watch_name,
            "start": self.start_at,
            "stop": self.stop_at,
            "partial": self.truncated,
            "started_entry": self.started_entry,
            "stopped_entry": self.stopped_entry,
            "entries": self.entries,
            "started_unix_ns": self.started_unix_ns,
            "stopped_unix_ns": self.stopped_unix_ns,
        }
        return document_from_stats(stats, process=process, profile=profile, errors=errors)

    def _write(self, status: str, signal: str | None) -> Path:
        target = self.path()
        if target is None:
            raise OSError("the worker file has no path yet")
        document = self.document(status, signal)
        token = _phases.own_io_begin()  # the profiler's own write: not billed to the user's phases
        try:
            linesfile.write_lines_file(target, document, root=self.run_dir)
        finally:
            _phases.own_io_end(token)
        return target

    # ---- the attachment protocol ----

    def stop(self) -> None:
        """The profiler stops (close, exit, or a signal that ends the process): an open window
        is cut here and written, marked partial."""
        signal = self._owner.signal_name
        if signal is not None:
            status = "signalled"
        elif not threading.main_thread().is_alive():  # atexit: the main thread has finished
            status = "exited"
        else:
            status = "stopped"
        try:
            self._stop(None, partial=True, status=status, signal=signal)
        except Exception as error:
            self._fail(error)

    close = stop

    def after_fork_child(self) -> None:
        """A forked child counts its own entries from zero: a window open in the parent is
        switched off here and what it recorded (the parent's) forgotten."""
        self._forget_after_fork()
        self.last_entry = None
        profiler = self._profiler
        if profiler is not None:
            try:
                profiler.reset_after_fork()  # its lock perhaps copied while another thread held it
            except Exception as error:
                self._fail(error)

    def describe(self) -> dict[str, Any]:
        """What metadata.json and the worker document record about this window."""
        described = super().describe()
        described["entries"] = self.entries
        described["project_folder"] = None if self.project is None else str(self.project)
        return described
