"""ResourceSampler: RSS, I/O counters and GPU utilisation once per interval, into sample files.

On Linux the sampling is native (:mod:`.._sampler`, made by :func:`open_sampler`: a C thread
that never takes the GIL, reading ``/proc/self`` through descriptors it keeps open). Where there is no ``/proc`` (macOS)
and psutil is importable, a Python thread samples psutil at the same interval instead
(:mod:`.psutil_sampler`): that path is Python, costs about 20 us of GIL time per sample, and has
no phase attribution. With neither, the sampler records why, and the report's memory and I/O
blocks say so instead of appearing.

The profiler attaches one ResourceSampler and calls, when it has them: ``start()``, ``stop()``,
``before_fork()``, ``after_fork_parent()``, ``after_fork_child()``, ``contribute(document)`` at
each snapshot (drains new rows, appends them to the sidecar file, fills ``document["samples"]``)
and ``close()``. None of them raises into the caller for an environmental failure: failures are
counted and reported in ``document["samples"]``.

Test seam (tests only): ``io_path``, ``statm_path`` and ``stat_path``; :mod:`.._sampling_testing`
points every sampler at a folder of stand-in ``/proc/self`` files, or at none.
"""

from __future__ import annotations

import os

from ...runfiles import layout, samplefile
from ...runfiles.samplefile import IntervalCounts, SampleWriter
from . import cpu

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

#: Where the samples come from (``source=``): the native reader of ``/proc``, psutil, or none.
SOURCES = ("auto", "proc", "psutil", "off")
_MAX_REFUSED = 8
DEFAULT_CAPACITY = 3600  # rows: an hour at 1 Hz between snapshots before the ring overwrites


# ------------------------------------------------------------------ the native sampler's Python side
# Whether the C module (Linux only) can run here, and making one; :func:`_choose_source` picks it
# where it can run, else the psutil fallback.

#: Where the native sampler reads; a platform without it (macOS) gets the psutil fallback.
PROC_SELF = "/proc/self"


def load_native() -> Any:
    """The C module; raises ImportError where it was not built or cannot load."""
    from .. import _sampler

    return _sampler


def native_import_error() -> str | None:
    """Why the C module cannot be imported, or None when it can."""
    try:
        load_native()
    except ImportError as error:
        return f"the native sampler cannot be imported ({error})"
    return None


def has_proc() -> bool:
    return os.path.isdir(PROC_SELF)


def thread_io() -> tuple[int, ...] | None:
    """The calling thread's I/O counters (``/proc/thread-self/io``, read by the C module), or
    None where they cannot be read."""
    try:
        return load_native().thread_io()
    except ImportError:
        return None


def open_sampler(
    interval_s: float,
    capacity: int,
    *,
    io_path: str | None = None,
    statm_path: str | None = None,
    stat_path: str | None = None,
    nvml: bool = True,
    timeline_hz: float = 0.0,
    cpu_stat_path: str | None = None,
) -> Any:
    """A native ``Sampler`` (see ``_sampler.pyi``), not started. The paths replace the
    ``/proc/self`` files it reads (None: the real ones); ``cpu_stat_path`` is the cgroup's
    ``cpu.stat`` (None: throttling is not measured)."""
    return load_native().Sampler(
        interval_s, capacity, io_path=io_path, statm_path=statm_path, stat_path=stat_path, nvml=nvml,
        timeline_hz=timeline_hz, cpu_stat_path=cpu_stat_path,
    )


def _choose_source(source: str) -> tuple[str | None, str | None]:
    """(source, reason it is None)."""
    if source == "off":
        return None, "resource sampling was turned off"
    if source in ("auto", "proc"):
        native_error = native_import_error()
        if native_error is None and (has_proc() or source == "proc"):
            return "proc", None
        if source == "proc":
            return None, native_error
    try:
        import psutil  # noqa: F401
    except ImportError:
        return None, (
            "no /proc on this platform and psutil is not installed "
            "(pip install with-line-profiler[resources])"
        )
    return "psutil", None


class _OwnWrites:
    """The context manager of :meth:`ResourceSampler.own_writes` (a class, not
    ``contextlib.contextmanager``: importing contextlib costs a profiler's start)."""

    __slots__ = ("_sampler", "_before")

    def __init__(self, sampler: ResourceSampler) -> None:
        self._sampler = sampler
        self._before: tuple[int, ...] | None = None

    def __enter__(self) -> None:
        self._before = thread_io()

    def __exit__(self, *exc_info: object) -> None:
        self._sampler._add_own(self._before, thread_io())


class ResourceSampler:
    """Samples this process's RSS, I/O counters and GPU use; writes them beside the worker file.

    ``run_dir`` is where worker files go: the sample file of a worker ``w_<...>.json`` is
    ``w_<...>.samples`` in the same folder. ``contribute`` may instead be given the worker file's
    path. ``interval_s`` is the sampling period; ``capacity`` the rows held between snapshots
    (older rows are overwritten, and counted, past it). ``source``: ``"auto"`` (native where
    ``/proc`` exists, else psutil), ``"proc"``, ``"psutil"`` or ``"off"`` (``backend=`` is its
    former name, still accepted); :attr:`source` is then the one in use, or None.

    Construction raises ValueError/TypeError for wrong arguments, never for the environment.
    """

    def __init__(
        self,
        run_dir: layout.RunPaths | str | os.PathLike[str] | None = None,
        *,
        interval_s: float = 1.0,
        capacity: int = DEFAULT_CAPACITY,
        source: str = "auto",
        nvml: bool = True,
        io_path: str | None = None,
        statm_path: str | None = None,
        stat_path: str | None = None,
        backend: str | None = None,
        timeline_hz: float = 0.0,
        cpu_stat_path: str | None = None,
    ) -> None:
        if backend is not None:  # the keyword's former name
            source = backend
        if source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not 0.001 <= interval_s <= 86400:
            raise ValueError("interval_s must be a number of seconds between 0.001 and 86400")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or not 2 <= capacity <= 1 << 24:
            raise ValueError("capacity must be an int between 2 and 16777216")
        # Text until a Path is asked for (see run_dir); the files in it are named by RunPaths.
        self._paths = None if run_dir is None else layout.RunPaths.of(run_dir)
        self.interval_s = float(interval_s)
        self.capacity = capacity
        self.timeline_hz = float(timeline_hz)
        self.source, self.unavailable_reason = _choose_source(source)
        self._impl: Any = None
        try:
            if self.source == "proc":
                self._impl = open_sampler(
                    self.interval_s, capacity, io_path=io_path, statm_path=statm_path, stat_path=stat_path, nvml=nvml,
                    timeline_hz=self.timeline_hz, cpu_stat_path=cpu_stat_path or cpu.cpu_stat_path(),
                )
            elif self.source == "psutil":
                from .psutil_sampler import PsutilSampler  # here: only a platform without /proc needs it

                self._impl = PsutilSampler(self.interval_s, capacity)
        except Exception as error:  # an environment that refuses even the set-up: record, never raise
            self.source, self._impl = None, None
            self.unavailable_reason = f"the sampler could not be set up: {error.__class__.__name__}: {error}"
        self._errors: list[str] = []
        self._reads_nvml = True  # until the start says otherwise: see before_crowded_fork
        self._forks_kept = 0  # crowded forks across which the native thread kept sampling
        self._cpus: dict[str, Any] | None = None  # samples.cpus, read once
        self._reset_output()

    def _reset_output(self) -> None:
        self._writer: SampleWriter | None = None
        self._pending = bytearray()
        self._pending_lost = 0
        self._counts = IntervalCounts()
        self._previous_ok: bool | None = None
        self._write_failures = 0
        self._last_write_error: str | None = None
        self._own_unmeasured = 0
        self._own_excluded = [0] * 5
        self._refused: list[str] = []
        self._started = False
        self._tl_writer: SampleWriter | None = None
        self._tl_pending = bytearray()
        self._tl_lost = 0
        self._tl_failures = 0

    # -- lifecycle (the profiler's attachment protocol) ----------------------------------------

    def start(self) -> None:
        if self._impl is None:
            return
        try:
            self._impl.start()
            self._started = True
            self._reads_nvml = self._native_reads_nvml()
        except Exception as error:
            self._note(f"sampler start failed: {error.__class__.__name__}: {error}")

    def stop(self) -> None:
        """Stop the thread. Takes a last row first, so the final snapshot covers up to now."""
        if self._impl is None:
            return
        try:
            if self._impl.running:
                self._impl.sample()
            self._impl.stop()
        except Exception as error:
            self._note(f"sampler stop failed: {error.__class__.__name__}: {error}")

    def before_fork(self) -> None:
        if self._impl is not None:
            try:
                self._impl.before_fork()
            except Exception as error:  # raised inside os.fork(): the user would see it
                self._note(f"sampler stop before fork failed: {error.__class__.__name__}: {error}")

    def after_fork_parent(self) -> None:
        if self._impl is not None:
            try:
                self._impl.after_fork_parent()
            except Exception as error:
                self._note(f"sampler restart after fork failed: {error.__class__.__name__}: {error}")

    def before_crowded_fork(self) -> None:
        """:meth:`before_fork` for a fork made while other threads run Python: the native thread
        keeps sampling across it unless it reads NVML. Stopping and restarting it costs the
        fork a wait for the OS to run it, which on a busy machine can outlast the forking
        thread's turn at the GIL, and then the fork waits behind every busy thread. It holds
        nothing else the child needs: the child initialises the sampler's locks and ring
        afresh, as after a fork made from C. An NVML call under way would leave the library's
        own locks held in the child."""
        if self.source == "proc" and not self._reads_nvml:
            self._forks_kept += 1
            return
        self.before_fork()

    def after_crowded_fork_parent(self) -> None:
        if self._forks_kept > 0:
            self._forks_kept -= 1
            return
        self.after_fork_parent()

    def after_fork_child(self) -> None:
        """The child samples itself into its own file, from an empty ring."""
        self._reset_output()
        self._errors = []
        self._forks_kept = 0
        if self._impl is not None:
            try:
                self._impl.after_fork_child()
                self._started = self._impl.running
                self._reads_nvml = self._native_reads_nvml()
            except Exception as error:
                self._note(f"sampler start in forked child failed: {error.__class__.__name__}: {error}")

    def _native_reads_nvml(self) -> bool:
        """Whether the native thread calls NVML at its ticks (it has devices to read); True
        when that cannot be told. Fixed from the sampler's start: read once, not at a fork."""
        if self.source != "proc":
            return True
        try:
            return bool(self._impl.stats().get("gpu_devices", 1))
        except Exception:
            return True

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()

    @property
    def run_dir(self) -> Path | None:
        """Where worker files go, as a Path (pathlib is imported here, not while a profiler starts)."""
        return None if self._paths is None else self._paths.path

    @property
    def backend(self) -> str | None:
        """The former name of :attr:`source`."""
        return self.source

    @property
    def running(self) -> bool:
        return self._impl is not None and bool(self._impl.running)

    def stats(self) -> dict[str, Any]:
        """The source's counters (see _sampler.pyi), or {} with no source."""
        return {} if self._impl is None else self._impl.stats()

    # -- own I/O --------------------------------------------------------------------------------

    def own_writes(self) -> _OwnWrites:
        """Bill the I/O of the enclosed block (this thread's only) to the profiler, not the user:
        ``with sampler.own_writes(): ...``.

        Reads ``/proc/thread-self/io`` before and after, so other threads' traffic in the
        meantime stays theirs. Use it around the profiler's own file writes.
        """
        return _OwnWrites(self)

    def _add_own(self, before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> None:
        if before is None or after is None or self._impl is None:
            self._own_unmeasured += 1
            return
        delta = [a - b for a, b in zip(after[:5], before[:5], strict=True)]
        delta[0] += after[5]  # the closing read itself
        self._impl.add_own_io(*delta)
        for i, v in enumerate(delta):
            self._own_excluded[i] += v

    # -- snapshots ------------------------------------------------------------------------------

    def _sidecar(self, document: dict[str, Any], path: str | os.PathLike[str] | None) -> tuple[Path, Path] | None:
        """(the sample file, the folder nothing below which is followed), or None."""
        if path is not None:
            sidecar = layout.sidecar_path(path)
            return sidecar, sidecar.parent
        if self._paths is None:
            return None
        ident = document.get("identity") or {}
        try:
            worker = self._paths.worker_file(ident["host"], ident["run_id"], ident["pid"], ident["uuid"])
            return self._paths.sidecar(worker), self._paths.path
        except (KeyError, TypeError, ValueError):
            return None

    def contribute(self, document: dict[str, Any], path: str | os.PathLike[str] | None = None) -> None:
        """Append the rows sampled since the last call to the sample file and describe it in
        ``document["samples"]``. Never raises for a failed write: the rows are kept (bounded by
        ``capacity``) for the next call, and the failure is counted."""
        try:
            self._contribute(document, path)
        except Exception as error:  # the guest rule: nothing reaches the user's code
            self._note(f"samples snapshot failed: {error.__class__.__name__}: {error}")
            document["samples"] = {
                "file": None,
                "format": samplefile.FORMAT,
                "unavailable_reason": f"the samples could not be written: {error}",
                "errors": list(self._errors),
            }

    def _contribute(self, document: dict[str, Any], path: str | os.PathLike[str] | None) -> None:
        impl = self._impl
        if impl is None:
            document["samples"] = samplefile.samples_document(
                file=None, columns=(), rows=0, size=0, interval_s=self.interval_s, source=None,
                counts=IntervalCounts(), clock=None, unavailable_reason=self.unavailable_reason,
            )
            return
        if impl.running:
            impl.sample()  # the snapshot covers up to this moment, not to the last tick
        data = impl.drain()
        columns = tuple(impl.columns)
        row_bytes = 8 * len(columns)
        if data:
            self._classify(data, columns)
            self._pending += data
            excess = len(self._pending) - self.capacity * row_bytes
            if excess > 0:
                # The file has been unwritable for a ring's worth of rows: keep the newest.
                excess += -excess % row_bytes
                del self._pending[:excess]
                self._pending_lost += excess // row_bytes
        # A start file (a fork child's: the parent's is written before the sampler is attached)
        # keeps its rows for the next snapshot: the sample file's Path would import pathlib
        # inside the child's fork hook, where a module another thread of the parent was
        # importing would never finish loading.
        times = document.get("times")
        starting = isinstance(times, dict) and times.get("status") == "started"
        located = None if starting else self._sidecar(document, path)
        sidecar = None if located is None else located[0]
        if located is not None and self._pending:
            sidecar, root = located
            if self._writer is None or self._writer.path != sidecar or self._writer.columns != columns:
                self._writer = SampleWriter(sidecar, columns, int(self.interval_s * 1e9), root=root)
            try:
                with self.own_writes():
                    # Made with its folders if missing: the profiler may describe a worker
                    # before its first file exists.
                    self._writer.append(bytes(self._pending))
                self._pending.clear()
            except OSError as error:
                self._write_failures += 1
                self._last_write_error = f"{sidecar}: {error.strerror or error}"
                if isinstance(error, layout.UnsafePathError) and len(self._refused) < _MAX_REFUSED:
                    self._refused.append(f"samples: {error.strerror}")
        timeline = self._contribute_timeline(impl, sidecar, None if located is None else located[1])
        # What was refused under the run directory is the whole worker file's business too.
        errors = document.get("errors")
        if self._refused and isinstance(errors, list):
            errors.extend(self._refused)
        stats = impl.stats()
        reason = self.unavailable_reason
        if not self._started:
            reason = reason or "the sampler was not started"
        elif sidecar is None and self._writer is None and not starting:
            reason = "no run directory or worker file path to write samples beside"
        elif stats.get("io_reason") and stats.get("rss_reason"):
            reason = f"{stats['io_reason']}; {stats['rss_reason']}"
        writer = self._writer
        document["samples"] = samplefile.samples_document(
            file=writer.path.name if writer is not None and writer.size else None,
            columns=columns,
            rows=0 if writer is None else writer.rows,
            size=0 if writer is None else writer.size,
            interval_s=self.interval_s,
            source=self.source,
            counts=self._counts,
            clock=None if writer is None else (writer.monotonic_ref_ns, writer.unix_ref_ns),
            unavailable_reason=reason,
            failed_reads={
                "io": stats.get("failed_io", 0), "rss": stats.get("failed_rss", 0), "stat": stats.get("failed_stat", 0)
            },
            overwritten=stats.get("overwritten", 0) + self._pending_lost,
            pending_rows=len(self._pending) // row_bytes,
            write_failures=self._write_failures,
            last_write_error=self._last_write_error,
            file_restarts=0 if writer is None else writer.restarts,
            io_unavailable_reason=stats.get("io_reason"),
            rss_unavailable_reason=stats.get("rss_reason"),
            reap_unavailable_reason=stats.get("stat_reason"),
            phase_unavailable_reason=stats.get("phase_reason"),
            gpu={
                "devices": stats.get("gpu_devices", 0),
                "reads": stats.get("gpu_reads", 0),
                "reads_skipped": stats.get("gpu_reads_skipped", 0),
                "unavailable_reason": stats.get("gpu_reason"),
            },
            own_io_excluded=dict(zip(samplefile.IO_FIELDS, self._own_excluded, strict=True)),
            own_io_unmeasured=self._own_unmeasured,
            thread_cpu_ns=stats.get("thread_cpu_ns"),
            timeline=timeline,
            errors=list(self._errors),
            **self._cpu_documents(impl, stats),
        )
        if timeline is not None:
            timeline.update(
                ticks=stats.get("timeline_ticks", 0),
                skipped_ticks=stats.get("timeline_skipped", 0),
                overwritten=stats.get("timeline_overwritten", 0) + self._tl_lost,
                threads_unpublished=stats.get("threads_unpublished", 0),
                unavailable_reason=timeline["unavailable_reason"] or stats.get("timeline_reason"),
            )

    def _cpu_documents(self, impl: Any, stats: dict[str, Any]) -> dict[str, Any]:
        """``off_cpu``, ``process_cpu`` and ``cpus`` (see :mod:`.cpu`)."""
        reason = None
        sched = None
        if not hasattr(impl, "sched"):
            reason = f"the {self.source} sampler does not read the scheduler's per-thread times"
        elif self.timeline_hz <= 0:
            reason = "timeline_hz is 0 (off): off-CPU time is attributed at the timeline's ticks"
        else:
            reason = stats.get("timeline_reason")
        if hasattr(impl, "sched"):
            sched = impl.sched()
        if self._cpus is None:
            self._cpus = cpu.cpus_document()
        from .. import _phases

        resolution = 1.0 / self.timeline_hz if self.timeline_hz > 0 else None
        return {
            "off_cpu": cpu.off_cpu_document(None if reason else sched, resolution, _phases.path_of, reason),
            "process_cpu": cpu.process_cpu_document(sched, reason if sched is None else None),
            "cpus": self._cpus,
        }

    def _contribute_timeline(self, impl: Any, sidecar: Path | None, root: Path | None) -> dict[str, Any] | None:
        """Appends the phase-occupancy rows drained since the last call to the ``.timeline``
        file beside the sample file; returns ``samples["timeline"]`` (None: the source has none)."""
        drain = getattr(impl, "drain_timeline", None)
        if drain is None:
            return None
        reason = None if self.timeline_hz > 0 else "timeline_hz is 0 (off)"
        data = drain()
        columns = tuple(samplefile.TIMELINE_COLUMNS)
        row_bytes = 8 * len(columns)
        self._tl_pending += data
        excess = len(self._tl_pending) - samplefile.TIMELINE_PENDING_ROWS * row_bytes
        if excess > 0:
            excess += -excess % row_bytes
            del self._tl_pending[:excess]
            self._tl_lost += excess // row_bytes
        if sidecar is not None and root is not None and self._tl_pending:
            path = sidecar.with_name(sidecar.name.removesuffix(layout.SAMPLES_SUFFIX) + layout.TIMELINE_SUFFIX)
            if self._tl_writer is None or self._tl_writer.path != path:
                self._tl_writer = SampleWriter(path, columns, int(1e9 / self.timeline_hz), root=root)
            try:
                with self.own_writes():
                    self._tl_writer.append(bytes(self._tl_pending))
                self._tl_pending.clear()
            except OSError as error:
                self._tl_failures += 1
                self._last_write_error = f"{path}: {error.strerror or error}"
        writer = self._tl_writer
        return {
            "file": writer.path.name if writer is not None and writer.size else None,
            "format": samplefile.FORMAT,
            "columns": list(columns),
            "hz": self.timeline_hz,
            "rows": 0 if writer is None else writer.rows,
            "bytes": 0 if writer is None else writer.size,
            "clock": (
                None if writer is None else {"monotonic_ns": writer.monotonic_ref_ns, "unix_ns": writer.unix_ref_ns}
            ),
            "write_failures": self._tl_failures,
            "pending_rows": len(self._tl_pending) // row_bytes,
            "unavailable_reason": reason,
        }

    def _classify(self, data: bytes, columns: tuple[str, ...]) -> None:
        from array import array

        rows = array("q", data)
        n = len(columns)
        rchar = rows[columns.index("rchar") :: n]
        flags = rows[columns.index("flags") :: n]
        _breaks, counts = samplefile.classify(
            samplefile.sign_bytes(rchar), samplefile.low_bytes(flags), self._previous_ok
        )
        self._counts.add(counts)
        self._previous_ok = rchar[-1] >= 0

    def _note(self, message: str) -> None:
        if len(self._errors) < 20:
            self._errors.append(message)
