"""LineProfiler: the Python face of the C line tracer.

How it hooks in:

- 3.12+: ``sys.monitoring``. It takes ``PROFILER_ID`` (2), or the first free id after it, for the
  time it is enabled, registers the C callables of ``_tracer`` for LINE, PY_RESUME, PY_RETURN,
  PY_YIELD, PY_UNWIND and PY_THROW, and on 3.13+ PY_START (3.12 enters a frame at its first
  LINE event), and gives everything back on disable: events off, callbacks unregistered, then
  ``free_tool_id``. That order is correct whether ``free_tool_id`` leaves the callbacks alone
  (3.12, 3.13) or clears them too (3.14). Other tools' ids, events and callbacks are never
  touched.
- 3.11: a C trace function on every thread of the interpreter, plus ``threading.settrace`` for
  threads started while enabled; what it replaced is put back on disable.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO

from . import _tracer
from .project import ProjectFilter, find_project_root
from .render import check_options, render_global, render_stats
from .stats import FunctionStats, LineStats, StatsKey

__all__ = ["LineProfiler", "TracerError", "TOOL_NAME"]

#: The name this profiler registers with sys.monitoring.use_tool_id().
TOOL_NAME = "lineprofiler"

# Tool ids in the order we try them: PROFILER_ID first, then the unassigned ones, then the ids
# other kinds of tools expect (debugger, optimizer), coverage's last of all.
_TOOL_ORDER = (2, 3, 4, 5, 0, 1)
_HOOK_EVENTS = (
    ("line", "LINE"),
    # 3.12 emits LINE for the first line of every frame, where the tracer pushes the frame; 3.13
    # does not when that line is the line of the frame's RESUME, unless PY_START is on.
    *((("start", "PY_START"),) if sys.version_info >= (3, 13) else ()),
    ("resume", "PY_RESUME"),
    ("return", "PY_RETURN"),
    ("yield", "PY_YIELD"),
    ("unwind", "PY_UNWIND"),
    ("throw", "PY_THROW"),
)


class TracerError(RuntimeError):
    """The tracer met an error inside a callback and stopped recording; ``__cause__`` is the
    original. What was recorded before it is kept and get_stats() still returns it."""


def _acquire_tool_id() -> int:
    mon = sys.monitoring
    for tool in _TOOL_ORDER:
        if mon.get_tool(tool) is None:
            try:
                mon.use_tool_id(tool, TOOL_NAME)
            except ValueError:  # taken between the two calls
                continue
            return tool
    holders = ", ".join(f"{tool}: {mon.get_tool(tool)!r}" for tool in range(6))
    raise RuntimeError(
        f"lineprofiler: every sys.monitoring tool id is taken ({holders}); "
        "free one (sys.monitoring.free_tool_id) before enabling the profiler"
    )


def _release_tool_id(tool: int, events: Iterable[int]) -> None:
    mon = sys.monitoring
    if mon.get_tool(tool) != TOOL_NAME:
        return  # someone freed and re-took it: it is not ours to clean
    mon.set_events(tool, 0)
    for event in events:
        mon.register_callback(tool, event, None)
    mon.free_tool_id(tool)


class LineProfiler:
    """Hits and time per line, for the code of one project folder.

    ``project_folder`` (default: the git work tree holding the current directory, else the
    current directory) is resolved with symlinks followed; a folder that does not exist is a
    ``ValueError``. Inside it, virtual environments, ``site-packages``, ``build/``, ``.git/`` and
    the like are left out (see ``lineprofiler.lines.project.DEFAULT_EXCLUDES``); ``include=`` and
    ``exclude=`` globs adjust that, include winning over exclude.

    Enable it with ``with profiler:`` (re-entrant) or ``enable()``/``disable()``, which nest the
    same way: recording stops when every enable has been matched by a disable. Only one
    LineProfiler records at a time in a process: enabling a second one while another is enabled
    raises ``RuntimeError``.
    """

    def __init__(
        self,
        project_folder: str | os.PathLike[str] | None = None,
        *,
        include: str | Iterable[str] | None = None,
        exclude: str | Iterable[str] | None = None,
    ) -> None:
        folder = find_project_root() if project_folder is None else project_folder
        self._filter = ProjectFilter(folder, include=include, exclude=exclude)
        self._tracer = _tracer.Tracer(self._filter)
        self._lock = threading.RLock()
        self._depth = 0
        self._tool: int | None = None
        self._events: tuple[int, ...] = ()
        self._hooks: list[object] = []
        self._prev_thread_trace: object = None
        self._thread_hook: object = None
        self._wall_ns = 0
        self._since: int | None = None

    def __repr__(self) -> str:
        state = "enabled" if self._depth else "disabled"
        return f"<LineProfiler {state} project_folder={str(self._filter.folder)!r}>"

    # -- what is profiled --------------------------------------------------------------------

    @property
    def project_folder(self) -> Path:
        return self._filter.folder

    @property
    def enabled(self) -> bool:
        return self._depth > 0

    @property
    def clock(self) -> str:
        """The clock behind the times: ``'tsc'`` (an invariant cycle counter scaled to ns
        against CLOCK_MONOTONIC) or ``'monotonic'``."""
        return self._tracer.clock

    def is_project_file(self, filename: str) -> bool:
        """Whether code from ``filename`` (as in ``co_filename``) would be profiled."""
        return self._filter.is_project_file(filename)

    # -- switching on and off ----------------------------------------------------------------

    def enable(self) -> None:
        """Start recording (or nest one level deeper if already enabled)."""
        with self._lock:
            if self._depth == 0:
                self._start()
            self._depth += 1

    def disable(self) -> None:
        """Undo one enable(); the last one stops recording. Does nothing when not enabled.

        Raises TracerError if the tracer met an error while recording (once; the data recorded
        before the error is kept).
        """
        with self._lock:
            if self._depth == 0:
                return
            self._depth -= 1
            if self._depth == 0:
                self._stop()
        self._raise_deferred()

    def __enter__(self) -> LineProfiler:
        self.enable()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.disable()

    def _start(self) -> None:
        tracer = self._tracer
        tracer.start()  # RuntimeError when another profiler records
        try:
            if _tracer.MONITORING:
                self._start_monitoring()
            else:
                self._prev_thread_trace = threading.gettrace()
                self._thread_hook = tracer.hook("thread")
                threading.settrace(self._thread_hook)  # type: ignore[arg-type]
        except BaseException:
            tracer.stop()
            raise
        self._since = time.perf_counter_ns()

    def _start_monitoring(self) -> None:
        mon = sys.monitoring
        tool = _acquire_tool_id()
        events = tuple(getattr(mon.events, name) for _, name in _HOOK_EVENTS)
        try:
            # A previous holder may have freed the id without unregistering (3.12 and 3.13 keep
            # callbacks across free_tool_id): the id is ours now, so start it clean.
            for name in dir(mon.events):
                value = getattr(mon.events, name)
                if name.isupper() and isinstance(value, int) and value and not value & (value - 1):
                    try:
                        mon.register_callback(tool, value, None)
                    except ValueError:  # an event a later CPython takes no callback for
                        pass
            hooks = [self._tracer.hook(kind) for kind, _ in _HOOK_EVENTS]
            for event, hook in zip(events, hooks):
                mon.register_callback(tool, event, hook)
            mask = 0
            for event in events:
                mask |= event
            mon.set_events(tool, mask)
            # DISABLE marks persist per tool id across set_events() and free_tool_id(): one
            # left by an earlier holder of this id (another profiler, or this one with other
            # settings) would hide project code from us. restart_events() re-arms them; other
            # tools just see their disabled locations once more.
            mon.restart_events()
        except BaseException:
            _release_tool_id(tool, events)
            raise
        self._tool, self._events, self._hooks = tool, events, hooks

    def _stop(self) -> None:
        tracer = self._tracer
        # Stop the tracer first: its open lines end now, not after the unhooking below (which
        # re-instruments code on 3.12+ and would be billed to the line that ends the block).
        tracer.stop()
        if self._since is not None:
            self._wall_ns += time.perf_counter_ns() - self._since
            self._since = None
        if _tracer.MONITORING:
            tool, self._tool = self._tool, None
            if tool is not None:
                _release_tool_id(tool, self._events)
            self._hooks = []
        else:
            if threading.gettrace() is self._thread_hook:  # else someone replaced it: keep theirs
                threading.settrace(self._prev_thread_trace)  # type: ignore[arg-type]
            self._prev_thread_trace = self._thread_hook = None

    def _raise_deferred(self) -> None:
        err = self._tracer.take_error()
        if err is not None:
            raise TracerError(
                f"lineprofiler stopped recording after an internal error: {err!r}; "
                "the data recorded before it is kept"
            ) from err

    # -- data --------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget everything recorded so far (also while enabled)."""
        with self._lock:
            self._tracer.clear()
            self._wall_ns = 0
            if self._since is not None:
                self._since = time.perf_counter_ns()

    #: The seed names both; they mean the same.
    reset = clear

    @property
    def wall_time_ns(self) -> int:
        """Wall time spent enabled since the last clear()."""
        with self._lock:
            extra = time.perf_counter_ns() - self._since if self._since is not None else 0
            return self._wall_ns + extra

    def get_stats(self) -> dict[StatsKey, FunctionStats]:
        """Per function of the project: ``(filename, first_lineno, qualname) -> FunctionStats``.

        Lines still open while enabled are not included until they end. Code objects that share
        a key (a function defined again, a module re-run) are added together.
        """
        self._raise_deferred()
        with self._lock:
            raw = self._tracer.collect()
        merged: dict[StatsKey, dict[int, list[int]]] = {}
        for code, lines in raw:
            key = (code.co_filename, code.co_firstlineno, code.co_qualname)
            acc = merged.setdefault(key, {})
            for lineno, hits, ns in lines:
                slot = acc.setdefault(lineno, [0, 0])
                slot[0] += hits
                slot[1] += ns
        out: dict[StatsKey, FunctionStats] = {}
        for key, acc in merged.items():
            filename = key[0]
            linecache.checkcache(filename)
            lines_out = {
                lineno: LineStats(lineno, hits, ns, _source_line(filename, lineno))
                for lineno, (hits, ns) in sorted(acc.items())
            }
            total = sum(ln.time_ns for ln in lines_out.values())
            out[key] = FunctionStats(key[0], key[1], key[2], total, lines_out)
        return out

    # -- printing ----------------------------------------------------------------------------

    def print_stats(
        self,
        min_time_us: float = 0,
        top_n_lines: int | None = None,
        sort_by: str = "time",
        file: IO[str] | None = None,
    ) -> None:
        """Per function (total time at least ``min_time_us``): file, qualname, total time, and a
        table of line, hits, time, time per hit, % of the function and source. ``sort_by`` is
        ``'time'``, ``'hits'`` or ``'line'`` and orders functions and lines; ``top_n_lines``
        keeps that many lines per function."""
        check_options(sort_by, min_time_us, top_n_lines, "top_n_lines")
        text = render_stats(
            self.get_stats(),
            min_time_us=min_time_us,
            top_n_lines=top_n_lines,
            sort_by=sort_by,
            root=self._filter.folder,
        )
        (file if file is not None else sys.stdout).write(text)

    def print_global_top_stats(
        self,
        top_n: int | None = 20,
        min_time_us: float = 0,
        sort_by: str = "time",
        file: IO[str] | None = None,
    ) -> None:
        """The top ``top_n`` lines over all functions (each at least ``min_time_us``), as
        ``file:line function``, ordered by ``sort_by`` (``'time'``, ``'hits'`` or ``'line'``)."""
        check_options(sort_by, min_time_us, top_n, "top_n")
        text = render_global(
            self.get_stats(),
            top_n=top_n,
            min_time_us=min_time_us,
            sort_by=sort_by,
            root=self._filter.folder,
            total_ns=self.wall_time_ns,
        )
        (file if file is not None else sys.stdout).write(text)


def _source_line(filename: str, lineno: int) -> str | None:
    text = linecache.getline(filename, lineno)
    if not text:
        return None
    return text.rstrip("\r\n")
