"""``Profiler``: the always-on accounting layer's public face.

The C module ``_phases`` records; this module decides what to record into, when to write it
down, and how to survive the process's life: fork, signals, exit, an unwritable disk. It never
raises into user code after construction, and construction raises only for bad arguments
(:mod:`._options`). The pieces it leans on: :mod:`._process` (signals, fork and exit, once per
process), :mod:`._snapshots` (when the worker file is written), :mod:`._wiring` (GPU hooks,
backend window, sampler), :mod:`.metadata` (the metadata files' content) and
:mod:`..runfiles.workerfile` (the worker file's schema). None of them imports this module: each
takes the profiler as one of the typed surfaces of :mod:`._surfaces`, or plain values.

Every process of a run imports this module, and most construct one profiler, so both are kept
cheap: importing it loads only the C module, and the modules a profiler needs are imported by
the methods that need them (a disabled profiler loads next to nothing); the metadata files,
whose capability probes cost more than the rest of the construction, are written with the
first snapshot after it (or at close, or on a signal that ends the process), not during it.
``benchmarks/bench_startup.py`` measures both, and a test holds the import's module list.
"""

from __future__ import annotations

import os

from . import _phases
from ._error_text import cut
from ._links import TraceLinks

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

    from ..runfiles.layout import RunPaths
    from ._options import Options
    from ._reads import IoSnapshot, PhaseTree, Reads, SnapshotCallback
    from ._snapshots import SnapshotWriter
    from ._wiring import Wiring
    from .identity import Identity, RunId

__all__ = ["Profiler"]

DEFAULT_RUN_DIR = "profile"
DEFAULT_SNAPSHOT_INTERVAL_S = 5.0
DEFAULT_SAMPLE_INTERVAL_S = 1.0
#: A signal the process survives (SIGUSR1, SIGHUP) flushes at most once per this interval: a
#: storm of them costs one fsynced write a second, and the next snapshot carries the rest. A
#: signal that ends the process always gets its final flush.
SIGNAL_FLUSH_INTERVAL_S = 1.0
_MAX_ERRORS = 32
# Each error's text is cut to MAX_ERROR_CHARS: the text may be the user's (a key's ``__str__``
# that raised with megabytes), and 32 of them must not make a worker file its report cannot
# read. The engine keeps its own errors to the same length (LP_MAX_ERROR_TEXT).


def _reads(profiler: Profiler) -> Reads:
    from ._reads import reads_of  # not at import: 0.10.0's in-process reads, on the live recorder

    return reads_of(profiler)


class Profiler(TraceLinks):
    """The accounting profiler of one process.

    ``Profiler(run_dir=None, role=None, *, enabled=None, measure_cpu=True, backend=None,
    backend_window=None, window_phase=None, annotate=False, snapshot_interval_s=5.0,
    sample_interval_s=1.0, timeline_hz=10.0, max_paths=10000, max_counters=10000, lines_project=None)``

    ``auto="torch"``: a PyTorch loop's steps, forward, backward, optimizer, data waits, workers'
    fetches and checkpoints as phases, with no phase() calls (:mod:`.auto_torch`).

    ``timeline_hz``: how often the sampler notes each thread's phase, for TIMELINE (0: off; needs sample_interval_s).

    ``backend="torch" | "viztracer" | "lines"`` with ``backend_window=(start, stop)`` and
    ``window_phase``: that profiler runs from the start-th entry into the phase to the stop-th.
    ``"lines"`` line-profiles the code of ``lines_project`` (default ``LINEPROFILER_LINES_PROJECT``,
    else the git root of the main script, else of the working directory) and writes
    ``run_dir/lines/<host>/l_<run>_<pid>_<uuid8>.json``. ``line_sampling=0.02`` (or
    ``LINEPROFILER_LINE_SAMPLING``): the same lines in short windows covering 2 % of the run (:mod:`.line_sampling`).

    An enabled profiler records from construction: ``profiler.phase(name)`` and
    ``profiler.count(name, n)`` work with or without ``with profiler:`` around them. Its
    worker file is written at construction (status ``"started"``), every
    ``snapshot_interval_s`` from a background thread, on SIGTERM/SIGUSR1/SIGHUP and at exit.

    Defaults come from ``LINEPROFILER_RUN_DIR`` (else ``"profile"``), ``LINEPROFILER_ROLE``
    (else ``"main"``) and ``LINEPROFILER_PROFILE`` (``0`` disables). Enabling exports
    ``LINEPROFILER_PROFILE=1``, ``LINEPROFILER_RUN_DIR`` and ``LINEPROFILER_RUN_ID`` so that
    spawned children join the same run.

    0.10.0's keywords (``docs/migrating-from-0.10.md``): ``install=True`` (the module-level
    ``phase``/``count``/``current`` use it until it closes), ``run_id=``, ``cuda_sync=False``,
    ``trace="auto"`` (the named phases only), ``strict_names=``, ``source=`` and
    ``trace_functions=`` (accepted, warning once of what is not done); ``thread_names=True`` raises.
    """

    # phase() and count() are bound C methods stored on the instance (see __init__), so a call
    # costs no Python frame; these class-level definitions document them and serve the closed
    # profiler.
    def phase(self, name: str, io: bool = False, sync: bool = False, gpu: bool = False) -> Any:
        """A context manager timing the named phase (nested: paths ``a/b/c``; gpu=True: :mod:`.gpu_events`)."""
        return self._noop.phase(name, io, sync, gpu)

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name`` under the phase open in this thread."""
        self._noop.count(name, n)

    def __new__(cls, *args: object, **kwargs: object) -> Profiler:
        if len(args) > 2:  # Python's own TypeError would not say to pass them by keyword
            from ._options import positional_error

            raise positional_error(len(args))
        return super().__new__(cls)

    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None = None,
        role: str | None = None,
        *,
        enabled: bool | None = None,
        measure_cpu: bool = True,
        backend: object = None,
        backend_window: Sequence[int] | None = None,
        window_phase: str | None = None,
        annotate: bool = False,
        snapshot_interval_s: float | None = DEFAULT_SNAPSHOT_INTERVAL_S,
        sample_interval_s: float | None = DEFAULT_SAMPLE_INTERVAL_S,
        max_paths: int = _phases.DEFAULT_MAX_PATHS,
        max_counters: int = _phases.DEFAULT_MAX_COUNTERS,
        lines_project: str | os.PathLike[str] | None = None,
        timeline_hz: float = 10.0, line_sampling: float | None = None,
        trace: bool | str | None = None, trace_capacity: int | None = None,
        install: bool = False, run_id: str | None = None,
        strict_names: bool = False, thread_names: bool = False,
        trace_functions: list[str] | None = None,
        source: dict[str, object] | None = None,
        cuda_sync: bool | None = None, auto: str | None = None,
    ) -> None:
        from ._options import check_010_keywords, check_options, export_run_id, warn_010_keywords
        from .identity import profile_env_on

        # Wrong arguments raise here, before anything is touched.
        trace_mode = check_010_keywords(thread_names, run_id, trace)
        will_record = enabled if enabled is not None else profile_env_on()
        undo_run_id = export_run_id(run_id if will_record else None)  # read by resolve_run_id, and by children
        try:
            options = check_options(
                run_dir=run_dir, role=role, enabled=enabled, measure_cpu=measure_cpu, backend=backend,
                backend_window=backend_window, window_phase=window_phase, line_sampling=line_sampling,
                snapshot_interval_s=snapshot_interval_s, sample_interval_s=sample_interval_s, annotate=annotate,
                max_paths=max_paths, max_counters=max_counters, lines_project=lines_project,
                timeline_hz=timeline_hz, trace=trace_mode != "off", trace_capacity=trace_capacity,
                auto_trace=trace_mode == "auto", trace_functions=trace_functions, source=source, auto=auto,
            )
            self._start(options)
        except BaseException:
            undo_run_id()  # a wrong argument leaves the environment as it found it
            raise
        self.strict_names, self.thread_names = strict_names, False
        warn_010_keywords(trace_mode, trace_functions, strict_names, self.enabled and options.backend_window)
        if cuda_sync is False:
            self.set_sync(None)
        if install:
            install_profiler(self)

    def _start(self, options: Options) -> None:
        """Set up this process's recording from the checked ``options``."""
        from ..runfiles.layout import RunPaths
        from .identity import ENV_PROFILE, ENV_RUN_DIR, adopt_ray_job_env, clean_role, profile_env_on

        self._options: Options = options
        adopt_ray_job_env()  # a Ray worker of a job joined after ray.init(): before the environment is read
        self._noop = _phases.Noop()
        self.enabled: bool = options.enabled if options.enabled is not None else profile_env_on()
        self.measure_cpu = options.measure_cpu
        self.backend = options.backend
        self.backend_window = options.backend_window
        self.window_phase = options.window_phase
        self.lines_project = options.lines_project
        self.annotate = options.annotate
        self.snapshot_interval_s = options.snapshot_interval_s
        self.sample_interval_s = options.sample_interval_s
        self.timeline_hz = options.timeline_hz
        self.max_paths = options.max_paths
        self.max_counters = options.max_counters
        self.trace = options.trace
        self._tracing = False  # signal() and wait_on() record: tracing on, in a recorder that records
        # The run directory and every file name in it, asked for by each part. Paths are kept as
        # text and made Paths when asked for: pathlib costs a process milliseconds to import,
        # more than the rest of a profiler's start.
        run_dir = options.run_dir or os.environ.get(ENV_RUN_DIR) or DEFAULT_RUN_DIR
        self._paths = RunPaths(os.path.abspath(os.fspath(run_dir)))
        self.role = clean_role(options.role)
        self.recorder: _phases.Recorder | None = None
        self.identity: Identity | None = None
        self._path: str | None = None  # the worker file
        self._live_path: str | None = None
        self._start_unix_ns: int | None = None
        self._start_mono_ns = 0
        self.window: Any = None  # a windows.trace_window.Window or lines_window.LinesWindow
        self._attachments: Any = ()  # an enabled profiler's _wiring.Attachments
        self._errors: list[str] = []
        self._errors_dropped = 0
        self._closed = False
        self._final_done = False
        self._signal_name: str | None = None
        self._last_signal_flush_ns: int | None = None
        self._restart_after_fork = False  # the snapshot thread was stopped for a fork
        self._fork_crowded = False  # the fork under way is made while other threads run Python
        self._metadata_due = False  # the first metadata files are still to be written
        self._mp_registered = False
        self._inherited = False  # a copy made by fork: see ProcessHooks.register
        self._fork_parent_pid: int | None = None
        self.phase = self._noop.phase  # type: ignore[method-assign]
        self.count = self._noop.count  # type: ignore[method-assign]
        if not self.enabled:
            return

        import threading

        from . import _wiring
        from ._process import PROCESS
        from ._snapshots import SnapshotWriter
        from .identity import ENV_ATTEMPT, ENV_RUN_ID, parent_run_id, resolve_host, resolve_run_id

        self._snapshots: SnapshotWriter = SnapshotWriter(
            self._document, self._record_error, self.snapshot_interval_s, self._paths, PROCESS
        )
        self._snapshots.before_periodic = self._write_metadata_if_due
        self._attachments = _wiring.Attachments(self._record_error)
        self._metadata_lock = threading.Lock()
        self._run: RunId = resolve_run_id()
        if self._run.source == "generated":
            # A forkserver child whose server predates the parent's profiler: join the parent.
            self._run = parent_run_id(self._paths.root, resolve_host()) or self._run
        os.environ[ENV_PROFILE] = "1"
        os.environ[ENV_RUN_DIR] = self._paths.root
        os.environ[ENV_RUN_ID] = self._run.run_id
        os.environ[ENV_ATTEMPT] = str(self._run.attempt)
        self.recorder = _phases.Recorder(
            measure_cpu=options.measure_cpu, max_paths=options.max_paths, max_counters=options.max_counters
        )
        self.recorder.make_primary()
        if options.trace:
            from ._options import TRACE_LINKS_CAPACITY

            self.recorder.trace_enable(options.trace_capacity, TRACE_LINKS_CAPACITY)
            self._tracing = True
        self.phase = self.recorder.phase  # type: ignore[method-assign]
        self.count = self.recorder.count  # type: ignore[method-assign]
        # Hooks and attachments before the start file, so that it already carries them.
        self._wiring: Wiring = _wiring.wire(self, options, self._record_error)
        self.window = self._wiring.window
        self._begin_process(start_thread=False)
        PROCESS.register(self)
        sampler = _wiring.make_sampler(self._paths, options, self._record_error)
        if sampler is not None:
            self.add_attachment(sampler)
        # The metadata files wait for the first snapshot (see the module docstring).
        self._metadata_due = True
        # Last, once the constructor's own work is done: the first snapshot thread of a process
        # starts by importing what the snapshots import late (see _process).
        self._start_thread()

    # ------------------------------------------------------------------ lifetime

    def _begin_process(self, *, start_thread: bool = True) -> None:
        """Identity, times and the start file of this process (again in a fork child)."""
        import time

        from .identity import build_identity

        self.identity = build_identity(self._options.role, self._run)
        self._path = self._snapshots.path = self._paths.worker_file(
            self.identity.host, self.identity.run_id, self.identity.pid, self.identity.uuid
        )
        self._start_unix_ns = time.time_ns()
        self._start_mono_ns = time.monotonic_ns()
        self._snapshots.prepare_dir()
        self._attach_live()
        self._snapshots.write("started")
        if start_thread:
            self._start_thread()

    def _attach_live(self) -> None:
        """The live file beside the worker file: everything recorded survives a SIGKILL."""
        from ._snapshots import attach_live

        self._live_path = None
        if self.recorder is None or self._path is None or self.identity is None:
            return
        path = self._paths.live(self._path)
        error = attach_live(self.recorder, path, self._paths.root, self.identity.to_json())
        if error is None:
            self._live_path = path
        else:
            self._record_error(f"live file: {error}; the numbers are in the snapshots only")

    def _start_thread(self) -> None:
        if not self._closed:
            self._snapshots.start_thread()

    def close(self) -> None:
        """Write the final snapshot, stop the snapshot thread and attachments, stop recording.

        Idempotent; ``with profiler:`` calls it on exit. Later phases and counts are no-ops.
        """
        uninstall_profiler(self)  # 0.10.0's rule: a closed profiler is no longer the installed one
        if not self.enabled or self._closed:
            return
        from ._process import PROCESS

        PROCESS.ensure_own_process("close()")  # a fork() from C writes its own files, not its parent's
        self._write_metadata_if_due()  # before the final snapshot, which then carries its failures
        self._final_flush()
        self._write_metadata(final=True)
        self._stop_recording()
        PROCESS.unregister(self)

    def _stop_recording(self) -> None:
        """Stop the snapshot thread and the attachments; phase and count become no-ops."""
        self._closed = True
        self._tracing = False
        self._snapshots.stop_thread()
        self._attachments.call("close")
        if self.recorder is not None:
            self.recorder.stop()
        self.phase = self._noop.phase  # type: ignore[method-assign]
        self.count = self._noop.count  # type: ignore[method-assign]

    def _retire(self) -> None:
        """Step aside without a final snapshot, removing the start file written in this process."""
        from ..runfiles import layout
        from ._process import PROCESS

        self._final_done = True
        self._stop_recording()
        if self.path is not None:
            # The start file and any sample file this copy began: the process's own profiler
            # writes its own.
            if self.recorder is not None:
                self.recorder.live_detach()
            for path in (self.path, *self._paths.began_beside(self.path)):
                try:
                    layout.remove(path, root=self._paths.root)
                except OSError:
                    pass
        PROCESS.unregister(self)

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.enabled:
            return "<Profiler disabled>"
        return f"<Profiler role={self.role!r} run={self._run.run_id!r} path={self._path!r}>"

    @property
    def run_dir(self) -> Path:
        """The run directory, absolute."""
        return self._paths.path

    @property
    def run_paths(self) -> RunPaths:
        """The run directory and the name of every file in it, as the profiler's parts ask for them."""
        return self._paths

    @property
    def path(self) -> Path | None:
        """This process's worker file, ``run_dir/workers/<host>/w_<run>_<pid>_<uuid8>.json``;
        None when disabled."""
        from pathlib import Path

        return None if self._path is None else Path(self._path)

    @property
    def live_path(self) -> Path | None:
        """The live file beside the worker file, or None when there is none."""
        from pathlib import Path

        return None if self._live_path is None else Path(self._live_path)

    @property
    def run_id(self) -> str | None:
        return self._run.run_id if self.enabled else None

    @property
    def start_unix_ns(self) -> int | None:
        """When this process's recording began (unix ns; a fork child's, at the fork); None when
        disabled."""
        return self._start_unix_ns

    @property
    def signal_name(self) -> str | None:
        """The signal (``"SIGTERM"``, ...) whose flush is under way or was this process's last,
        or None."""
        return self._signal_name

    def metadata_path(self) -> Path | None:
        """This process's own metadata file, ``run_dir/metadata/<host>/m_<run>_<pid>_<uuid8>.json``
        (named after its worker file), or None when disabled."""
        if self.path is None or self.identity is None:
            return None
        return self._paths.metadata(self.path)

    # ------------------------------------------------------------------ snapshots

    def flush(self) -> bool:
        """Write a snapshot now; True when it was written. Never raises."""
        if not self.enabled or self._closed:
            return False
        from ._process import PROCESS

        PROCESS.ensure_own_process("flush()")  # a fork() from C writes its own files, not its parent's
        self._write_metadata_if_due()
        return self._snapshots.write("running")

    def _final_flush(self) -> None:
        if self._final_done:
            return
        self._final_done = True
        self._snapshots.stop_thread()
        self._attachments.call("stop")
        self._snapshots.write("exited", final=True)

    def _flush_for_signal(self, name: str, *, ending: bool = False) -> None:
        import time

        self._signal_name = name
        last = self._last_signal_flush_ns
        if not ending and last is not None and time.monotonic_ns() - last < SIGNAL_FLUSH_INTERVAL_S * 1e9:
            return  # one flush per interval; the next snapshot carries the signal's name and the rest
        if ending:
            # The signal's default action ends the process next, with no atexit: stop the
            # attachments as an exit would, so an open backend window writes its trace and the
            # sampler takes its last row. A signal the process survives leaves them running.
            self._write_metadata_if_due()
            self._attachments.call("stop")
        self._snapshots.write("signalled", final=True)
        # From the end of the write: a slow disk does not make a storm cost more writes.
        self._last_signal_flush_ns = time.monotonic_ns()

    def _record_error(self, text: str) -> None:
        if len(self._errors) < _MAX_ERRORS:
            self._errors.append(cut(text))
        else:
            self._errors_dropped += 1

    def _document(self, status: str, final: bool) -> dict[str, Any]:
        from ._snapshots import worker_document

        return worker_document(self, status, final)

    def _write_metadata_if_due(self) -> None:
        """The first metadata files, once: from the first snapshot after construction (the
        periodic thread's or :meth:`flush`'s), else at close or on a signal that ends the process."""
        if not self._metadata_due:
            return
        with self._metadata_lock:
            if not self._metadata_due:
                return  # written meanwhile by another thread
            self._metadata_due = False
            self._write_metadata()

    def _write_metadata(self, *, final: bool = False) -> None:
        """This process's metadata file and the run's ``metadata.json`` (see :mod:`.metadata`);
        a failure (an unwritable run dir) is recorded in the worker file's ``errors``."""
        identity, worker_file = self.identity, self.path
        if identity is None or worker_file is None:
            return
        from . import metadata  # not at import: it loads the capability probes

        metadata.write_recorded(
            identity, self._paths, worker_file, self._options, self._wiring, self._record_error, final=final
        )

    # ------------------------------------------------------------------ attachments and hooks

    def add_attachment(self, attachment: Any) -> None:
        """Attach an object that lives and dies with this profiler (the sampler, a backend): see
        :class:`._wiring.Attachments` for the methods of it that are called, and when."""
        if not self.enabled or self._closed:
            return
        self._attachments.add(attachment)

    def set_sync(self, fn: Callable[[], object] | None) -> None:
        """``fn()`` runs before the clock read at both ends of ``sync=True`` phases."""
        if self.recorder is not None:
            self.recorder.set_sync(fn)

    def set_annotate(self, enter_fn: Callable[[str], object] | None, exit_fn: Callable[[str], object] | None) -> None:
        """``enter_fn(name)`` / ``exit_fn(name)`` around every phase while set."""
        if self.recorder is not None:
            self.recorder.set_annotate(enter_fn, exit_fn)

    def set_watch(self, name: str | None, fn: Callable[[int], object] | None) -> None:
        """``fn(n)`` on the n-th entry (from 1) into a phase named ``name`` in this process."""
        if self.recorder is not None:
            self.recorder.set_watch(name, fn)

    # ------------------------------------------------------------------ 0.10.0's methods

    def snapshot(self) -> None:
        """0.10.0's name for :meth:`flush`: write the worker file now."""
        self.flush()

    def current_phase(self) -> str:
        """The ``/``-joined path of the innermost phase open in this thread, or ``""``."""
        if self.recorder is None or self._closed:
            return ""
        try:
            return self.recorder.current_path() or ""
        except Exception:  # noqa: BLE001 - a tag for a log line must not raise
            return ""

    def profile(self, func: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
        """Decorate a function so that each call is a phase (its name, or ``name=``)."""
        import functools

        def decorate(target: Callable[..., Any]) -> Callable[..., Any]:
            phase_name = name or target.__name__

            @functools.wraps(target)
            def timed(*args: Any, **kwargs: Any) -> Any:
                with self.phase(phase_name):
                    return target(*args, **kwargs)

            return timed

        return decorate if func is None else decorate(func)

    def io_counters(self) -> IoSnapshot:
        return _reads(self).io_counters()

    def merged_tree(self) -> PhaseTree:
        return _reads(self).merged_tree()

    def deltas(self) -> PhaseTree:
        return _reads(self).deltas()

    def on_snapshot(self, callback: SnapshotCallback) -> SnapshotCallback:
        return _reads(self).on_snapshot(callback)

    # ------------------------------------------------------------------ fork (called by PROCESS)

    def _before_fork(self, *, crowded: bool = False) -> None:
        """``crowded``: other threads run Python here, and the snapshot thread stays up (see
        _process.ProcessHooks.before_fork); attachments get ``before_crowded_fork()`` where they
        have it. Otherwise the thread is stopped, after its current write, and restarted on both
        sides."""
        self._fork_crowded = crowded
        self._restart_after_fork = not crowded and self._snapshots.running
        if self._restart_after_fork:
            self._snapshots.stop_thread(wait_os_thread=True)
        self._attachments.call_fork_hook("before_crowded_fork" if crowded else "before_fork", "before_fork")

    def _after_fork_parent(self) -> None:
        from ._process import PROCESS

        if self._restart_after_fork:
            self._restart_after_fork = False
            PROCESS.after_fork_returns(self._start_thread)
        hook = "after_crowded_fork_parent" if self._fork_crowded else "after_fork_parent"
        self._attachments.call_fork_hook(hook, "after_fork_parent")

    def _after_fork_child(self, note: str | None = None) -> None:
        """Become the child's own profiler: a new identity, files and tree. ``note`` goes into
        the child's errors (why it was done late: a fork() from C)."""
        import threading

        from ._process import PROCESS

        # First: whatever fails below, this copy never writes its parent's files again.
        self._path = self._snapshots.path = None
        self._live_path = None
        self._restart_after_fork = False
        self._inherited = True
        # A fork child writes its own metadata file when it closes, not at its start (as before
        # the parent's first snapshot); the lock may have been copied held.
        self._metadata_due = False
        self._metadata_lock = threading.Lock()
        self._fork_parent_pid = self.identity.pid if self.identity is not None else None
        self._snapshots.after_fork_child()
        self._errors = []
        self._errors_dropped = 0
        if note is not None:
            self._record_error(note)
        self._signal_name = None
        self._last_signal_flush_ns = None
        self._final_done = False
        if self.recorder is not None:
            self.recorder.reset()
            self.recorder.make_primary()
        # Attachments first: the child's start file below asks them to contribute, so they must
        # have forgotten the parent's state (a window's progress, VRAM peaks), and a sampler
        # must have reopened this process's /proc descriptors and emptied its ring.
        self._attachments.call("after_fork_child")
        # After a fork() made from C, CPython never reset its GIL: its condition variable still
        # counts the parent's waiting threads, and a Python thread started here to contend for
        # it can wait forever (seen: the child's main thread and its new snapshot thread both
        # stuck in the GIL's condvar). The child's files are then written at flush and close.
        self._begin_process(start_thread=note is None)
        self._mp_registered = False
        PROCESS.mp_register(self)


# ------------------------------------------------------------------ the installed profiler (0.10.0's)

_installed: Profiler | None = None
"""The profiler 0.10.0's module-level ``phase``, ``count`` and ``current`` resolve to: one per
process, not per thread, so that the threads a worker starts are instrumented too."""


def install_profiler(profiler: Profiler) -> None:
    """Make ``profiler`` the one 0.10.0's module-level ``phase``, ``count`` and ``current`` resolve to."""
    global _installed  # noqa: PLW0603 - the point of the function
    if not isinstance(profiler, Profiler):
        raise TypeError(f"install_profiler() takes a lineprofiler.accounting.Profiler, got {type(profiler).__name__}")
    previous = _installed
    if previous is not None and previous is not profiler and not previous._closed:
        from ._options import warn_once

        warn_once(
            "reinstall",
            "an accounting Profiler was already installed; module-level phase() and count() now use the new one",
        )
    _installed = profiler


def uninstall_profiler(profiler: Profiler | None = None) -> None:
    """Uninstall ``profiler`` if it is the installed one (any profiler when ``None``)."""
    global _installed  # noqa: PLW0603 - the point of the function
    if profiler is None or _installed is profiler:
        _installed = None


def installed_profiler() -> Profiler | None:
    """The installed profiler, or ``None``."""
    return _installed


if TYPE_CHECKING:
    from ._surfaces import ProcessMember

    def _as_process_member(profiler: Profiler) -> ProcessMember:
        """For the type checker: the profiler is what the process-wide hooks take it as."""
        return profiler
