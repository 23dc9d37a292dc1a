"""Helpers for the sampler tests: real directories on real disks, and reading drained rows."""

from __future__ import annotations

import os
import time
from array import array
from pathlib import Path

import pytest

from lineprofiler.runfiles.samplefile import SampleTable

MiB = 1 << 20
REPO = Path(__file__).resolve().parents[2]


def thread_counters() -> dict[str, int]:
    """This thread's /proc counters, read with plain Python (independent of the code under test)."""
    values = {}
    with open("/proc/thread-self/io") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            values[key] = int(value)
    return values


def write_fsync(path, n: int) -> None:
    """Write n bytes (a whole number of MiB) to a new file and fsync it."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        chunk = memoryview(os.urandom(MiB))
        for _ in range(n // MiB):
            os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)


# disk_dir, a folder on a block-backed filesystem, is tests/conftest.py's.


def table_of(columns, data: bytes) -> SampleTable:
    """Drained rows as a SampleTable (the monotonic clock is its own reference)."""
    return SampleTable(
        path=Path("<drained>"),
        columns=tuple(columns),
        data=array("q", data),
        interval_ns=1,
        monotonic_ref_ns=0,
        unix_ref_ns=0,
        pid=os.getpid(),
    )


def io_text(rchar=0, wchar=0, read_bytes=0, write_bytes=0, cancelled=0) -> str:
    """The text of a /proc/<pid>/io file with these counters."""
    return (
        f"rchar: {rchar}\nwchar: {wchar}\nsyscr: 1\nsyscw: 1\n"
        f"read_bytes: {read_bytes}\nwrite_bytes: {write_bytes}\ncancelled_write_bytes: {cancelled}\n"
    )


def stat_text(cminflt: int) -> str:
    """A /proc/<pid>/stat line whose reaped-children fields sum to ``cminflt`` (comm has a space
    and a parenthesis, as real ones may)."""
    fields = ["S", "1", "1", "1", "0", "-1", "4194304", "100", str(cminflt),
              "0", "0", "5", "5", "0", "0", "20", "0", "1", "0"]
    return "4242 (odd) name) " + " ".join(fields) + "\n"


def overwrite(path: Path, text: str) -> None:
    """Replace a file's contents in place (a kept-open descriptor sees the new text)."""
    with open(path, "r+" if path.exists() else "w") as handle:
        handle.seek(0)
        handle.truncate()
        handle.write(text)


def wait_for_stat(sampler, key: str, at_least: int) -> dict:
    """The sampler's stats once ``stats()[key]`` (``ticks``, ``timeline_ticks``) reaches
    ``at_least``, or after 60 s. A loaded machine runs the sampler's thread seldom (it skips the
    ticks it missed), so tests wait for its ticks, never for a time."""
    deadline = time.monotonic() + 60
    stats = sampler.stats()
    while stats[key] < at_least and time.monotonic() < deadline:
        time.sleep(0.005)
        stats = sampler.stats()
    return stats


def threads_now() -> int:
    """The threads of this process, as the kernel counts them (what CPython's fork warning reads)."""
    return len(os.listdir("/proc/self/task"))


def fork_warnings(caught, threads_before: int) -> list:
    """CPython's "multi-threaded fork" warnings among ``caught`` when they can only be ours: if the
    process had other threads before the test began (left by earlier tests and still ending, or
    a sanitizer's), CPython warns whatever the sampler does, so there is nothing to judge."""
    if threads_before > 1:
        return []
    return [w for w in caught if "multi-threaded" in str(w.message)]


@pytest.fixture
def helpers():
    class H:
        pass

    h = H()
    h.table_of = table_of
    h.io_text = io_text
    h.stat_text = stat_text
    h.overwrite = overwrite
    h.thread_counters = thread_counters
    h.write_fsync = write_fsync
    h.MiB = MiB
    h.threads_now = threads_now
    h.fork_warnings = fork_warnings
    return h
