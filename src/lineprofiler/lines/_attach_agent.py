"""What ``lineprofiler attach`` runs inside its target, by ``sys.remote_exec`` (3.14+).

The bootstrap script that the command writes runs in the target's main thread, between two of its
bytecodes, and must hand the thread back at once: it starts one daemon thread
(``lineprofiler-attach``) and returns. That thread imports lineprofiler (the slow part, a pause
the main thread would otherwise take) and calls :func:`run`, which turns a
:class:`~lineprofiler.lines.profiler.LineProfiler` on (``sys.monitoring`` is process-wide: the
threads already running, the main thread included, are recorded from the line they are at),
starts the window's timer and ends. The timer, a thread (``lineprofiler-attach-window``), waits
for the window's end, turns the profiler off (the tool id is freed), writes the line-stats file
into the attach folder (a new file renamed into place) and ends.

No thread of ours is alive when the program forks: ``os.fork()`` warns, in the program's own
output, when the process has other threads than the one that forks. Before a fork the window's
timer is ended (and the kernel has stopped counting it), and started again in the parent after, to
the same end; in the child the profiler is turned off. A fork while the starting thread still
imports waits for it to be done, where it would be the process's only other thread (the
bootstrap's fork hook; where the program has threads of its own, the fork warns without us).

Nothing else is left behind: the exit hook that saves the window when the process ends first is
cancelled once it is saved, and the fork hooks (which Python cannot remove) do nothing outside a
window. Nothing here raises into the target or prints in it.

What the command and the target say to each other goes through files of the attach folder, each
written whole or renamed: ``request.json`` (the settings), which the bootstrap renames to
``request.taken`` when it runs, and :func:`run` (or the bootstrap, to say the import failed) to
``request.claimed`` before it turns the profiler on. The command cancels by renaming
``request.json`` or ``request.taken`` to ``request.cancelled``: one rename of each pair wins, so a
request is either cancelled (and the target, when it gets to it, turns nothing on and removes the
folder) or claimed (and the command waits for the start). ``status.json`` says ``started``,
``failed`` or ``saved``.
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

__all__ = [
    "CANCELLED_NAME",
    "CLAIMED_NAME",
    "LABEL",
    "REQUEST_NAME",
    "REQUEST_TAKEN",
    "RESULT_NAME",
    "SCRIPT_NAME",
    "STATUS_NAME",
    "THREAD_NAME",
    "WINDOW_THREAD_NAME",
    "before_fork",
    "run",
]

#: Names inside the attach folder (the command reads the same constants).
REQUEST_NAME = "request.json"
REQUEST_TAKEN = "request.taken"
CLAIMED_NAME = "request.claimed"
CANCELLED_NAME = "request.cancelled"
SCRIPT_NAME = "attach.py"
STATUS_NAME = "status.json"
RESULT_NAME = "lines.json"
#: The thread the bootstrap starts, which imports lineprofiler and calls run(), then ends.
THREAD_NAME = "lineprofiler-attach"
#: The window's timer, which closes it (named so that the bootstrap, which counts both, finds it too).
WINDOW_THREAD_NAME = THREAD_NAME + "-window"
#: The saved file's ``process.label``.
LABEL = "attached"
#: How long a fork waits for the timer's thread to end (one closing the window saves it first):
#: a bound, so that nothing of ours can hold a fork up for good.
_FORK_WAITS_FOR_TIMER_S = 10.0
#: How long a fork waits, after the timer's thread is joined, for the kernel to stop counting it.
_THREAD_GONE_WAIT_S = 0.5

# The window open in this process, for the fork hooks; None outside a window.
_open_window: _Window | None = None
_fork_hooks_registered = False
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


def _claim(folder: str) -> bool:
    """The request is ours to answer; False when the command cancelled it first (and has gone,
    leaving the folder to us: it is removed)."""
    try:
        os.rename(os.path.join(folder, REQUEST_TAKEN), os.path.join(folder, CLAIMED_NAME))
    except OSError:
        for name in (CANCELLED_NAME, SCRIPT_NAME):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass
        try:
            os.rmdir(folder)
        except OSError:
            pass
        return False
    return True


def _wait_until_gone(native_id: int | None) -> None:
    """Until the kernel no longer lists the thread ``native_id``. ``Thread.join()`` returns when
    the thread has left, a moment before the kernel stops counting it in the process's threads,
    which is what ``os.fork()`` counts to decide whether to warn."""
    if native_id is None:
        return
    task = f"/proc/self/task/{native_id}"
    deadline = time.monotonic() + _THREAD_GONE_WAIT_S
    while os.path.exists(task) and time.monotonic() < deadline:
        time.sleep(0.0005)


class _Timer:
    """One run of the window's timer thread: until the window's end, or until told to step aside.
    It holds its window only while it runs."""

    def __init__(self, window: _Window) -> None:
        self.window: _Window | None = window
        self.aside = threading.Event()
        self.thread = threading.Thread(target=self._wait, name=WINDOW_THREAD_NAME, daemon=True)

    def _wait(self) -> None:
        try:
            window = self.window
            if window is not None and not self.aside.wait(max(0.0, window.deadline - time.monotonic())):
                window.close("stopped")
        finally:
            self.window = None


# The timer threads that may still be alive (the one of the open window; one that has just closed
# its window and is ending), for the fork hooks.
_timers: list[_Timer] = []
_timers_lock = threading.Lock()


def _start_timer(window: _Window) -> None:
    """A timer for ``window``, unless it is closed or has one; when no thread can be started, the
    window closes now (its file says how long it was)."""
    with _timers_lock:
        if window.closed or any(timer.window is window for timer in _timers):
            return
        _timers[:] = [timer for timer in _timers if timer.thread.is_alive()]
        timer = _Timer(window)
        try:
            timer.thread.start()
        except Exception:  # no thread to be had
            started = False
        else:
            _timers.append(timer)
            started = True
    if not started:
        window.close("stopped")


class _Window:
    """One attach window: the profiler, and the exit hook that saves it if the process ends first
    (its timer closes it otherwise)."""

    def __init__(self, folder: str, request: dict[str, Any]) -> None:
        self.folder = folder
        self.duration_s = float(request["duration_s"])
        self.deadline = 0.0  # on the monotonic clock, once it opens
        self.profiler = LineProfiler(
            request.get("project_folder") or None,
            include=request.get("include") or None,
            exclude=request.get("exclude") or None,
        )
        # The program's own LineProfiler, if it turns one on, records instead of this one.
        self.profiler.make_background()
        self.lock = threading.Lock()
        self.closed = False
        #: What the ``started`` status says, said again with ``saved`` (which may replace it first).
        self.facts: dict[str, Any] = {}

    def open(self) -> None:
        """RuntimeError when another profiler records or every tool id is taken; ValueError for
        a project folder that does not exist here. Nothing is left on when it raises."""
        global _open_window
        # The exit hook first: a program that ends as soon as it sees the profiler on (before
        # the timer runs) must still save what it recorded.
        _lifecycle.at_exit(self._at_exit)
        try:
            self.profiler.enable()
        except BaseException:
            _lifecycle.cancel_at_exit(self._at_exit)
            raise
        self.deadline = time.monotonic() + self.duration_s
        _open_window = self

    def _at_exit(self) -> None:
        self.close("exited")
        with _timers_lock:  # after: woken first, the timer would save the window as "stopped"
            for timer in _timers:
                if timer.window is self:
                    timer.aside.set()

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
        # The child has the profiler but not the window's timer: off, and forgotten.
        global _open_window
        _open_window = None
        self.closed = True
        self.profiler.reset_after_fork()
        _lifecycle.cancel_at_exit(self._at_exit)


def before_fork() -> None:
    """The timer threads end before the fork, so that the process forks with the threads it had
    without us (``os.fork()`` warns when there are others); one that is closing its window ends
    once the window is saved. :func:`_after_fork_in_parent` starts the open window's again."""
    with _timers_lock:
        mine = [timer for timer in _timers if timer.thread is threading.current_thread()]
        timers = [timer for timer in _timers if timer not in mine]
        _timers[:] = mine
    for timer in timers:
        timer.aside.set()
    for timer in timers:
        timer.thread.join(_FORK_WAITS_FOR_TIMER_S)
        _wait_until_gone(timer.thread.native_id)


def _after_fork_in_parent() -> None:
    window = _open_window
    if window is not None:
        _start_timer(window)


def _after_fork_in_child() -> None:
    global _opening, _timers_lock
    # Copies of locks a thread the child does not have may hold; no timer thread came along.
    _opening = threading.Lock()
    _timers_lock = threading.Lock()
    _timers.clear()
    window = _open_window
    if window is not None:
        window.after_fork_in_child()


def run(folder: str) -> None:
    """Open the window the request in ``folder`` asks for and start its timer; returns at once
    (the timer closes and saves the window). Never raises: what goes wrong is written to
    ``status.json`` for the command, unless it cancelled the request, which leaves nothing."""
    global _fork_hooks_registered
    try:
        with open(os.path.join(folder, REQUEST_TAKEN), encoding="utf-8") as stream:
            request = json.load(stream)
        window = _Window(folder, request)
        window.facts = {
            "python": ".".join(map(str, sys.version_info[:3])),
            "executable": sys.executable,
            "host": host_name(),
            "project_folder": str(window.profiler.project_folder),
            "threads": threading.active_count() - 1,  # the program's: this one is the bootstrap's
            "started_unix_ns": time.time_ns(),
        }
    except Exception as error:
        if _claim(folder):
            _say(folder, "failed", reason="start", error=f"{type(error).__name__}: {error}")
        return
    with _opening:
        if not _claim(folder):
            return
        try:
            if _open_window is not None:
                raise RuntimeError("another lineprofiler attach is recording in this process: wait for its end")
            if not _fork_hooks_registered:
                # Forever (a fork hook cannot be removed), and no-ops outside a window.
                _lifecycle.at_fork(
                    before=before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
                )
                _fork_hooks_registered = True
            window.open()
        except Exception as error:
            _say(folder, "failed", reason="start", error=f"{type(error).__name__}: {error}")
            return
    # Under the window's lock: an exit that closed it already has written "saved", kept.
    with window.lock:
        if not window.closed:
            _say(folder, "started", **window.facts)
    _start_timer(window)
