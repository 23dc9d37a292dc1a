"""``Profiler(line_sampling=0.02)``: exact line stats in short windows spread over the whole run.

A thread of the profiler switches the C line tracer on for :data:`WINDOW_S` at a time, with
gaps drawn at random so that the windows cover about ``fraction`` of the process's wall time
and no periodic loop of the program is aliased (each cycle of a gap and a window uniform in 0.5
to 1.5 times ``WINDOW_S / fraction``).
Between windows nothing is hooked: on 3.12+ the tool id is given back, so no ``sys.monitoring``
event is delivered; on 3.11 no trace function is installed. Inside a window every line of the
project is recorded exactly (hits, time, self time), keyed by the accounting phase open on its
thread when the line starts (the tracer reads the thread's phase slot that ``_phases``
publishes: :meth:`~lineprofiler.LineProfiler.follow_phases`), so memory is bounded by
:data:`MAX_PHASES` phase paths times the project's lines.

The window length comes from ``benchmarks/bench_line_sampling.py``: one switch on and off costs
about 45 us of CPU on 3.12 (a tool id, callbacks and events taken and given back, and the code
run next re-instrumented) and 2 us on 3.11 (a trace function on every thread), so at 10 ms
windows the switches are under 0.01 % of the run at 0.02. Windows are not shorter because a busy
program hands the GIL to this thread only every switch interval (5 ms): a shorter window could
not be closed on time. Its end is timed with the GIL released (``LineProfiler.pause_after``), so
the wait for the GIL is not billed to the line the program stood at.

It steps aside for the program's own line profiling: a :class:`~lineprofiler.LineProfiler` the
program enables, or a ``backend="lines"`` window opening, stops an open sample window (the
sampler's profiler is a background one, see ``LineProfiler.make_background``), and a window
due while one of them records is skipped and counted. So is one due, on 3.11, while any thread
runs another tool's trace function (coverage.py, a debugger): a window would replace it for
10 ms, and that tool would miss the lines run meanwhile (3.12+ tools each have their own
``sys.monitoring`` id and see every line). Nothing here raises into the program:
a failure stops sampling and is the section's ``error``. After :meth:`close` nothing is hooked.

What it writes is the worker file's ``line_sampling`` section (:meth:`LineSampling.section`, schema in
:mod:`lineprofiler.runfiles.linesampling`), at every snapshot; and, after each window that
recorded a line, the same section to the live copy beside the worker file, so that a SIGKILL
or the OOM killer between snapshots loses only the windows since the last copy. The copy is
written by this thread between windows, and never more often than keeps its CPU time under
:data:`LIVE_COPY_BUDGET` of the wall time (a large section is copied less often, not at more
cost).
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import TYPE_CHECKING, Any

from ..lines import _tracer
from . import _phases
from ._options import ENV_LINE_SAMPLING

if TYPE_CHECKING:
    from ..lines.stats import FileText
    from ._surfaces import WindowOwner

#: How long each window stays open.
WINDOW_S = 0.010
#: Distinct phase paths keyed apart; later ones share the section's "(other phases)".
MAX_PHASES = 512
#: Lines kept per phase in the worker file, the most self time first, and in all (the phases
#: with the most time first), so a snapshot stays small whatever the program's phases.
MAX_LINES_PER_PHASE = 200
MAX_LINES = 5000
#: The live copy's CPU time (collecting, encoding, writing) as a share of the wall time, at
#: most: after a copy that took t, the next waits t / LIVE_COPY_BUDGET (0.2 ms: 0.4 s).
LIVE_COPY_BUDGET = 0.0005
#: After a copy failed, the next try waits this long.
COPY_RETRY_S = 10.0

__all__ = ["LineSampling"]


class LineSampling:
    """The sampled line windows of one process: an attachment of its accounting profiler."""

    def __init__(
        self,
        fraction: float,
        project: str | None = None,
        *,
        window_s: float = WINDOW_S,
        owner: WindowOwner | None = None,
    ) -> None:
        from ..lines.profiler import LineProfiler
        from .windows.lines_window import project_folder

        self.fraction = fraction
        self.window_s = window_s
        self.project = project_folder(project)
        self._owner = owner  # its worker file names the live copy; None: no live copy
        self._profiler = LineProfiler(self.project)
        self._profiler.make_background()
        self._profiler.follow_phases(_phases, MAX_PHASES)
        os.environ[ENV_LINE_SAMPLING] = repr(fraction)  # children started by this process sample too
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reset()

    def _reset(self) -> None:
        self._random = random.Random(os.urandom(8))
        self.windows = 0
        self.skipped = 0
        self.error: str | None = None
        self._open = False
        self._since_ns = time.monotonic_ns()
        # The live copy: the phases' windows it holds, when the next may be written, and what
        # the copies cost (benchmarks/bench_sampled_live_copy.py reads them).
        self._copied_windows = 0
        self._copy_texts: dict[str, FileText] = {}  # the project's files as first read: not read again per copy
        self._next_copy = 0.0
        self.copies = 0
        self.copy_cpu_ns = 0
        self.copy_error: str | None = None

    # ---- the windows ----

    def _run(self) -> None:
        # Each cycle (a gap, then a window) lasts window_s / fraction on average, jittered, so
        # the windows' recorded time is `fraction` of the wall time. Waiting for the GIL to
        # open and to close a window is part of the cycle, not of the window: lines are recorded
        # from the opening to pause_after's mark, and after the mark the tracer disables each
        # location it is called at, so the wait to close costs the program next to nothing.
        stop = self._stop
        busy_s = 0.0
        while not stop.wait(max(0.0, self.window_s / self.fraction * self._random.uniform(0.5, 1.5) - busy_s)):
            started = time.monotonic()
            if self._open_window():
                self._profiler.pause_after(self.window_s)  # the lines end on time, however late the GIL comes
                self._close_window()
                self._write_live_copy()
            busy_s = time.monotonic() - started

    def _open_window(self) -> bool:
        with self._lock:
            if self._stop.is_set() or self.error is not None:
                return False
            if _tracer.foreign_trace_function():  # 3.11: a window would suspend coverage's or a debugger's
                self.skipped += 1
                return False
            try:
                self._profiler.enable()
            except RuntimeError:  # the program's own LineProfiler records, or no tool id is free
                self.skipped += 1
                return False
            except Exception as error:
                self._fail(error)
                return False
            self._open = True
            self.windows += 1
            return True

    def _close_window(self) -> None:
        with self._lock:
            if self._open:
                self._open = False
                self._profiler.stop_recording()  # never raises

    def _write_live_copy(self) -> None:
        """The section so far to the live copy, when a window recorded a line since the last
        copy and the budget allows. A failure (a full disk, a link planted in the run directory)
        is kept in ``copy_error`` and the copies wait a while: neither sampling nor the program
        ever sees it."""
        owner = self._owner
        if owner is None or time.monotonic() < self._next_copy:
            return
        started = 0
        try:
            from ..runfiles import workerfile  # noqa: F401  (loaded once, before a copy is timed)
            from ..runfiles.linesampling import write_live_copy

            worker_file = owner.path  # None between a fork and the child's start file
            recorded = self._profiler.phase_windows()
            if worker_file is None or recorded == self._copied_windows:
                return
            started = time.thread_time_ns()
            write_live_copy(worker_file, self.section(self._copy_texts), root=owner.run_paths.root)
            self._copied_windows = recorded
            wait_s = 0.0
        except Exception as error:
            self.copy_error = f"{type(error).__name__}: {error}"
            wait_s = COPY_RETRY_S
        cost = time.thread_time_ns() - started if started else 0
        self.copies += 1
        self.copy_cpu_ns += cost
        self._next_copy = time.monotonic() + max(cost / 1e9 / LIVE_COPY_BUDGET, wait_s)

    def _fail(self, error: BaseException) -> None:
        self.error = f"{type(error).__name__}: {error}"
        self._stop.set()

    # ---- the attachment protocol ----

    def start(self) -> None:
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._guarded_run, name="lineprofiler-line-sampling", daemon=True)
            self._thread.start()

    def _guarded_run(self) -> None:
        try:
            self._run()
        except Exception as error:  # the last guard: sampling stops, the program goes on
            self._fail(error)
        finally:
            self._close_window()

    def stop(self) -> None:
        """Sampling ends (close, exit, a signal that ends the process): nothing stays hooked."""
        self._stop.set()
        self._close_window()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)

    close = stop

    def before_fork(self) -> None:
        self._lock.acquire()  # the child copies no window half switched
        if self._open:
            self._open = False
            self._profiler.stop_recording()

    def after_fork_parent(self) -> None:
        self._lock.release()

    def after_fork_child(self) -> None:
        """A forked child samples on its own: the parent's windows and lines are forgotten."""
        self._lock = threading.Lock()
        self._profiler.reset_after_fork()
        self._reset()
        self._thread = None
        if not self._stop.is_set():
            self.start()

    def contribute(self, document: dict[str, Any]) -> None:
        document["line_sampling"] = self.section()

    # ---- the worker file's section ----

    def section(self, texts: dict[str, FileText] | None = None) -> dict[str, Any]:
        """The worker file's section; ``texts``: source lines kept from earlier calls (the live
        copy's: a snapshot reads the files afresh)."""
        from ..runfiles.linesampling import VERSION

        phases: list[dict[str, Any]] = []
        for phase_id, windows, rows in self._profiler.collect_phase_rows(texts):
            if not rows:
                continue
            rows.sort(key=lambda row: (-row[5], -row[4]))
            phases.append(
                {
                    "path": _phases.path_of(phase_id) if phase_id >= 0 else None,
                    "other": phase_id == -2,
                    "windows": windows,
                    "time_ns": sum(row[5] for row in rows),
                    "lines_total": len(rows),
                    "lines": rows[:MAX_LINES_PER_PHASE],
                }
            )
        phases.sort(key=lambda phase: -int(phase["time_ns"]))
        room = MAX_LINES
        for phase in phases:
            phase["lines"] = phase["lines"][: max(room, 0)]
            room -= len(phase["lines"])
        return {
            "version": VERSION,
            "fraction": self.fraction,
            "window_s": self.window_s,
            "windows": self.windows,
            "skipped": self.skipped,
            "sampled_ns": self._profiler.wall_time_ns,
            "wall_ns": time.monotonic_ns() - self._since_ns,
            "project_folder": str(self.project),
            "clock": self._profiler.clock,
            "error": self.error,
            "phases": phases,
        }
