"""The psutil resource sampler: the fallback where the native one cannot run (no ``/proc``:
macOS), with the native ``Sampler``'s interface.

Python, on a Python thread: a sample costs about 20 us of GIL time, and rows have no phase
attribution. The package's :class:`~lineprofiler.accounting.sampling.ResourceSampler` picks it;
psutil itself is imported when one is made.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
import time
from collections import deque

from ...runfiles.samplefile import BASE_COLUMNS, FLAG_SEGMENT_START
from . import thread_io

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from typing import Any


def _wait_gone(tid: int | None, timeout_s: float = 0.1) -> None:
    """Wait (briefly) for a joined thread's OS thread to be gone. Before 3.13, join() returns
    as the thread releases its state, a moment before the OS thread exits; a fork in that
    moment would still count it."""
    if tid is None or not os.path.isdir("/proc/self/task"):
        return
    deadline = time.monotonic() + timeout_s
    while os.path.exists(f"/proc/self/task/{tid}") and time.monotonic() < deadline:
        time.sleep(0.0002)


class _PsutilThread(threading.Thread):
    """The psutil sampler's thread. Its stop event travels with it, so stopping one thread never
    signals another started in its place."""

    #: Not a thread of the user's: see _process._other_python_threads.
    lineprofiler_own = True

    def __init__(self, sampler: PsutilSampler) -> None:
        super().__init__(name="lineprofiler-sampler", daemon=True)
        self.sampler = sampler
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.sampler.interval_s):
            self.sampler._tick()


class PsutilSampler:
    """The psutil fallback, with the native Sampler's interface. Python, on a Python thread.

    Rows have the native layout; ``phase`` is always -1 (the phase capsule is a C pointer) and no
    reaped-children detection is possible, so ``flags`` marks only restarts.
    """

    columns = BASE_COLUMNS

    def __init__(self, interval_s: float, capacity: int) -> None:
        import psutil

        self._psutil = psutil
        self.interval_s = interval_s
        self.capacity = capacity
        self._row = struct.Struct(f"={len(BASE_COLUMNS)}q")
        self._lock = threading.Lock()
        self._reset()
        self._thread: _PsutilThread | None = None
        # Thread.start() waits for the new thread with the GIL released, so other threads (one
        # forking, one stopping) can run while a start is under way: such a thread is not
        # joinable yet and is not in _thread yet. _starting says one is coming; _stops counts
        # stop() calls, so a start that a stop overtook undoes itself.
        self._starting = False
        self._stops = 0
        self._paused_for_fork = False
        self._forks_pending = 0  # before_fork() calls whose after-fork hook has not run yet
        self._restart_pending = False
        self._closed = False
        self._opened = False

    def _reset(self) -> None:
        self._process = self._psutil.Process()
        self._ring: deque[bytes] = deque(maxlen=self.capacity)
        self._own = [0] * 5
        self._segment_start = True
        self._io_reason: str | None = None
        self._rss_reason: str | None = None
        self._stats = {"ticks": 0, "rows_total": 0, "overwritten": 0, "failed_io": 0, "failed_rss": 0}

    @property
    def running(self) -> bool:
        return self._thread is not None or self._restart_pending or self._starting

    def _resume(self) -> None:
        """The deferred restart after fork (see after_fork_parent); idempotent."""
        if self._restart_pending:
            self._restart_pending = False
            if not self._closed and self._thread is None:
                self._start_thread()

    def _tick(self) -> None:
        with self._lock:
            t = time.monotonic_ns()
            before = thread_io()
            try:
                rss = self._process.memory_info().rss
            except Exception as error:  # psutil raises its own types; any failure is "not measured"
                rss = -1
                self._rss_reason = f"psutil memory_info(): {error}"
                self._stats["failed_rss"] += 1
            try:
                c = self._process.io_counters()
                io = (c.read_chars, c.write_chars, c.read_bytes, c.write_bytes, 0)
            except Exception as error:
                io = (-1,) * 5
                self._io_reason = f"psutil io_counters(): {error.__class__.__name__}: {error}"
                self._stats["failed_io"] += 1
            after = thread_io()
            own = tuple(self._own)
            if before is not None and after is not None:
                # psutil reads /proc too, on Linux: bill those reads to the profiler.
                self._own[0] += after[0] - before[0] + after[5]
            flags = FLAG_SEGMENT_START if self._segment_start else 0
            self._segment_start = False
            if len(self._ring) == self._ring.maxlen:
                self._stats["overwritten"] += 1
            self._ring.append(self._row.pack(t, flags, -1, rss, *io, *own))
            self._stats["ticks"] += 1
            self._stats["rows_total"] += 1

    def _start_thread(self) -> None:
        thread = _PsutilThread(self)
        stops = self._stops
        self._starting = True
        try:
            thread.start()
        finally:
            self._starting = False
        if self._stops != stops or self._closed or self._thread is not None:
            # Stopped (or closed, or started by another thread) while this one was starting.
            thread.stop_event.set()
            thread.join()
            return
        self._thread = thread

    def start(self) -> None:
        if self._closed:
            raise ValueError("the sampler is closed")
        self._resume()
        if self._thread is not None or self._starting:
            return
        self._opened = True
        self._segment_start = True
        self._tick()
        self._start_thread()

    def stop(self) -> None:
        self._stops += 1
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop_event.set()
            thread.join()
            _wait_gone(thread.native_id)
        self._paused_for_fork = False
        self._restart_pending = False

    def sample(self) -> bool:
        if not self._opened or self._closed:
            return False
        self._resume()
        self._tick()
        return True

    def drain(self) -> bytes:
        self._resume()
        with self._lock:
            data = b"".join(self._ring)
            self._ring.clear()
        return data

    def before_fork(self) -> None:
        # Forks from several threads interleave their hooks (one thread's whole fork can run
        # between another's before-hook and its fork()): they are counted, a fork that finds the
        # sampler already paused keeps it paused, and only the last parent hook restarts it.
        self._forks_pending += 1
        if self._thread is not None or self._restart_pending or self._starting or self._paused_for_fork:
            self.stop()
            self._paused_for_fork = True

    def after_fork_parent(self) -> None:
        self._forks_pending = max(0, self._forks_pending - 1)
        if self._paused_for_fork and self._forks_pending == 0:
            self._paused_for_fork = False
            self._restart_pending = True
            # As the native sampler does: 3.13+ counts threads after these hooks, so there the
            # restart waits for the next call (the profiler makes one at every snapshot).
            if sys.version_info < (3, 13):
                self._resume()

    def after_fork_child(self) -> None:
        was_sampling = self.running or self._paused_for_fork
        self._thread = None
        self._starting = False
        self._paused_for_fork = False
        self._forks_pending = 0
        self._restart_pending = False
        self._lock = threading.Lock()
        self._reset()
        if was_sampling and not self._closed:
            self._tick()
            self._start_thread()

    def close(self) -> None:
        self.stop()
        self._closed = True

    def add_own_io(self, *values: int) -> None:
        with self._lock:
            for i, v in enumerate(values):
                self._own[i] += v

    def stats(self) -> dict[str, Any]:
        self._resume()
        return {
            **self._stats,
            "running": self.running,
            "pid": os.getpid(),
            "thread_cpu_ns": None,
            "own_io": tuple(self._own),
            "io_reason": self._io_reason,
            "rss_reason": self._rss_reason,
            "stat_reason": "reaped children cannot be detected through psutil",
            "phase_reason": "the psutil sampler cannot read the phase capsule",
            "gpu_devices": 0,
            "gpu_reads": 0,
            "gpu_reads_skipped": 0,
            "gpu_reason": "the psutil sampler does not sample NVML",
        }
