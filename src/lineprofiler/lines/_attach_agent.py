"""What ``lineprofiler attach`` runs inside its target, by ``sys.remote_exec`` (3.14+).

The bootstrap script that the command writes calls :func:`start` in the target's main thread,
between two of its bytecodes. :func:`start` must hand the thread back at once and never raise
into it: it turns a :class:`~lineprofiler.lines.profiler.LineProfiler` on (``sys.monitoring`` is
process-wide: threads already running are recorded too), starts one daemon thread that waits for
the window to end, and returns. That thread then turns the profiler off (the tool id is freed),
writes the line-stats file into the attach folder (a new file renamed into place), and ends.
Nothing else is left behind: the exit hook that saves the window when the process ends first is
cancelled once it is saved, and the fork hook does nothing outside a window.

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
from .profiler import LineProfiler
from .saved import document_from_stats, host_name, process_info

__all__ = ["LABEL", "REQUEST_TAKEN", "RESULT_NAME", "STATUS_NAME", "THREAD_NAME", "start"]

#: Names inside the attach folder (the command reads the same constants).
REQUEST_TAKEN = "request.taken"
STATUS_NAME = "status.json"
RESULT_NAME = "lines.json"
#: The daemon thread that closes the window.
THREAD_NAME = "lineprofiler-attach"
#: The saved file's ``process.label``.
LABEL = "attached"

# The window open in this process, for the fork hook; None outside a window.
_open_window: _Window | None = None
_fork_hook_registered = False


def write_json(path: str, document: dict[str, Any]) -> None:
    """``document`` at ``path``, whole or not at all: a new file renamed over it."""
    partial = f"{path}.{os.getpid()}.part"
    with open(partial, "w", encoding="utf-8") as stream:
        json.dump(document, stream)
    os.replace(partial, path)


def _say(folder: str, state: str, **fields: Any) -> None:
    try:
        write_json(os.path.join(folder, STATUS_NAME), {"state": state, "pid": os.getpid(), **fields})
    except OSError:
        pass  # the command times out and says it heard nothing


class _Window:
    """One attach window: the profiler, the thread that ends it, and the exit hook that saves it
    if the process ends first."""

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
        self._thread = threading.Thread(target=self._wait_then_close, name=THREAD_NAME, daemon=True)
        #: What the ``started`` status says, said again with ``saved`` (which may replace it first).
        self.facts: dict[str, Any] = {}

    def open(self) -> None:
        """RuntimeError when another profiler records or every tool id is taken; ValueError for
        a project folder that does not exist here. Nothing is left on when it raises."""
        global _open_window
        self.profiler.enable()
        try:
            _lifecycle.at_exit(self._at_exit)
            _open_window = self
            self._thread.start()
        except BaseException:
            _open_window = None
            _lifecycle.cancel_at_exit(self._at_exit)
            self.profiler.stop_recording()
            raise

    def _wait_then_close(self) -> None:
        self._wake.wait(self.duration_s)
        self.close("stopped")

    def _at_exit(self) -> None:
        self._wake.set()
        self.close("exited")

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
            stats = self.profiler.collect_stats(errors)
            process = process_info(status, start_unix_ns=self.profiler.created_unix_ns, label=LABEL)
            document = document_from_stats(stats, process=process, profile=self.profiler.profile_info(), errors=errors)
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


def start(folder: str) -> None:
    """Open the window the request in ``folder`` asks for, and return at once. Never raises:
    what goes wrong is written to ``status.json`` for the command to say."""
    global _fork_hook_registered
    try:
        with open(os.path.join(folder, REQUEST_TAKEN), encoding="utf-8") as stream:
            request = json.load(stream)
        if _open_window is not None:
            raise RuntimeError("another lineprofiler attach is recording in this process: wait for its window to end")
        window = _Window(folder, request)
        if not _fork_hook_registered:
            # Forever (a fork hook cannot be removed), and a no-op outside a window.
            _lifecycle.at_fork(after_in_child=_after_fork_in_child)
            _fork_hook_registered = True
        window.facts = {
            "python": ".".join(map(str, sys.version_info[:3])),
            "executable": sys.executable,
            "host": host_name(),
            "project_folder": str(window.profiler.project_folder),
            "threads": threading.active_count(),
            "started_unix_ns": time.time_ns(),
        }
        window.open()
    except Exception as error:
        _say(folder, "failed", reason="start", error=f"{type(error).__name__}: {error}")
        return
    # Under the window's lock: its end, if already there, writes "saved" after this, not before.
    with window.lock:
        if not window.closed:
            _say(folder, "started", **window.facts)
