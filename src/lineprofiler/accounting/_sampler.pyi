"""The native resource sampler (C); its Python side and facade is lineprofiler.accounting.sampling."""

from os import PathLike
from typing import TypedDict

FLAG_SEGMENT_START: int
FLAG_CHILD_REAPED: int
FLAG_REAP_UNKNOWN: int
MAX_GPUS: int

class SamplerStats(TypedDict):
    running: bool
    pid: int
    ticks: int
    rows_total: int
    rows_held: int
    overwritten: int  # rows lost to the ring wrapping before a drain
    failed_io: int  # rows whose /proc/self/io read or parse failed
    failed_rss: int
    failed_stat: int
    failed_pss: int  # rows whose smaps_rollup could not be opened, read or parsed (pss_bytes -1)
    pss_reads: int  # rows that read smaps_rollup
    pss_reads_skipped: int  # rows within the budget's wait after the last read (pss_bytes -1, not measured)
    thread_cpu_ns: int  # CPU time of the sampler thread(s) in this process so far
    thread_tid: int  # kernel tid of the running thread, 0 when stopped
    restarts: int  # restarts after fork in this process (3.13+: at the first call after the fork)
    gpu_devices: int
    gpu_reads: int  # rows that read NVML
    gpu_reads_skipped: int  # rows within half an interval of the last read: NVML not asked
    timeline_ticks: int
    timeline_skipped: int
    timeline_rows: int
    timeline_overwritten: int
    threads_unpublished: int
    timeline_reason: str | None
    own_io: tuple[int, int, int, int, int]
    io_reason: str | None
    rss_reason: str | None
    stat_reason: str | None
    pss_reason: str | None  # why smaps_rollup could not be opened (kernels before 4.14 lack it)
    phase_reason: str | None  # why rows carry no phase (-1), None when the capsule was found
    gpu_reason: str | None

class SamplerSched(TypedDict):
    # (phase node id or -1 for no phase, elapsed_ns, on_cpu_ns, runqueue_ns, throttled_ns, blocked_ns):
    # every thread's scheduler times attributed to the phase it was in, at the timeline's ticks
    phases: list[tuple[int, int, int, int, int, int]]
    unattributed_ns: int  # thread time in intervals with more phase changes than a slot remembers
    threads: int  # threads whose schedstat was opened
    reason: str | None  # why a thread's schedstat could not be opened
    throttle_reason: str | None  # why the cgroup's cpu.stat is not read (throttled_ns then 0)
    throttle_failed_reads: int
    throttle_source: str | None
    process_cpu_ns: int  # utime + stime of all threads, from the last row's /proc/self/stat; -1 unread
    process_threads: int  # -1 unread
    process_threads_max: int  # -1 unread

class Sampler:
    """A native thread sampling /proc/self/{io,statm,smaps_rollup,stat} and NVML into a ring of int64 rows.

    ``io_path``, ``statm_path``, ``stat_path`` and ``smaps_path`` replace the /proc/self files: for tests only.
    """

    def __init__(
        self,
        interval_s: float = 1.0,
        capacity: int = 3600,
        *,
        io_path: str | PathLike[str] | None = None,
        statm_path: str | PathLike[str] | None = None,
        stat_path: str | PathLike[str] | None = None,
        smaps_path: str | PathLike[str] | None = None,
        nvml: bool = True,
        timeline_hz: float = 0.0,
        cpu_stat_path: str | PathLike[str] | None = None,
    ) -> None: ...
    @property
    def columns(self) -> tuple[str, ...]: ...
    @property
    def interval_s(self) -> float: ...
    @property
    def capacity(self) -> int: ...
    @property
    def running(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def sample(self) -> bool: ...
    def drain(self) -> bytes: ...
    def drain_timeline(self) -> bytes: ...
    @property
    def timeline_hz(self) -> float: ...
    def before_fork(self) -> None: ...
    def after_fork_parent(self) -> None: ...
    def after_fork_child(self) -> None: ...
    def close(self) -> None: ...
    def add_own_io(
        self, rchar: int, wchar: int, read_bytes: int, write_bytes: int, cancelled_write_bytes: int, /
    ) -> None: ...
    def stats(self) -> SamplerStats: ...
    def sched(self) -> SamplerSched: ...

def thread_io() -> tuple[int, int, int, int, int, int] | None: ...

TIMELINE_COLUMNS: tuple[str, str, str, str, str, str, str]
