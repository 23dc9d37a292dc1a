"""LineProfiler: the Python face of the C line tracer.

How it hooks in:

- 3.12+: ``sys.monitoring``, a tool id of its own for the time it is enabled (see
  :mod:`lineprofiler.lines.monitoring`).
- 3.11: a C trace function on every thread of the interpreter, plus ``threading.settrace`` for
  threads started while enabled; what it replaced is put back on disable.

What lineprofiler's own layers use (a child's session, ``lineprofiler run``, the accounting
layer's lines window, the process endings) is the section "for lineprofiler's own layers" of
:class:`LineProfiler`, each named by a Protocol in the module that uses it; none reaches into
the profiler's private attributes. ``@profiler`` switches it through a
:class:`~lineprofiler.lines.decorate.CallSwitch`.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import ProfilerConfig
from ..runfiles import linesfile
from . import _tracer
from .decorate import CallSwitch, wrap
from .engine_names import BACKEND, ENGINE, check_choices
from .monitoring import TOOL_NAME, MonitoringHold
from .notebook import cell_globs
from .project import ProjectFilter, find_project_root
from .regions import RegionBook, RegionScope
from .render import HINT_API, PrintedProfile, render_nothing
from .saved import SavedProfile, document_from_stats, host_name, process_info
from .stats import FileText, FunctionStats, StatsKey, rows_from_records, stats_from_records

if TYPE_CHECKING:
    from .children import Session

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["LineProfiler", "TracerError", "TOOL_NAME"]


#: Where children=True writes when no output_dir is given (relative to the working directory).
DEFAULT_OUTPUT_DIR = os.path.join("profile", "lines")

# Profilers that record in the background (a child process's, the runner's) and step aside
# while one of the program's own profilers records, instead of making its enable() fail.
_YIELDING: weakref.WeakSet[LineProfiler] = weakref.WeakSet()


class TracerError(RuntimeError):
    """The tracer met an error inside a callback and stopped recording; ``__cause__`` is the
    original. What was recorded before it is kept and get_stats() still returns it."""


class LineProfiler(PrintedProfile):
    """Hits and time per line, for the code of one project folder.

    ``project_folder`` (default: the git work tree holding the current directory, else the
    current directory) is resolved with symlinks followed; a folder that does not exist is a
    ``ValueError``. Inside it, virtual environments, ``site-packages``, ``build/``, ``.git/`` and
    the like are left out (see ``lineprofiler.lines.project.DEFAULT_EXCLUDES``); ``include=`` and
    ``exclude=`` globs adjust that, include winning over exclude. ``config=`` (a project's
    ``[tool.lineprofiler]`` table: ``lineprofiler.config.get_config(folder)``) narrows it further.

    Enable it with ``with profiler:`` (re-entrant) or ``enable()``/``disable()``, which nest the
    same way: recording stops when every enable has been matched by a disable; or decorate
    functions with ``@profiler`` (on while they run). Only one LineProfiler records at a time in
    a process: enabling a second one while another is enabled raises ``RuntimeError``.

    Under IPython, the code of notebook cells is included automatically.

    ``children=True``: every Python child process started while enabled (multiprocessing with
    any start method, ``subprocess``) is line-profiled with the same settings, and each process
    (this one included) writes its own file into ``output_dir`` (default ``profile/lines``);
    ``LineProfiler.load(output_dir)`` or ``lineprofiler view`` merges them.
    """

    def __init__(
        self,
        project_folder: str | os.PathLike[str] | None = None,
        config: ProfilerConfig | None = None,  # second, as in 0.10.0
        *,
        include: str | Iterable[str] | None = None,
        exclude: str | Iterable[str] | None = None,
        children: bool = False,
        output_dir: str | os.PathLike[str] | None = None,
        backend: str | None = None,
        engine: str | None = None,
    ) -> None:
        check_choices(backend, engine)  # 0.10.0's; 0.11.0 has one engine and takes no choice
        folder = find_project_root() if project_folder is None else project_folder
        self._filter = ProjectFilter(folder, include=include, exclude=exclude, config=config)
        self._filter.include += tuple(cell_globs())
        if not isinstance(children, bool):
            raise TypeError(f"children must be True or False, not {type(children).__name__}")
        self.children = children
        self.output_dir: Path | None = None
        if output_dir is not None or children:
            chosen = output_dir if output_dir is not None else DEFAULT_OUTPUT_DIR
            self.output_dir = Path(os.path.abspath(os.fspath(chosen)))
        self._session: Session | None = None
        self._calls: CallSwitch = _Calls(self)
        self._holds = 0
        self._paused = False
        self._paused_for_me: LineProfiler | None = None
        #: Decorated calls that ran unprofiled because another LineProfiler was recording.
        self.skipped_calls = 0
        self._created_unix_ns = time.time_ns()
        self._file_id = secrets.token_hex(4)
        self._tracer = _tracer.Tracer(self._filter)
        self._regions = RegionBook(self._tracer, self._filter.stamps)
        self._lock = threading.RLock()
        self._depth = 0
        self._monitoring = MonitoringHold()
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
    def backend(self) -> str:
        """0.10.0's name for the event source: ``'monitoring'`` (3.12+) or ``'settrace'`` (3.11)."""
        return BACKEND

    @property
    def engine(self) -> str:
        """0.10.0's name for the engine: ``'builtin'`` (0.11.0's own, in C)."""
        return ENGINE

    @property
    def clock(self) -> str:
        """The clock behind the times: ``'tsc'`` (an invariant cycle counter scaled to ns
        against CLOCK_MONOTONIC) or ``'monotonic'``."""
        return self._tracer.clock

    def is_project_file(self, filename: str) -> bool:
        """Whether code from ``filename`` (as in ``co_filename``) would be profiled."""
        return self._filter.is_project_file(filename)

    def add_function(self, func: Any) -> bool:
        """Profile ``func``'s lines (and those of the code nested in it) even when its file is
        outside the project folder, as kernprof's ``add_function`` does. Call it before the
        function first runs. Returns False for an object that has no code to profile."""
        from .decorate import code_of

        code = code_of(func)
        if code is None:
            return False
        self._filter.add_code(code)
        return True

    # -- switching on and off ----------------------------------------------------------------

    def enable(self) -> None:
        """Start recording (or nest one level deeper if already enabled)."""
        with self._lock:
            if self._depth == 0:
                self._start()
                if self.children:
                    self._begin_children()
            self._depth += 1

    def disable(self) -> None:
        """Undo one enable(); the last one stops recording. Does nothing when not enabled.

        Raises TracerError if the tracer met an error while recording (once; the data recorded
        before the error is kept).
        """
        if self._drop_level():
            self._raise_deferred()

    def _drop_level(self) -> bool:
        with self._lock:
            if self._depth == 0:
                return False
            self._depth -= 1
            if self._depth:
                return True
            self._stop()
            session = self._session
        if session is not None and session.root:
            session.end("stopped")
        return True

    def _begin_children(self) -> None:
        from .children import Config, Session

        if self._session is None:
            assert self.output_dir is not None
            self._session = Session(self, Config.of(self, self.output_dir), root=True, label="main")
        try:
            self._session.begin()
        except OSError as error:
            self._stop()
            raise OSError(f"lineprofiler: cannot use output_dir {str(self.output_dir)!r}: {error}") from None

    # -- as a decorator ----------------------------------------------------------------------

    def __call__(self, func: F) -> F:
        """``@profiler``: the profiler is on while ``func`` runs (each step of a generator or
        coroutine); nests with ``with profiler:``; see :mod:`lineprofiler.lines.decorate`."""
        return wrap(self._calls, func)

    def _enter_call(self) -> bool:
        try:
            self.enable()
        except RuntimeError:  # another LineProfiler records, or no tool id: run unprofiled
            self.skipped_calls += 1
            return False
        return True

    def _exit_call(self) -> None:
        self._drop_level()  # an internal error stays for the next disable() or get_stats()

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
        try:
            tracer.start()  # RuntimeError when another profiler records
        except RuntimeError:
            holder = next((p for p in list(_YIELDING) if p is not self and p._tracer.started), None)
            if holder is None:
                raise
            holder._pause()
            try:
                tracer.start()
            except BaseException:
                holder._resume()
                raise
            self._paused_for_me = holder
        try:
            if _tracer.MONITORING:
                if not self._monitoring.held:  # else still hooked (held): switching the tracer on is all
                    self._monitoring.take(tracer)
            else:
                self._prev_thread_trace = threading.gettrace()
                self._thread_hook = tracer.hook("thread")
                threading.settrace(self._thread_hook)
        except BaseException:
            tracer.stop()
            self._resume_holder()
            raise
        self._since = time.perf_counter_ns()

    def _pause(self) -> None:
        with self._lock:
            if self._depth and not self._paused:
                self._stop()
                self._paused = True

    def _resume(self) -> None:
        with self._lock:
            if self._paused:
                self._paused = False
                if self._depth:
                    try:
                        self._start()
                    except Exception as error:  # stays off; what it had is kept
                        if self._session is not None:
                            self._session.errors.append(f"could not resume recording: {error!r}")

    def _resume_holder(self) -> None:
        holder, self._paused_for_me = self._paused_for_me, None
        if holder is not None:
            holder._resume()

    def _stop(self) -> None:
        if self._paused:  # stepped aside: already stopped
            self._paused = False
            return
        tracer = self._tracer
        # Stop the tracer first: its open lines end now, not after the unhooking below (which
        # re-instruments code on 3.12+ and would be billed to the line that ends the block).
        tracer.stop()
        if self._since is not None:
            self._wall_ns += time.perf_counter_ns() - self._since
            self._since = None
        if _tracer.MONITORING:
            if not self._holds:
                self._monitoring.give_back()
        else:
            if threading.gettrace() is self._thread_hook:  # else someone replaced it: keep theirs
                threading.settrace(self._prev_thread_trace)  # type: ignore[arg-type]
            self._prev_thread_trace = self._thread_hook = None
        self._resume_holder()

    def _hold(self) -> None:
        """Keep the sys.monitoring hooks between steps of a decorated generator or coroutine.

        Hooking and unhooking make CPython re-instrument every code object it runs next, tens
        of microseconds that would land on the line a generator resumes at. While held, off
        only switches the tracer off (its callbacks return at once); the hooks go when the
        last holder lets go and nothing is enabled."""
        with self._lock:
            self._holds += 1

    def _unhold(self) -> None:
        with self._lock:
            self._holds -= 1
            if not self._holds and not self._depth and _tracer.MONITORING and self._monitoring.held:
                self._monitoring.give_back()

    def _raise_deferred(self) -> None:
        err = self._tracer.take_error()
        if err is not None:
            raise TracerError(
                f"lineprofiler stopped recording after an internal error: {err!r}; the data recorded before it is kept"
            ) from err

    # -- data --------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget everything recorded so far (also while enabled)."""
        with self._lock:
            self._tracer.clear()
            self._regions.clear()
            self._wall_ns = 0
            if self._since is not None:
                self._since = time.perf_counter_ns()

    #: The seed names both; they mean the same.
    reset = clear

    def clear_after_fork(self) -> None:
        """In a fork child that goes on recording: :meth:`clear`, and the lines the parent's
        frames had open at the fork are dropped unbilled, so the child's tables cover only what
        it ran after the fork (lines it runs in those frames afterwards included)."""
        with self._lock:
            self._tracer.after_fork()
            self._regions.clear()
            self._wall_ns = 0
            if self._since is not None:
                self._since = time.perf_counter_ns()

    @property
    def wall_time_ns(self) -> int:
        """Wall time spent enabled since the last clear()."""
        with self._lock:
            extra = time.perf_counter_ns() - self._since if self._since is not None else 0
            return self._wall_ns + extra

    def get_stats(self) -> dict[StatsKey, FunctionStats]:
        """Per function of the project: ``StatsKey(filename, qualname, first_lineno) -> FunctionStats``.

        Lines still open while enabled are not included until they end. Code objects that share
        a key (a function defined again, a module re-run) are added together.
        """
        self._raise_deferred()
        return self._build_stats()

    def _build_stats(self) -> dict[StatsKey, FunctionStats]:
        with self._lock:
            raw = self._tracer.collect()
        return stats_from_records(raw, self._filter.stamps)

    def follow_phases(self, phases: Any, max_phases: int) -> None:
        """Key every line by the accounting phase open on its thread when the line starts
        (``phases``: the module ``lineprofiler.accounting._phases``), for the accounting layer's
        sampled windows; phases past the first ``max_phases`` share one table. Before recording
        only, and then this profiler's own regions are not used."""
        self._tracer.follow_phases(phases, max_phases)

    def pause_after(self, seconds: float) -> None:
        """Sleep ``seconds`` with the GIL released, then switch recording off at that instant:
        the lines open then end there, not when this thread has the GIL back, which a busy
        program hands over late. :meth:`stop_recording` completes the stop."""
        self._tracer.pause_after(seconds)

    def phase_windows(self) -> int:
        """After :meth:`follow_phases`: the windows of every phase added up, which grows with
        each enable() that recorded a line; cheap (no line is read), to tell whether there is
        anything new to collect."""
        with self._lock:
            return sum(windows for _, _, windows in self._tracer.phase_regions())

    def collect_phase_rows(
        self, texts: dict[str, FileText] | None = None
    ) -> list[tuple[int, int, list[list[Any]]]]:
        """After :meth:`follow_phases`: ``(phase id, windows, rows)`` per phase seen, where the
        id is the accounting node's (-1: no phase open, -2: past ``max_phases``), windows counts
        the enable()s in which it recorded a line, and rows are its lines as
        :func:`~.stats.rows_from_records` makes them (``texts``: the source lines kept by the
        caller across calls)."""
        with self._lock:
            regions = self._tracer.phase_regions()
            raw = self._tracer.collect_regions()
        records: dict[int, list[tuple[Any, int, list[tuple[int, int, int, int]]]]] = {}
        for region, code, calls, lines in raw:
            records.setdefault(region, []).append((code, calls, lines))
        if texts is None:
            texts = {}  # one read per file, whatever the phases
        return [
            (phase, windows, rows_from_records(records.get(region, ()), self._filter.stamps, texts))
            for region, phase, windows in regions
        ]

    # -- regions -----------------------------------------------------------------------------

    def region(self, name: str) -> RegionScope:
        """``with profiler.region("select"):``: the lines that start on this thread while the
        block runs (in what it calls too) are also recorded apart, in region ``name``'s table
        (:meth:`region_stats`, :meth:`print_regions`, the saved file). The same name may be
        entered any number of times, from any thread, and adds up. Regions nest; a line belongs
        to the innermost region open on its thread, so an outer region's table leaves out its
        inner regions' lines. A region is the thread's: other threads are not in it, and a
        generator is in whatever region its thread is in where it is resumed. Entering one
        while the profiler is off records nothing, and costs two calls into C."""
        return self._regions.scope(name)

    def region_stats(self) -> dict[str, dict[StatsKey, FunctionStats]]:
        """Per region, in the shape of :meth:`get_stats`: what ran while it was the innermost
        open region on its thread."""
        self._raise_deferred()
        return self.collect_region_stats()

    def region_entries(self) -> dict[str, int]:
        """How many times each region was entered while recording."""
        return dict(self._regions.entries)

    @property
    def max_regions(self) -> int:
        """How many distinct region names this profiler keeps; a name first entered past them
        records into the region ``"(overflow)"`` (see :attr:`regions_overflowed`)."""
        return self._regions.max_names

    @property
    def regions_overflowed(self) -> int:
        """Entries, while recording, of region names past :attr:`max_regions`: those the
        region ``"(overflow)"`` holds."""
        return self._regions.overflowed

    # -- printing (PrintedProfile prints and draws) --------------------------------------------

    def _shown_folder(self) -> Path | None:
        return self._filter.folder

    def _nothing_text(self, stats: Mapping[StatsKey, FunctionStats]) -> str | None:
        return self.nothing_recorded() if not stats else None

    def _shown_wall_ns(self) -> int | None:
        return self.wall_time_ns

    def nothing_recorded(self, *, hint: str = HINT_API) -> str | None:
        """When the profiler has been on but no project line ran: the explanation (the folder
        traced, how many code objects ran outside it, files outside it that are neither the
        standard library nor installed packages, and what to pass). None otherwise."""
        if self.wall_time_ns == 0 or self._tracer.n_codes:
            return None
        return render_nothing(self._filter.folder, self._tracer.n_foreign, self._filter.outside_files(), hint=hint)

    # -- saving ------------------------------------------------------------------------------

    def dump(self, path: str | os.PathLike[str]) -> Path:
        """Save what was recorded as a line-stats file (a documented, versioned JSON; see
        :mod:`lineprofiler.runfiles.linesfile`) and return its path. ``path`` is a file, or an
        existing directory (or one ending in ``/``), into which ``l_<host>_<pid>_<id>.json`` is
        written. Written atomically (or into it, when it is a FIFO or a device); OSError when it
        cannot be. An internal error of the tracer is recorded in the file rather than raised."""
        target = Path(os.fspath(path))
        if target.is_dir() or os.fspath(path).endswith(("/", os.sep)):
            target.mkdir(parents=True, exist_ok=True)
            target = target / linesfile.lines_file_name(host_name(), os.getpid(), self._file_id)
        process = process_info("dumped", start_unix_ns=self._created_unix_ns, label="main")
        linesfile.write_lines_file(target, self.lines_document(process, []), named=True)
        return target

    #: The name line_profiler's users reach for.
    dump_stats = dump

    @staticmethod
    def load(path: str | os.PathLike[str]) -> SavedProfile:
        """Read a line-stats file, or every process file in a directory (merged: the same file,
        function and line summed over processes). The result has ``get_stats()``,
        ``print_stats()`` and ``print_global_top_stats()``. Raises
        :class:`~lineprofiler.runfiles.linesfile.LinesFileError` with a one-line reason for a
        missing, corrupt or foreign file, and ``NewerSchemaError`` for one written by a newer
        lineprofiler."""
        return SavedProfile.load(path)

    # -- for lineprofiler's own layers -------------------------------------------------------
    # Not for users: what a child's session, ``lineprofiler run``, the lines window of the
    # accounting layer and the process endings call. Each is named by a Protocol where it is
    # used (children.Recording, endings.EndingProfiler, runner, accounting.windows.lines_window).

    @property
    def include(self) -> tuple[str, ...]:
        """The include globs in effect (notebook cells' included)."""
        return self._filter.include

    @property
    def exclude(self) -> tuple[str, ...]:
        """The exclude globs in effect."""
        return self._filter.exclude

    @property
    def created_unix_ns(self) -> int:
        """When this profiler was made (a saved file's start)."""
        return self._created_unix_ns

    @property
    def depth(self) -> int:
        """How many enable()s are not matched by a disable() yet."""
        return self._depth

    def make_background(self) -> None:
        """Record in the background (a child process's profiler, ``lineprofiler run``'s): step
        aside while one of the program's own LineProfilers records, instead of making its
        enable() fail, and go on when it stops."""
        _YIELDING.add(self)

    def stop_recording(self) -> None:
        """Off now, whatever the nesting: the lines still open end here. Never raises (an
        internal error of the tracer stays for get_stats() or collect_stats())."""
        with self._lock:
            if self._depth:
                self._depth = 0
                self._stop()

    def collect_stats(self, errors: list[str]) -> dict[StatsKey, FunctionStats]:
        """get_stats() that never raises: an internal error of the tracer goes into ``errors``."""
        err = self._tracer.take_error()
        if err is not None:
            errors.append(f"the tracer stopped recording after an internal error: {err!r}")
        return self._build_stats()

    def lines_document(
        self, process: dict[str, Any], errors: list[str], *, empty: bool = False, children: bool | None = None
    ) -> dict[str, Any]:
        """The line-stats document of what was recorded (``empty``: none of it, for a file
        written at start), with its regions and ``process`` (see ``saved.process_info``); never
        raises for the tracer's internal error, which goes into ``errors`` and the file."""
        stats = {} if empty else self.collect_stats(errors)
        regions = {} if empty else self.collect_region_stats()
        return document_from_stats(
            stats,
            process=process,
            profile=self.profile_info(children=children),
            errors=errors,
            regions=regions,
            region_entries=self.region_entries(),
        )

    def collect_region_stats(self) -> dict[str, dict[StatsKey, FunctionStats]]:
        """region_stats() that never raises (an internal error stays for collect_stats()): what a
        line-stats file's ``regions`` are built from, with :meth:`region_entries`."""
        with self._lock:
            return self._regions.stats()

    def profile_info(self, *, children: bool | None = None) -> dict[str, Any]:
        """A line-stats file's ``profile``: what was profiled and how (``children`` as given, else
        this profiler's own setting)."""
        return {
            "project_folder": str(self._filter.folder),
            "include": list(self._filter.include),
            "exclude": list(self._filter.exclude),
            "clock": self.clock,
            "wall_ns": self.wall_time_ns,
            "codes_outside": self._tracer.n_foreign,
            "children": self.children if children is None else children,
            "max_regions": self.max_regions,
            "regions_overflowed": self.regions_overflowed,
        }

    def lock_for_fork(self) -> None:
        """Before a fork: wait for any other thread's switch or collection to finish, so that
        the child copies a profiler in one piece. :meth:`unlock_after_fork` on both sides."""
        self._lock.acquire()

    def unlock_after_fork(self) -> None:
        self._lock.release()

    def reset_after_fork(self) -> None:
        """In a fork child that :meth:`lock_for_fork` did not see: a lock of its own (the copy
        may be held by a thread the child does not have), recording off, nothing recorded."""
        self._lock = threading.RLock()
        self.stop_recording()
        self.clear()


class _Calls:
    """The :class:`~lineprofiler.lines.decorate.CallSwitch` of one LineProfiler: what its
    ``@profiler`` wrappers switch. Its members are the profiler's bound methods rather than
    methods that call them, so a decorated call pays no frame more than it did."""

    __slots__ = ("enter", "exit", "hold", "unhold")

    def __init__(self, profiler: LineProfiler) -> None:
        self.enter = profiler._enter_call
        self.exit = profiler._exit_call
        self.hold = profiler._hold
        self.unhold = profiler._unhold
