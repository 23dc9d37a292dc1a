"""The torch and VizTracer window: a heavy profiler for a bounded window, writing a trace
(``backend="torch" | "viztracer"``).

``Profiler(run_dir=..., backend="torch", backend_window=(100, 110), window_phase="iteration")``
starts torch.profiler on the 100th entry into a phase whose leaf name is ``iteration`` and stops
it on the 110th, writing a Chrome trace. :class:`Window` is the piece that does it; the
profiler wires it:

* ``set_watch(window.watch_name, window.on_entry)``: the core calls ``on_entry(n)`` on the n-th
  entry (from 1) into that phase in this process;
* the window is an attachment (``stop``, ``after_fork_child``, ``contribute``, ``close``);
* :func:`annotate_hooks` gives the ``set_annotate`` pair, so the phases entered while the window
  is open appear in its trace by name (a ``record_function`` per phase for torch, a complete
  event per phase for viztracer), combined with the :class:`~.gpu.Annotator` of
  ``annotate=True`` when there is one.

Artifacts, one per process so that several processes never collide::

    <run_dir>/backend/torch_trace_<host>_<pid>.json     (Chrome trace: chrome://tracing, Perfetto)
    <run_dir>/backend/viztracer_<host>_<pid>.json       (open with vizviewer)

Each is written to a temporary name in a private folder and renamed (:func:`.layout.staged`), so
a reader never sees half a trace and no link under the run directory is followed. When the
package is missing the window is a no-op whose :attr:`Window.unavailable_reason` says why (the
profiler records it in metadata.json); when starting or saving fails, the window records the
error and stops trying. Nothing here raises into the user's code after construction.

One backend at a time, by design: torch.profiler, VizTracer, cProfile and the line layer all
want the interpreter's profiling hooks.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...runfiles import layout
from .. import capabilities
from . import Backend
from .window_state import WindowState

__all__ = ["Window", "annotate_hooks", "artifact_name"]

_ARTIFACT_STEMS = {Backend.TORCH: "torch_trace", Backend.VIZTRACER: "viztracer"}


def artifact_name(backend: Backend, host: str, pid: int) -> str:
    """The per-process file name of a window's artifact (host and pid: unique within a run)."""
    return layout.artifact_name(_ARTIFACT_STEMS[backend], host, pid)


class Window(WindowState):
    """One heavy-profiler window in this process.

    States: ``"unavailable"`` (package missing: never starts), ``"waiting"``, ``"active"``,
    ``"done"`` (artifact written), ``"failed"`` (start or save raised; ``error`` says what).

    Construction raises only for bad arguments, with the profiler's own checks: TypeError for a
    wrong type, ValueError for an unknown backend, a window that is not ``1 <= start < stop`` or
    a phase name that is empty or holds a ``/``. Those are the caller's mistakes; a missing
    package is a state, not an error.
    """

    def __init__(
        self,
        backend: Backend | str,
        run_dir: layout.RunPaths | str | os.PathLike[str],
        window: tuple[int, int],
        phase: str,
        *,
        host: str | None = None,
        options: Mapping[str, Any] | None = None,
        record_phases: bool = True,
    ) -> None:
        parsed = Backend.parse(backend)
        if parsed is None:
            raise ValueError("a window needs a backend")
        if parsed is Backend.LINES:
            raise ValueError("backend='lines' runs in a lines_window.LinesWindow, not a Window")
        self.backend = parsed
        self.backend_name = parsed.value
        self._init_state(layout.RunPaths.of(run_dir), window, phase)
        self._host = host
        self.options = dict(options or {})
        #: Whether enter/exit put phase names into the trace; off when an Annotator already does
        #: it for torch (its record_function lands in the same trace).
        self.record_phases = record_phases
        # An Annotator whose record_function, once torch is imported, lands in this window's torch
        # trace: while it is active the window adds none of its own (see annotate_hooks).
        self._covered_by: Any = None
        self._local = threading.local()
        # Bumped when a window stops: per-thread stacks holding the stopped profiler's ranges are
        # dropped at their thread's next enter instead of being closed into a dead profiler.
        self._generation = 0
        self._profiler: Any = None
        self._active = False  # the one check enter/exit make outside the window
        self._last_enter: str | None = None
        self._pid = os.getpid()
        capability = capabilities.torch() if parsed is Backend.TORCH else capabilities.viztracer()
        if not capability.available:
            self.unavailable_reason = capability.unavailable_reason or f"{parsed.value} is unavailable"
            self.state = "unavailable"

    # ---- where the artifact goes ----

    @property
    def host(self) -> str:
        if self._host is None:
            self._host = socket.gethostname()
        return self._host

    def artifact_path(self) -> Path:
        return self.paths.artifact(_ARTIFACT_STEMS[self.backend], self.host, os.getpid())

    # ---- the watch callback ----

    def on_entry(self, n: int) -> None:
        """The core's watch callback: ``n`` counts entries into :attr:`watch_name` from 1."""
        try:
            if n == self.start_at and self.state == "waiting":
                self._start(n)
            elif n >= self.stop_at and self.state == "active":
                self._stop(n)
        except Exception as error:  # _start/_stop catch their own; this is the last guard
            self._fail(error)

    __call__ = on_entry

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            self._active = False
            self.state = "failed"
            self.error = f"{error.__class__.__name__}: {error}"
            self._profiler = None

    def _start(self, n: int) -> None:
        with self._lock:
            if self.state != "waiting":
                return
            try:
                if self.backend is Backend.TORCH:
                    self._profiler = self._start_torch()
                else:
                    self._profiler = self._start_viztracer()
            except Exception as error:
                self._fail(error)
                return
            self.state = "active"
            self._active = True
            self.started_unix_ns = time.time_ns()
            self.started_entry = n
        self._open_triggering_phase()

    def _start_torch(self) -> Any:
        import torch.profiler

        activities = [torch.profiler.ProfilerActivity.CPU]
        # CUDA activity only where the user's process already runs CUDA: asking torch whether
        # CUDA is available would initialise it.
        if torch.cuda._is_compiled() and torch.cuda.is_initialized():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        options = {"activities": activities, **self.options}
        profiler = torch.profiler.profile(**options)
        profiler.start()
        return profiler

    def _start_viztracer(self) -> Any:
        from viztracer import VizTracer

        # register_global=False: the user's own global VizTracer, if any, stays theirs.
        # file_info=False: no copies of source files inside the artifact, so it stays small.
        # exclude_files: the profiler's own hook code is not the user's program.
        options: dict[str, Any] = {"verbose": 0, "register_global": False, "file_info": False}
        if "include_files" not in self.options:
            options["exclude_files"] = [str(Path(__file__).resolve().parents[1])]
        options.update(self.options)
        tracer = VizTracer(**options)
        tracer.start()
        return tracer

    def _stop(self, n: int | None, *, truncated: bool = False) -> None:
        with self._lock:
            if self.state != "active":
                return
            profiler = self._profiler
            self._close_open_phases()
            self._active = False
            self._profiler = None
            self._generation += 1
            self.stopped_unix_ns = time.time_ns()
            self.stopped_entry = n
            self.truncated = truncated
            target = self.artifact_path()
            notes: list[str] = []
            try:
                profiler.stop()
                try:
                    # Written under a private name reached through a folder descriptor, then
                    # renamed: the tool never follows a link planted under the run directory.
                    with layout.staged(target, root=self.run_dir, notes=notes) as where:
                        if self.backend is Backend.TORCH:
                            profiler.export_chrome_trace(where)
                        else:
                            profiler.save(output_file=where)
                finally:
                    if self.backend is Backend.VIZTRACER:
                        profiler.clear()
            except Exception as error:
                self._fail(error)
                return
            self.artifact = target
            self.state = "done"
            self.error = "; ".join(notes) or None

    # ---- phase names inside the trace ----

    def _stack(self) -> list[list[Any]]:
        local = self._local
        if getattr(local, "generation", None) != self._generation:
            local.generation = self._generation
            local.stack = []
        stack: list[list[Any]] = local.stack
        return stack

    def enter(self, name: str) -> None:
        """Annotate hook: opens a range for ``name`` in the trace while the window is active.

        Outside the window it only notes the name (an attribute store): the hook is installed
        for the whole run, and every phase of the process calls it.
        """
        if not self._active:
            self._last_enter = name
            return
        self._last_enter = name
        event = self._open(name) if self._records() else None
        self._stack().append([name, event])

    def _records(self) -> bool:
        covered = self._covered_by
        return self.record_phases and not (covered is not None and covered.record_function_active)

    def exit(self, name: str) -> None:
        self._last_enter = None
        if not self._active:
            return
        stack = self._stack()
        for index in range(len(stack) - 1, -1, -1):
            if stack[index][0] == name:
                break
        else:
            return  # entered before the window opened
        while len(stack) > index:
            _, event = stack.pop()
            if event is not None:
                self._close(event)

    def _open_triggering_phase(self) -> None:
        """Open the range of the entry that started the window, if its enter already ran.

        The core calls the watch callback before the annotate hook, so the start-th entry's
        enter comes after the start; were the order reversed, this still puts that entry's phase
        in the trace. (The name is kept per window, not per thread: only that order and a phase
        entered by another thread in between could confuse it, costing one range.)
        """
        if self._records() and self._last_enter == self.watch_name:
            self._stack().append([self.watch_name, self._open(self.watch_name)])

    def _open(self, name: str) -> Any:
        profiler = self._profiler
        try:
            if self.backend is Backend.TORCH:
                import torch.autograd.profiler

                rf = torch.autograd.profiler.record_function(name)
                rf.__enter__()
                return ("rf", rf)
            return ("viz", profiler, name, profiler.getts())
        except Exception:
            return None

    def _close(self, event: Any) -> None:
        try:
            if event[0] == "rf":
                event[1].__exit__(None, None, None)
            else:
                _, tracer, name, start = event
                if tracer is self._profiler:
                    duration = tracer.getts() - start
                    tracer.add_raw({"ph": "X", "name": name, "ts": start, "dur": duration, "cat": "lineprofiler.phase"})
        except Exception:
            pass

    def _close_open_phases(self) -> None:
        # Ranges still open when the window closes end at the stop: for torch, a record_function
        # must end while its profiler is running. Only the stopping thread's ranges are closed
        # here; other threads' stacks are dropped when they next enter (the generation changes).
        if getattr(self._local, "generation", None) != self._generation:
            return
        stack = self._local.stack
        for entry in reversed(stack):
            if entry[1] is not None:
                self._close(entry[1])
        stack.clear()

    # ---- the attachment protocol ----

    def stop(self) -> None:
        """The profiler stops: an active window is cut short and written, marked truncated."""
        try:
            self._stop(None, truncated=True)
        except Exception as error:
            self._fail(error)

    close = stop

    def after_fork_child(self) -> None:
        """A forked child starts its own count; the parent's running profiler is not its own."""
        was_active = self.state == "active"
        self._forget_after_fork()
        self._local = threading.local()
        self._active = False
        self._last_enter = None
        profiler, self._profiler = self._profiler, None
        if was_active and self.backend is Backend.VIZTRACER and profiler is not None:
            # VizTracer's hooks were copied into the child's thread: switch them off and drop the
            # copied buffer. torch's profiler is left alone: its state belongs to the parent.
            try:
                profiler.stop()
                profiler.clear()
            except Exception:
                pass
        self._pid = os.getpid()


Hook = Callable[[str], None]


def annotate_hooks(annotator: Any | None, window: Window | None) -> tuple[Hook | None, Hook | None]:
    """The ``(enter, exit)`` pair for the core's ``set_annotate``, or ``(None, None)``.

    ``annotator`` is the :class:`~.gpu.Annotator` of ``annotate=True`` (or None); ``window`` the
    backend window (or None). When both would put a record_function into the same torch trace,
    the window leaves it to the annotator. Exit runs in the reverse order of enter.
    """
    if window is not None and window.state == "unavailable":
        window = None
    if window is not None and window.backend is Backend.TORCH and annotator is not None:
        window.record_phases = not getattr(annotator, "record_function_active", False)
        if not window.record_phases:
            window = None
        else:
            # torch is not imported yet: the annotator's record_function may start later, and
            # from then on the window must not add a second range per phase.
            window._covered_by = annotator
    if annotator is None and window is None:
        return None, None
    if window is None:
        assert annotator is not None
        return annotator.enter, annotator.exit
    if annotator is None:
        return window.enter, window.exit
    a_enter, a_exit, w_enter, w_exit = annotator.enter, annotator.exit, window.enter, window.exit

    def enter(name: str) -> None:
        a_enter(name)
        w_enter(name)

    def exit(name: str) -> None:
        w_exit(name)
        a_exit(name)

    return enter, exit
