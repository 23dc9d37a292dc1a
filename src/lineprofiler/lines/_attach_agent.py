"""What ``lineprofiler attach`` runs inside its target, by ``sys.remote_exec`` (3.14+).

The bootstrap script that the command writes runs in the target's main thread, between two of its
bytecodes, and must hand the thread back at once: it only starts one daemon thread
(``lineprofiler-attach``) and returns. That thread imports lineprofiler (the slow part, a pause
the main thread would otherwise take) and calls :func:`run`, which turns a
:class:`~lineprofiler.lines.profiler.LineProfiler` on (``sys.monitoring`` is process-wide: the
threads already running, the main thread included, are recorded from the line they are at),
waits for the window to end, turns it off (the tool id is freed), writes the line-stats file into
the attach folder (a new file renamed into place) and returns; the thread ends. Nothing else is
left behind: the exit hook that saves the window when the process ends first is cancelled once it
is saved, and the fork hook does nothing outside a window. Nothing here raises into the target
or prints in it.

What the command and the target say to each other goes through files of the attach folder, each
written whole and renamed into place: ``request.json`` (the settings; the bootstrap renames it to
``request.taken`` when it starts, so that the command's cancellation and the start cannot both
win), and ``status.json`` (``started``, ``failed`` or ``saved``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from .. import _lifecycle
from ..runfiles import linesfile
from ..runfiles.layout import write_atomic
from .profiler import LineProfiler
from .saved import host_name, process_info

__all__ = ["LABEL", "REQUEST_TAKEN", "RESULT_NAME", "STATUS_NAME", "THREAD_NAME", "run"]

#: Names inside the attach folder (the command reads the same constants).
REQUEST_TAKEN = "request.taken"
STATUS_NAME = "status.json"
RESULT_NAME = "lines.json"
#: The daemon thread the bootstrap starts, which opens and closes the window.
THREAD_NAME = "lineprofiler-attach"
#: The saved file's ``process.label``.
LABEL = "attached"

# The window open in this process, for the fork hook; None outside a window.
_open_window: _Window | None = None
_fork_hook_registered = False
# Two attaches at once: one opens its window, the other is refused.
_opening = threading.Lock()


def write_json(path: str, document: dict[str, Any]) -> None:
    """``document`` at ``path``, whole or not at all: a new file renamed over it."""
    write_atomic(path, json.dumps(document).encode("utf-8"))


def _say(folder: str, state: str, **fields: Any) -> None:
    try:
        write_json(os.path.join(folder, STATUS_NAME), {"state": state, "pid": os.getpid(), **fields})
    except OSError:
        pass  # the command times out and says it heard nothing


class _Window:
    """One attach window: the profiler, the wait, and the exit hook that saves it if the process
    ends first."""

    def __init__(self, folder: str, request: dict[str, Any]) -> None:
        self.folder = folder
        self.duration_s = float(request["duration_s"])
        self.profiler = LineProfiler(
            request.get("project_folder") or None,
            include=request.get("include") or None,
            exclude=request.get("exclude") or None,
        )
        # The program's own LineProfiler, if it turns one on, records instead of this one.
        self.profiler.make_background()
        self.lock = threading.Lock()
        self.closed = False
        self._wake = threading.Event()
        #: What the ``started`` status says, said again with ``saved`` (which may replace it first).
        self.facts: dict[str, Any] = {}

    def open(self) -> None:
        """RuntimeError when another profiler records or every tool id is taken; ValueError for
        a project folder that does not exist here. Nothing is left on when it raises."""
        global _open_window
        # The exit hook first: a program that ends as soon as it sees the profiler on (before
        # this thread runs again) must still save what it recorded.
        _lifecycle.at_exit(self._at_exit)
        try:
            self.profiler.enable()
        except BaseException:
            _lifecycle.cancel_at_exit(self._at_exit)
            raise
        _open_window = self

    def wait_then_close(self) -> None:
        self._wake.wait(self.duration_s)
        self.close("stopped")

    def _at_exit(self) -> None:
        self.close("exited")
        self._wake.set()  # after: woken first, the window's thread would save it as "stopped"

    def close(self, status: str) -> None:
        """Off, then saved; once, from whichever comes first: the window's end or the exit."""
        global _open_window
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.profiler.stop_recording()
            _open_window = None
            if status != "exited":
                _lifecycle.cancel_at_exit(self._at_exit)
            self._save(status)

    def _save(self, status: str) -> None:
        errors: list[str] = []
        try:
            process = process_info(status, start_unix_ns=self.profiler.created_unix_ns, label=LABEL)
            document = self.profiler.lines_document(process, errors)
            path = os.path.join(self.folder, RESULT_NAME)
            linesfile.write_lines_file(path, document)
        except Exception as error:  # the command says what went wrong; the target goes on
            _say(self.folder, "failed", reason="save", error=f"{type(error).__name__}: {error}")
            return
        _say(self.folder, "saved", **self.facts, status=status, file=RESULT_NAME)

    def after_fork_in_child(self) -> None:
        # The child has the profiler but not the thread that ends the window: off, and forgotten.
        global _open_window
        _open_window = None
        self.closed = True
        self.profiler.reset_after_fork()
        _lifecycle.cancel_at_exit(self._at_exit)


def _after_fork_in_child() -> None:
    window = _open_window
    if window is not None:
        window.after_fork_in_child()


def run(folder: str) -> None:
    """In the bootstrap's thread: open the window the request in ``folder`` asks for, wait for its
    end, save. Never raises: what goes wrong is written to ``status.json`` for the command."""
    global _fork_hook_registered
    try:
        with open(os.path.join(folder, REQUEST_TAKEN), encoding="utf-8") as stream:
            request = json.load(stream)
        window = _Window(folder, request)
        window.facts = {
            "python": ".".join(map(str, sys.version_info[:3])),
            "executable": sys.executable,
            "host": host_name(),
            "project_folder": str(window.profiler.project_folder),
            "threads": threading.active_count() - 1,  # the program's, not this one
            "started_unix_ns": time.time_ns(),
        }
        with _opening:
            if _open_window is not None:
                raise RuntimeError("another lineprofiler attach is recording in this process: wait for its end")
            if not _fork_hook_registered:
                # Forever (a fork hook cannot be removed), and a no-op outside a window.
                _lifecycle.at_fork(after_in_child=_after_fork_in_child)
                _fork_hook_registered = True
            window.open()
    except Exception as error:
        _say(folder, "failed", reason="start", error=f"{type(error).__name__}: {error}")
        return
    # Under the window's lock: an exit that closed it already has written "saved", kept.
    with window.lock:
        if not window.closed:
            _say(folder, "started", **window.facts)
    window.wait_then_close()
