"""``Profiler``: the always-on accounting layer's public face.

The C module ``_phases`` records; this module decides what to record into, when to write it
down, and how to survive the process's life: fork, signals, exit, an unwritable disk. It never
raises into user code after construction, and construction raises only for bad arguments.

Process-wide wiring (signal handlers, fork hooks, the exit flush) is installed once, by the
first enabled profiler, and serves every live profiler of the process.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..runfiles import histogram, samplefile, workerfile
from . import _phases
from .identity import Identity, RunId, build_identity, clean_role, parent_run_id, resolve_host, resolve_run_id
from .sampling import ResourceSampler

__all__ = ["Profiler"]

ENV_PROFILE = "LINEPROFILER_PROFILE"
ENV_RUN_DIR = "LINEPROFILER_RUN_DIR"
ENV_RUN_ID = "LINEPROFILER_RUN_ID"
ENV_ATTEMPT = "LINEPROFILER_ATTEMPT"
DEFAULT_RUN_DIR = "profile"
DEFAULT_SNAPSHOT_INTERVAL_S = 5.0
DEFAULT_SAMPLE_INTERVAL_S = 1.0
FLUSH_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGHUP")
_BACKENDS = ("none", "torch", "viztracer")
_MAX_ERRORS = 32
_MP_EXIT_PRIORITY = -100  # after multiprocessing joins its children, before os._exit
METADATA_DIR = "metadata"  # run_dir/metadata/<host>/m_<run>_<pid>_<uuid8>.json, one per process


def _env_enabled(value: str | None) -> bool:
    if value is None:
        return True
    return value.strip().lower() not in ("0", "false", "no", "off")


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _check_backend_combination(backend: str | None, window: tuple[int, int] | None, window_phase: str | None) -> None:
    """A backend needs its window and the phase that counts it; a window needs a backend.

    ``window_phase`` alone is fine: the report also uses it to pick the ITERATIONS phase.
    """
    if backend is None:
        if window is not None:
            raise ValueError("backend_window needs a backend ('torch' or 'viztracer')")
        return
    if window is None:
        raise ValueError(f"backend={backend!r} needs backend_window=(start, stop)")
    if window_phase is None:
        raise ValueError(f"backend={backend!r} needs window_phase: the phase whose entries open and close the window")
    if not window_phase or "/" in window_phase:
        raise ValueError(f"window_phase must be a phase's own name (no '/'), not {window_phase!r}")


def _backend_name(backend: object) -> str | None:
    if backend is None:
        return None
    value = getattr(backend, "value", backend)  # accepts an enum whose values are the names
    if not isinstance(value, str):
        raise TypeError(f"backend must be a str, an enum of str or None, not {type(backend).__name__}")
    name = value.strip().lower()
    if name not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(_BACKENDS)}, not {value!r}")
    return None if name == "none" else name


class Profiler:
    """The accounting profiler of one process.

    ``Profiler(run_dir=None, role=None, enabled=None, measure_cpu=True, *, backend=None,
    backend_window=None, window_phase=None, annotate=False, snapshot_interval_s=5.0,
    sample_interval_s=1.0,
    max_paths=10000, max_counters=10000)``

    An enabled profiler records from construction: ``profiler.phase(name)`` and
    ``profiler.count(name, n)`` work with or without ``with profiler:`` around them. Its
    worker file is written at construction (status ``"started"``), every
    ``snapshot_interval_s`` from a background thread, on SIGTERM/SIGUSR1/SIGHUP and at exit.

    Defaults come from ``LINEPROFILER_RUN_DIR`` (else ``"profile"``), ``LINEPROFILER_ROLE``
    (else ``"main"``) and ``LINEPROFILER_PROFILE`` (``0`` disables). Enabling exports
    ``LINEPROFILER_PROFILE=1``, ``LINEPROFILER_RUN_DIR`` and ``LINEPROFILER_RUN_ID`` so that
    spawned children join the same run.
    """

    # phase() and count() are bound C methods stored on the instance (see __init__), so a call
    # costs no Python frame; these class-level definitions document them and serve the closed
    # profiler.
    def phase(self, name: str, io: bool = False, sync: bool = False) -> Any:
        """A context manager timing the named phase (nested phases build paths ``a/b/c``)."""
        return self._noop.phase(name, io, sync)

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name`` under the phase open in this thread."""
        self._noop.count(name, n)

    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None = None,
        role: str | None = None,
        enabled: bool | None = None,
        measure_cpu: bool = True,
        *,
        backend: object = None,
        backend_window: Sequence[int] | None = None,
        window_phase: str | None = None,
        annotate: bool = False,
        snapshot_interval_s: float | None = DEFAULT_SNAPSHOT_INTERVAL_S,
        sample_interval_s: float | None = DEFAULT_SAMPLE_INTERVAL_S,
        max_paths: int = _phases.DEFAULT_MAX_PATHS,
        max_counters: int = _phases.DEFAULT_MAX_COUNTERS,
    ) -> None:
        # --- arguments: wrong ones raise, before anything is touched
        if run_dir is not None and not isinstance(run_dir, (str, os.PathLike)):
            raise TypeError(f"run_dir must be a str, a path or None, not {type(run_dir).__name__}")
        if role is not None and not isinstance(role, str):
            raise TypeError(f"role must be a str or None, not {type(role).__name__}")
        if enabled is not None:
            _check_bool("enabled", enabled)
        _check_bool("measure_cpu", measure_cpu)
        _check_bool("annotate", annotate)
        backend_name = _backend_name(backend)
        window: tuple[int, int] | None = None
        if backend_window is not None:
            try:
                start, stop = backend_window
            except (TypeError, ValueError):
                raise TypeError("backend_window must be a (start, stop) pair of ints") from None
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, stop)):
                raise TypeError("backend_window must be a (start, stop) pair of ints")
            if not 1 <= start < stop:
                raise ValueError(f"backend_window must satisfy 1 <= start < stop, got {backend_window!r}")
            window = (start, stop)
        if window_phase is not None and not isinstance(window_phase, str):
            raise TypeError(f"window_phase must be a str or None, not {type(window_phase).__name__}")
        _check_backend_combination(backend_name, window, window_phase)
        if snapshot_interval_s is not None:
            if isinstance(snapshot_interval_s, bool) or not isinstance(snapshot_interval_s, (int, float)):
                raise TypeError("snapshot_interval_s must be a number or None")
            if not snapshot_interval_s > 0:
                raise ValueError(f"snapshot_interval_s must be positive, got {snapshot_interval_s!r}")
        if sample_interval_s is not None:
            if isinstance(sample_interval_s, bool) or not isinstance(sample_interval_s, (int, float)):
                raise TypeError("sample_interval_s must be a number or None")
            if not 0.001 <= sample_interval_s <= 86400:
                raise ValueError(f"sample_interval_s must be within 0.001..86400 seconds, got {sample_interval_s!r}")
        for label, cap in (("max_paths", max_paths), ("max_counters", max_counters)):
            if isinstance(cap, bool) or not isinstance(cap, int):
                raise TypeError(f"{label} must be an int")
            if not 1 <= cap <= 1_000_000:
                raise ValueError(f"{label} must be within 1..1000000, got {cap}")

        self._noop = _phases.Noop()
        self.enabled: bool = enabled if enabled is not None else _env_enabled(os.environ.get(ENV_PROFILE))
        self.measure_cpu = measure_cpu
        self.backend = backend_name
        self.backend_window = window
        self.window_phase = window_phase
        self.annotate = annotate
        self.snapshot_interval_s = None if snapshot_interval_s is None else float(snapshot_interval_s)
        self.sample_interval_s = None if sample_interval_s is None else float(sample_interval_s)
        self.max_paths = max_paths
        self.max_counters = max_counters
        self.run_dir = Path(os.path.abspath(os.fspath(run_dir or os.environ.get(ENV_RUN_DIR) or DEFAULT_RUN_DIR)))
        self._role_arg = role
        self.role = clean_role(role)
        self.recorder: _phases.Recorder | None = None
        self.identity: Identity | None = None
        self.path: Path | None = None
        self._attachments: list[Any] = []
        self._errors: list[str] = []
        self._errors_dropped = 0
        self._closed = False
        self._final_done = False
        self._signal_name: str | None = None
        self._thread: _Snapshotter | None = None
        self._lock = threading.RLock()
        self._writes = 0
        self._failures = 0
        self._last_error: str | None = None
        self._last_success_ns: int | None = None
        self._warned = False
        self._mp_registered = False
        self._restart_attempts = 0
        self._inherited = False  # a copy made by fork: see _Process.register
        self._fork_parent_pid: int | None = None
        self._sync_fn: Callable[[], object] | None = None
        self._annotator: Any = None  # gpu.Annotator, with annotate=True
        self.window: Any = None  # windows.Window, with backend=...
        self.phase = self._noop.phase  # type: ignore[method-assign]
        self.count = self._noop.count  # type: ignore[method-assign]
        if not self.enabled:
            return

        self._run: RunId = resolve_run_id()
        if self._run.source == "generated":
            # A forkserver child whose server predates the parent's profiler: join the parent.
            self._run = parent_run_id(self.run_dir, resolve_host()) or self._run
        os.environ[ENV_PROFILE] = "1"
        os.environ[ENV_RUN_DIR] = str(self.run_dir)
        os.environ[ENV_RUN_ID] = self._run.run_id
        os.environ[ENV_ATTEMPT] = str(self._run.attempt)
        self.recorder = _phases.Recorder(measure_cpu=measure_cpu, max_paths=max_paths, max_counters=max_counters)
        self.recorder.make_primary()
        self.phase = self.recorder.phase  # type: ignore[method-assign]
        self.count = self.recorder.count  # type: ignore[method-assign]
        # Hooks and attachments before the start file, so that it already carries them.
        self._wire()
        self._begin_process()
        _Process.register(self)
        self._attach_sampler()
        self._write_metadata()

    # ------------------------------------------------------------------ lifetime

    def _begin_process(self) -> None:
        """Identity, times and the start file of this process (again in a fork child)."""
        self.identity = build_identity(self._role_arg, self._run)
        self.path = workerfile.worker_dir(self.run_dir, self.identity.host) / workerfile.worker_file_name(
            self.identity.run_id, self.identity.pid, self.identity.uuid
        )
        self._start_unix_ns = time.time_ns()
        self._start_mono_ns = time.monotonic_ns()
        self._prepare_dir()
        self._write("started")
        self._start_thread()

    def _prepare_dir(self) -> None:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            self._note_write_failure(f"cannot create {self.path.parent}: {error.strerror or error}")

    def _start_thread(self) -> None:
        if self.snapshot_interval_s is None or self._closed or self._thread is not None:
            return
        self._thread = _Snapshotter(self, self.snapshot_interval_s)
        self._thread.start()

    def _stop_thread(self, timeout: float = 10.0, *, wait_os_thread: bool = False) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop_event.set()
            if thread is not threading.current_thread():
                thread.join(timeout)
                if wait_os_thread and thread.native_id is not None:
                    # join() can return while the OS thread is still unwinding; fork would
                    # then copy a multi-threaded process (and 3.12+ warns): wait until it is gone.
                    task = f"/proc/self/task/{thread.native_id}"
                    deadline = time.monotonic() + 0.5
                    while os.path.exists(task) and time.monotonic() < deadline:
                        time.sleep(0.0005)

    def close(self) -> None:
        """Write the final snapshot, stop the snapshot thread and attachments, stop recording.

        Idempotent; ``with profiler:`` calls it on exit. Later phases and counts are no-ops.
        """
        if not self.enabled or self._closed:
            return
        self._final_flush()
        self._write_metadata(final=True)
        self._stop_recording()
        _Process.unregister(self)

    def _stop_recording(self) -> None:
        """Stop the snapshot thread and the attachments; phase and count become no-ops."""
        self._closed = True
        self._stop_thread()
        self._call_attachments("close")
        if self.recorder is not None:
            self.recorder.stop()
        self.phase = self._noop.phase  # type: ignore[method-assign]
        self.count = self._noop.count  # type: ignore[method-assign]

    def _retire(self) -> None:
        """Step aside without a final snapshot, removing the start file written in this process."""
        self._final_done = True
        self._stop_recording()
        if self.path is not None:
            # The start file and any sample file this copy began: the process's own profiler
            # writes its own.
            for path in (self.path, self.path.with_name(samplefile.sidecar_name(self.path.name))):
                try:
                    path.unlink()
                except OSError:
                    pass
        _Process.unregister(self)

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.enabled:
            return "<Profiler disabled>"
        return f"<Profiler role={self.role!r} run={self._run.run_id!r} path={str(self.path)!r}>"

    @property
    def run_id(self) -> str | None:
        return self._run.run_id if self.enabled else None

    # ------------------------------------------------------------------ snapshots

    def flush(self) -> bool:
        """Write a snapshot now; True when it was written. Never raises."""
        if not self.enabled or self._closed:
            return False
        return self._write("running")

    def _final_flush(self) -> None:
        if self._final_done:
            return
        self._final_done = True
        self._stop_thread()
        self._call_attachments("stop")
        self._write("exited", final=True)

    def _flush_for_signal(self, name: str, *, ending: bool = False) -> None:
        self._signal_name = name
        if ending:
            # The signal's default action ends the process next, with no atexit: stop the
            # attachments as an exit would, so an open backend window writes its trace and the
            # sampler takes its last row. A signal the process survives leaves them running.
            self._call_attachments("stop")
        self._write("signalled", final=True)

    def _write(self, status: str, *, final: bool = False) -> bool:
        """Build and write one snapshot; count failures, never raise (bar KeyboardInterrupt)."""
        if self.path is None:
            return False
        if not self._lock.acquire(timeout=10.0):
            self._note_write_failure("snapshot lock not acquired within 10 s")
            return False
        try:
            try:
                document = self._document(status, final)
                data_path = self.path
                if not data_path.parent.is_dir():
                    self._prepare_dir()
                token = _phases.own_io_begin()
                try:
                    workerfile.write_worker_file(data_path, document, fsync=final)
                finally:
                    _phases.own_io_end(token)
            except Exception as error:
                self._note_write_failure(f"{type(error).__name__}: {error}")
                return False
            self._writes += 1
            self._last_success_ns = document["snapshot"]["last_success_unix_ns"]
            return True
        finally:
            self._lock.release()

    def _note_write_failure(self, reason: str) -> None:
        self._failures += 1
        self._last_error = reason
        self._record_error(f"snapshot: {reason}")
        if not self._warned and not _Process.warned_unwritable:
            self._warned = True
            _Process.warned_unwritable = True
            try:
                warnings.warn(
                    f"lineprofiler: cannot write the worker file ({reason}); counting in memory",
                    RuntimeWarning,
                    stacklevel=2,
                )
            except Exception:  # a warnings filter set to "error" must not break the caller
                pass

    def _record_error(self, text: str) -> None:
        if len(self._errors) < _MAX_ERRORS:
            self._errors.append(text)
        else:
            self._errors_dropped += 1

    def _document(self, status: str, final: bool) -> dict[str, Any]:
        assert self.recorder is not None and self.identity is not None
        snap = self.recorder.snapshot()
        now_ns = time.time_ns()
        document: dict[str, Any] = {
            "schema_version": workerfile.SCHEMA_VERSION,
            "kind": workerfile.KIND,
            "identity": dict(self.identity.to_json(), fork_parent_pid=self._fork_parent_pid),
            "times": {
                "start_unix_ns": self._start_unix_ns,
                "last_flush_unix_ns": now_ns,
                "elapsed_ns": time.monotonic_ns() - self._start_mono_ns,
                "end_unix_ns": now_ns if final else None,
                "status": status,
                "signal": self._signal_name,
            },
            "snapshot": {
                "interval_s": self.snapshot_interval_s,
                # the document is only ever read if this very write succeeds
                "writes": self._writes + 1,
                "failures": self._failures,
                "last_error": self._last_error,
                "last_success_unix_ns": now_ns,
            },
            "config": {
                "measure_cpu": self.measure_cpu,
                "cpu_clock": _phases.cpu_clock_source() if self.measure_cpu else None,
                "window_phase": self.window_phase,
                "backend": self.backend,
                "backend_window": list(self.backend_window) if self.backend_window else None,
                "annotate": self.annotate,
                "max_paths": self.max_paths,
                "max_counters": self.max_counters,
            },
            "histogram": {"scheme": histogram.SCHEME, "n_buckets": histogram.N_BUCKETS},
            "phases": snap["phases"],
            "counters": snap["counters"],
            "caps": snap["caps"],
            "repairs": snap["repairs"],
            "samples": None,
            "gpu": None,
            "own_io_excluded": _phases.own_io(),
            "own_io_subtracted": snap["own_io_subtracted"],
            "errors": [],
        }
        self._call_attachments("contribute", document)
        errors = list(self._errors) + list(snap["errors"])
        dropped = self._errors_dropped + snap["errors_dropped"]
        if dropped:
            errors.append(f"{dropped} more errors not kept")
        document["errors"] = errors
        return document

    # ------------------------------------------------------------------ attachments and hooks

    def _attach_sampler(self) -> None:
        """The resource sampler (RSS, /proc I/O, NVML): a native thread whose rows each snapshot
        appends beside the worker file. ``sample_interval_s=None`` leaves it out."""
        if self.sample_interval_s is None:
            return
        try:
            sampler = ResourceSampler(self.run_dir, interval_s=self.sample_interval_s)
        except Exception as error:  # the environment never makes construction raise
            self._errors.append(f"resource sampler not started: {type(error).__name__}: {error}")
            return
        self.add_attachment(sampler)

    def add_attachment(self, attachment: Any) -> None:
        """Attach an object that lives and dies with this profiler (the sampler, a backend).

        Any of these optional methods is called, and a failure in one is recorded in the
        worker file's ``errors``, never raised: ``start()`` (now, if recording), ``stop()``
        (before the final flush), ``before_fork()``, ``after_fork_parent()``,
        ``after_fork_child()``, ``contribute(document)`` (at each snapshot: add keys such as
        ``"samples"`` or ``"gpu"``), ``close()``.
        """
        if not self.enabled or self._closed:
            return
        self._attachments.append(attachment)
        self._call_one(attachment, "start")

    def _call_attachments(self, method: str, *args: Any) -> None:
        for attachment in list(self._attachments):
            self._call_one(attachment, method, *args)

    def _call_one(self, attachment: Any, method: str, *args: Any) -> None:
        fn = getattr(attachment, method, None)
        if fn is None:
            return
        try:
            fn(*args)
        except Exception as error:
            self._record_error(f"attachment {type(attachment).__name__}.{method}: {type(error).__name__}: {error}")

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

    # ------------------------------------------------------------------ GPU, annotate, backend window

    def _wire(self) -> None:
        """Connect the optional pieces to the core's hooks; a failure is recorded, never raised.

        * ``set_sync(gpu.make_sync())``: None (no cost at all) unless torch is installed; a
          pending check when it is installed but not imported yet.
        * ``annotate=True``: a :class:`gpu.Annotator`, combined with the window's hooks.
        * ``backend=...``: a :class:`windows.Window` watching ``window_phase``, attached so that
          it is cut and written at exit and restarted in a fork child.
        * a :class:`gpu.GpuAttachment` (VRAM where the user's torch runs CUDA; NVML facts).
        """
        from . import capabilities, gpu, windows  # not at import: a disabled profiler never loads them

        try:
            self._sync_fn = gpu.make_sync()
            self.set_sync(self._sync_fn)
        except Exception as error:
            self._record_error(f"sync hook: {type(error).__name__}: {error}")
        if self.annotate:
            try:
                self._annotator = gpu.Annotator()
            except Exception as error:
                self._record_error(f"annotate: {type(error).__name__}: {error}")
        if self.backend is not None and self.backend_window is not None and self.window_phase is not None:
            try:
                self.window = windows.Window(
                    self.backend, self.run_dir, self.backend_window, self.window_phase, host=self._host()
                )
            except Exception as error:
                self._record_error(f"backend window: {type(error).__name__}: {error}")
            if self.window is not None:
                if self.window.state != "unavailable":
                    self.set_watch(self.window_phase, self.window.on_entry)
                self.add_attachment(self.window)  # also when unavailable: the worker file says why
        annotator = self._annotator
        if annotator is not None and annotator.nvtx_source is None and not capabilities.torch().available:
            # Neither NVTX nor a torch that could ever be imported: hooks would only cost time.
            annotator = None
        try:
            enter, exit_ = windows.annotate_hooks(annotator, self.window)
            if enter is not None or exit_ is not None:
                self.set_annotate(enter, exit_)
        except Exception as error:
            self._record_error(f"annotate hooks: {type(error).__name__}: {error}")
        try:
            self.add_attachment(gpu.GpuAttachment())
        except Exception as error:
            self._record_error(f"GPU attachment: {type(error).__name__}: {error}")

    @staticmethod
    def _host() -> str:
        from .identity import resolve_host

        return workerfile.sanitize_component(resolve_host(), "unknown-host")

    def metadata_path(self) -> Path | None:
        """This process's own metadata file, ``run_dir/metadata/<host>/m_<run>_<pid>_<uuid8>.json``
        (named after its worker file), or None when disabled."""
        if self.path is None or self.identity is None:
            return None
        return self.run_dir / METADATA_DIR / self.path.parent.name / ("m" + self.path.name[1:])

    def _metadata_extra(self, final: bool) -> dict[str, Any]:
        from . import gpu

        assert self.identity is not None and self.path is not None
        if self._annotator is not None:
            annotate: dict[str, Any] = {"requested": True, **self._annotator.describe()}
            if annotate.get("nvtx") is None and not annotate.get("record_function"):
                from . import capabilities

                annotate["unavailable_reason"] = (
                    f"no NVTX ({capabilities.nvtx().unavailable_reason}) and no record_function (torch is not imported)"
                )
        else:
            annotate = {"requested": self.annotate}
        return {
            "run_id": self.identity.run_id,
            "attempt": self.identity.attempt,
            "role": self.identity.role,
            "worker_file": self.path.relative_to(self.run_dir).as_posix(),
            "final": final,
            "profiler": {
                "measure_cpu": self.measure_cpu,
                "snapshot_interval_s": self.snapshot_interval_s,
                "annotate": self.annotate,
                "backend": self.backend,
                "backend_window": list(self.backend_window) if self.backend_window else None,
                "window_phase": self.window_phase,
            },
            "backend": self.window.describe() if self.window is not None else None,
            "sync": gpu.describe_sync(self._sync_fn),
            "annotate": annotate,
        }

    def _write_metadata(self, *, final: bool = False) -> None:
        """This process's ``metadata/<host>/m_….json``, and ``run_dir/metadata.json``.

        Every process writes its own file (a unique name: no two processes ever write the same
        one). ``metadata.json`` is the run's summary, written by the first process of a run to
        get there: a process rewrites it only when it does not already name this run and attempt
        (a rerun into the same directory replaces it). Both are written to a temporary name and
        renamed, so a reader never sees half a file; two processes of a new run racing on
        ``metadata.json`` each leave a complete file of the run. The report never needs either.
        Failures (an unwritable run dir) are recorded in the worker file's ``errors``.
        """
        if self.identity is None:
            return
        try:
            from . import capabilities

            extra = self._metadata_extra(final)
            own = self.metadata_path()
            assert own is not None
            capabilities.write_metadata(self.run_dir, extra, relative=own.relative_to(self.run_dir).as_posix())
            if not final:
                current = capabilities.read_metadata(self.run_dir / capabilities.METADATA_FILE)
                if current is None or (current.get("run_id"), current.get("attempt")) != (
                    self.identity.run_id,
                    self.identity.attempt,
                ):
                    capabilities.write_metadata(self.run_dir, extra)
        except Exception as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            self._record_error(f"metadata: {type(error).__name__}: {reason}")

    # ------------------------------------------------------------------ fork

    def _before_fork(self) -> None:
        # The snapshot thread must not be mid-write, holding the lock, when the process is
        # copied: stop it (it finishes its write first) and restart it on both sides.
        self._stop_thread(wait_os_thread=True)
        self._call_attachments("before_fork")

    def _after_fork_parent(self) -> None:
        # Restarted from a pending call, once os.fork() has returned: a thread started inside
        # the fork hook would be counted by 3.13's "multi-threaded fork" check after the fact.
        self._restart_attempts = 0
        # Only 3.12+ has that check. On 3.11 a pending call that re-queues itself while a trace
        # or profile function is set (VizTracer, coverage, a debugger) spins forever: the
        # re-queued call keeps the eval breaker set and 3.11's traced dispatch re-runs RESUME.
        if sys.version_info < (3, 12) or not _phases.defer(self._restart_after_fork):
            self._start_thread()
        self._call_attachments("after_fork_parent")

    def _restart_after_fork(self) -> None:
        # A pending call runs at the next bytecode boundary, which may still be inside another
        # fork hook: defer again while the frame that called os.fork() is below the running one.
        if self.identity is None or self.identity.pid != os.getpid():
            # Queued in the parent and inherited by a child forked (from another thread) before
            # it ran: it may fire inside threading's own after-fork reset, and a thread started
            # there is lost to it. The child's own fork hook starts the child's thread.
            return
        caller = _Process.fork_caller
        frame = sys._getframe(1) if caller is not None else None
        inside = False
        f = frame
        while f is not None:
            if f is caller:
                inside = f is not frame
                break
            f = f.f_back
        self._restart_attempts += 1
        if inside and self._restart_attempts < 100_000 and _phases.defer(self._restart_after_fork):
            return
        _Process.fork_caller = None
        self._start_thread()

    def _after_fork_child(self) -> None:
        _Process.fork_caller = None
        # The lock may have been copied while held by a thread that does not exist here.
        self._lock = threading.RLock()
        self._inherited = True
        self._fork_parent_pid = self.identity.pid if self.identity is not None else None
        self._thread = None
        self._writes = 0
        self._failures = 0
        self._last_error = None
        self._last_success_ns = None
        self._errors = []
        self._errors_dropped = 0
        self._signal_name = None
        self._final_done = False
        if self.recorder is not None:
            self.recorder.reset()
            self.recorder.make_primary()
        # Attachments first: the child's start file below asks them to contribute, so they must
        # have forgotten the parent's state (a window's progress, VRAM peaks), and a sampler
        # must have reopened this process's /proc descriptors and emptied its ring.
        self._call_attachments("after_fork_child")
        self._begin_process()
        self._mp_registered = False
        _Process.mp_register(self)


class _Snapshotter(threading.Thread):
    """Writes a snapshot every ``interval`` seconds until stopped."""

    def __init__(self, profiler: Profiler, interval: float) -> None:
        super().__init__(name="lineprofiler-snapshot", daemon=True)
        self.profiler = profiler
        self.interval = interval
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            try:
                self.profiler._write("running")
            except BaseException:  # the writer never raises; this is the last guard
                return


class _Process:
    """What is installed once per process for all live profilers: signals, fork, exit."""

    active: list[Profiler] = []
    installed = False
    warned_unwritable = False
    previous_handlers: dict[int, Any] = {}
    fork_caller: Any = None
    handler_errors: list[str] = []

    @classmethod
    def register(cls, profiler: Profiler) -> None:
        # A fork child that builds its own profiler (a multiprocessing worker constructing
        # Profiler(role="actor")) is one process: the copy inherited from the parent steps aside
        # if it has recorded nothing here, so the child is not counted twice.
        for other in list(cls.active):
            if other._inherited and other.recorder is not None and other.recorder.empty:
                other._retire()
        cls.active.append(profiler)
        if not cls.installed:
            cls.installed = True
            atexit.register(cls.at_exit)
            os.register_at_fork(
                before=cls.before_fork, after_in_parent=cls.after_fork_parent, after_in_child=cls.after_fork_child
            )
        cls.install_signals(profiler)
        cls.mp_register(profiler)

    @classmethod
    def unregister(cls, profiler: Profiler) -> None:
        if profiler in cls.active:
            cls.active.remove(profiler)
        if not cls.active:
            cls.restore_signals()

    # --- signals

    @classmethod
    def install_signals(cls, profiler: Profiler) -> None:
        if threading.current_thread() is not threading.main_thread():
            profiler._record_error("signal handlers not installed: profiler constructed outside the main thread")
            return
        for name in FLUSH_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None or signum in cls.previous_handlers:
                continue
            try:
                previous = signal.getsignal(signum)
                if previous is None:
                    profiler._record_error(f"{name}: a handler installed outside Python is kept; no flush on {name}")
                    continue
                signal.signal(signum, cls.on_signal)
                cls.previous_handlers[signum] = previous
            except (ValueError, OSError) as error:
                profiler._record_error(f"{name}: handler not installed: {error}")

    @classmethod
    def restore_signals(cls) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in list(cls.previous_handlers.items()):
            try:
                if signal.getsignal(signum) == cls.on_signal:
                    signal.signal(signum, previous)
                    del cls.previous_handlers[signum]
            except (ValueError, OSError):
                pass

    @classmethod
    def on_signal(cls, signum: int, frame: Any) -> None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        previous = cls.previous_handlers.get(signum, signal.SIG_DFL)
        ending = not callable(previous) and previous != signal.SIG_IGN
        for profiler in list(cls.active):
            try:
                profiler._flush_for_signal(name, ending=ending)
            except Exception:
                pass
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        else:
            # The default action (terminate, for all three): end the process exactly as it
            # would have ended, by the signal itself, so the parent sees it in the exit status.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    # --- exit

    @classmethod
    def at_exit(cls) -> None:
        for profiler in list(cls.active):
            try:
                profiler.close()
            except Exception:
                pass

    @classmethod
    def mp_register(cls, profiler: Profiler) -> None:
        """multiprocessing's fork and forkserver children end with os._exit (no atexit):
        flush from its exit finalizers instead, re-registered after its post-fork reset."""
        util = sys.modules.get("multiprocessing.util")
        if util is None or profiler._mp_registered:
            return
        profiler._mp_registered = True
        try:
            util.Finalize(None, profiler.close, exitpriority=_MP_EXIT_PRIORITY)
            util.register_after_fork(profiler, cls._mp_after_fork)
        except Exception as error:
            profiler._record_error(f"multiprocessing exit hook: {error}")

    @staticmethod
    def _mp_after_fork(profiler: Profiler) -> None:
        util = sys.modules.get("multiprocessing.util")
        if util is not None and profiler in _Process.active:
            util.Finalize(None, profiler.close, exitpriority=_MP_EXIT_PRIORITY)

    # --- fork

    @classmethod
    def before_fork(cls) -> None:
        try:
            cls.fork_caller = sys._getframe(1)  # the frame that called os.fork()
        except ValueError:
            cls.fork_caller = None
        for profiler in list(cls.active):
            try:
                cls.mp_register(profiler)  # multiprocessing may have been imported since
                profiler._before_fork()
            except Exception:
                pass

    @classmethod
    def after_fork_parent(cls) -> None:
        for profiler in list(cls.active):
            try:
                profiler._after_fork_parent()
            except Exception:
                pass

    @classmethod
    def after_fork_child(cls) -> None:
        try:
            _phases.after_fork_child()
        except Exception:
            pass
        for profiler in list(cls.active):
            try:
                profiler._after_fork_child()
            except Exception:
                traceback.print_exc()
