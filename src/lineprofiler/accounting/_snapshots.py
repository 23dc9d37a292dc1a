"""When and how one profiler's worker file is written: on request, from a periodic thread, never
raising. Writes are counted, failures too (with the last reason), and an unwritable run
directory warns once per process.

A write is never nested in another on the same thread (a signal handler that interrupts one
finds it under way), and a process never writes the files of the process it was forked from: a
child that a fork() from C made (no fork hook ran) becomes its own profiler first. What that
takes of the process-wide hooks comes in as a :class:`~._surfaces.ProcessServices`.
"""

from __future__ import annotations

import os
import threading
import time

from ..runfiles import layout, workerfile
from . import _phases

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..runfiles.layout import RunPaths
    from ._surfaces import ProcessServices

#: How long a write waits for the one before it (a signal's flush racing the thread's).
LOCK_TIMEOUT_S = 10.0


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int)) else str(value)


def attach_live(recorder: Any, path: str, root: str, identity: dict[str, Any]) -> str | None:
    """Create the live file ``path`` and hand it to the recorder, whose tree and counters then
    live in a shared mapping of it. Returns None, or why it could not be done (a file system
    without shared mappings, say): then the snapshots alone carry the numbers."""
    keys = ("run_id", "attempt", "role", "host", "pid", "uuid", "rank", "local_rank", "job_id")
    fields = {k: _plain(identity.get(k)) for k in keys}
    blob = workerfile.encode_json(fields)[:2048]  # a reader drops a cut blob, never the file
    try:
        fd = layout.create_live(path, root=root)
    except (OSError, ValueError) as error:
        return f"cannot create {os.path.basename(path)}: {getattr(error, 'strerror', None) or error}"
    token = _phases.own_io_begin()  # the chunks copied into the file are the profiler's own writes
    try:
        recorder.live_attach(fd, blob)
    except OSError as error:
        try:
            layout.remove(path, root=root)
        except OSError:
            pass
        return f"cannot map {os.path.basename(path)}: {error.strerror or error}"
    finally:
        _phases.own_io_end(token)
        os.close(fd)
    return None


def worker_document(profiler: Any, status: str, final: bool) -> dict[str, Any]:
    """The worker file's document of ``profiler`` (a :class:`~.profiler.Profiler`, which this
    module does not import) now: its tree, counters and trace, what its attachments contribute
    and the errors it kept."""
    assert profiler.recorder is not None and profiler.identity is not None and profiler._start_unix_ns is not None
    tree = profiler.recorder.snapshot()
    now_ns = time.time_ns()
    config = profiler._options.config()
    config["cpu_clock"] = _phases.cpu_clock_source() if profiler.measure_cpu else None
    document = workerfile.build_document(
        identity=dict(profiler.identity.to_json(), fork_parent_pid=profiler._fork_parent_pid),
        status=status,
        start_unix_ns=profiler._start_unix_ns,
        now_unix_ns=now_ns,
        elapsed_ns=time.monotonic_ns() - profiler._start_mono_ns,
        final=final,
        signal=profiler._signal_name,
        interval_s=profiler.snapshot_interval_s,
        writes=profiler._snapshots.writes + 1,  # the document is only ever read if this write succeeds
        failures=profiler._snapshots.failures,
        last_error=profiler._snapshots.last_error,
        config=config,
        tree=tree,
        own_io_excluded=_phases.own_io(),
        trace=_trace_section(profiler, final),
    )
    profiler._attachments.call("contribute", document)
    errors = list(profiler._errors) + list(tree["errors"])
    dropped = profiler._errors_dropped + tree["errors_dropped"]
    if dropped:
        errors.append(f"{dropped} more errors not kept")
    document["errors"] = errors + document["errors"]
    document["live_file"] = os.path.basename(profiler._live_path) if profiler._live_path is not None else None
    return document


def _trace_section(profiler: Any, final: bool) -> dict[str, Any] | None:
    """The document's ``trace``: a clock pair taken first (one at each flush), then the spans.

    A full ring is megabytes of JSON and a few hundred milliseconds with the GIL held, too
    much for every periodic snapshot of the user's process: where the live file holds the
    rings (the report reads a running or killed worker's trace from there), a periodic
    snapshot says so instead, and only the final one (exit, signal) writes them out."""
    if not profiler.trace or profiler.recorder is None:
        return None
    if not final and profiler._live_path is not None:
        profiler.recorder.trace_clock_pair()
        return {"clock": "monotonic", "in_live_file": True}
    # The spans come as one bytes object of columns, which the worker file's writer puts in
    # a spans file beside it (runfiles.spanfile): no Python object per span, no JSON.
    profiler.recorder.trace_clock_pair()
    return profiler.recorder.trace_snapshot(columns=True)


class SnapshotWriter:
    """Writes the documents ``build(status, final)`` makes to ``path``, inside the run directory
    of ``paths`` (its ``root``, below which nothing is followed).

    ``record_error`` receives each failure's line for the worker file's ``errors``. One lock
    keeps two writes (the thread's and a signal's or close()'s) from interleaving. ``process``
    is the process-wide hooks (:data:`._process.PROCESS`).
    """

    def __init__(
        self,
        build: Callable[[str, bool], dict[str, Any]],
        record_error: Callable[[str], None],
        interval_s: float | None,
        paths: RunPaths,
        process: ProcessServices,
    ) -> None:
        self._build = build
        self.root = paths.root
        self.process = process
        self._record_error = record_error
        self.interval_s = interval_s
        self.path: str | None = None  # text: see Profiler.run_dir
        #: Called by the periodic thread before each of its snapshots (the profiler's first
        #: metadata files); must not raise.
        self.before_periodic: Callable[[], None] | None = None
        #: Called by the periodic thread after each of its snapshots (``on_snapshot``'s
        #: callbacks, see _reads); must not raise.
        self.after_periodic: Callable[[], None] | None = None
        self._thread: _Periodic | None = None
        self._warned = False
        self._reset()

    def _reset(self) -> None:
        # A fresh lock too: in a fork child the old one may have been copied while held by a
        # thread that does not exist there.
        self._lock = threading.RLock()
        self._thread = None
        self._writing: int | None = None  # the thread inside write(), if any
        self.pid = os.getpid()  # the process whose files this writer writes
        self.writes = 0
        self.failures = 0
        self.last_error: str | None = None
        self.last_success_ns: int | None = None

    after_fork_child = _reset

    def prepare_dir(self) -> None:
        assert self.path is not None
        try:
            layout.ensure_dir(os.path.dirname(self.path), root=self.root)
        except OSError as error:
            self.note_failure(f"cannot create {os.path.dirname(self.path)}: {error.strerror or error}")

    @property
    def running(self) -> bool:
        """Whether the periodic thread is (or is being) started."""
        return self._thread is not None

    def writing_here(self) -> bool:
        """Whether the calling thread is inside :meth:`write`."""
        return self._writing == threading.get_ident()

    def write(self, status: str, *, final: bool = False) -> bool:
        """Build and write one snapshot; True when written. Never raises (bar KeyboardInterrupt)."""
        if os.getpid() != self.pid:
            self.process.ensure_own_process("a snapshot")  # resets this writer, with the child's path
            if os.getpid() != self.pid:
                return False  # a copy no profiler owns any more: never the parent's file
        if self.path is None:
            return False
        me = threading.get_ident()
        if self._writing == me:
            return False  # a signal's flush inside this thread's own write: the write covers it
        try:
            return self._write_locked(status, final, me)
        finally:
            if self.process.deferred_end is not None:
                self.process.end_deferred()  # a signal that ends the process came during the write

    def _write_locked(self, status: str, final: bool, me: int) -> bool:
        if not self._lock.acquire(timeout=LOCK_TIMEOUT_S):
            self.note_failure(f"snapshot lock not acquired within {LOCK_TIMEOUT_S:g} s")
            return False
        self._writing = me
        try:
            path = self.path
            if path is None:
                return False
            try:
                document = self._build(status, final)
                notes: list[str] = []
                token = _phases.own_io_begin()
                try:
                    workerfile.write_worker_file(path, document, fsync=final, root=self.root, notes=notes)
                finally:
                    _phases.own_io_end(token)
                    for note in notes:  # in the next snapshot's errors
                        self._record_error(f"snapshot: {note}")
            except Exception as error:
                self.note_failure(f"{type(error).__name__}: {error}")
                return False
            self.writes += 1
            self.last_success_ns = document["snapshot"]["last_success_unix_ns"]
            return True
        finally:
            self._writing = None
            self._lock.release()

    def note_failure(self, reason: str) -> None:
        self.failures += 1
        self.last_error = reason
        self._record_error(f"snapshot: {reason}")
        if not self._warned and not self.process.warned_unwritable:
            self._warned = True
            self.process.warned_unwritable = True
            try:
                import warnings  # here: only a run that cannot write needs it

                warnings.warn(
                    f"lineprofiler: cannot write the worker file ({reason}); counting in memory",
                    RuntimeWarning,
                    stacklevel=2,
                )
            except Exception:  # a warnings filter set to "error" must not break the caller
                pass

    # ------------------------------------------------------------------ the periodic thread

    def start_thread(self) -> None:
        if self.interval_s is None or self._thread is not None:
            return
        thread = self._thread = _Periodic(self, self.interval_s)
        thread.load = self.process.claim_loading()
        try:
            thread.start()
        except BaseException:
            self._thread = None
            if thread.load:
                self.process.release_loading()
            raise

    def stop_thread(self, timeout: float = 10.0, *, wait_os_thread: bool = False) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        thread.stop_event.set()
        if thread is threading.current_thread():
            return
        thread.join(timeout)
        if wait_os_thread and thread.native_id is not None:
            # join() can return while the OS thread is still unwinding; fork would then copy a
            # multi-threaded process (and 3.12+ warns): wait until it is gone.
            task = f"/proc/self/task/{thread.native_id}"
            deadline = time.monotonic() + 0.5
            while os.path.exists(task) and time.monotonic() < deadline:
                time.sleep(0.0005)


class _Periodic(threading.Thread):
    """Writes a snapshot every ``interval`` seconds until stopped. The first of a process first
    imports what the snapshots import late (``load``), forks waiting meanwhile."""

    #: Not a thread of the user's: see _process._other_python_threads.
    lineprofiler_own = True

    def __init__(self, writer: SnapshotWriter, interval: float) -> None:
        super().__init__(name="lineprofiler-snapshot", daemon=True)
        self.writer = writer
        self.interval = interval
        self.stop_event = threading.Event()
        self.load = False

    def run(self) -> None:
        if self.load:
            # The thread that started this one waits for the GIL to return from start(): give it
            # back first, so that the imports are not the constructor's to pay.
            time.sleep(0)
            self.writer.process.load_late()
        while not self.stop_event.wait(self.interval):
            try:
                before = self.writer.before_periodic
                if before is not None:
                    before()
                self.writer.write("running")
                after = self.writer.after_periodic
                if after is not None:
                    after()
            except BaseException:  # neither raises; this is the last guard
                return
