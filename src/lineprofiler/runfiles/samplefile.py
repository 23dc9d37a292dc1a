"""The resource-sample file: an append-only binary sidecar beside each worker file.

A worker's samples are too many for its JSON document (12 hours at 1 Hz is 43,200 rows), so
they go to ``w_<run>_<pid>_<uuid8>.samples`` in the same folder, and the document's
``samples`` object names the file. Each snapshot appends only the rows drained since the last
one, so writing is proportional to the new rows, never to the history. This module imports no
C module: the report reads these files where only the files are.

Layout, every integer little-endian::

    header   magic b"LPSAMPLE", u32 version, u32 header_size, u32 ncols, u32 reserved,
             i64 interval_ns, i64 monotonic_ref_ns, i64 unix_ref_ns, i64 pid,
             ncols NUL-terminated ASCII column names, zero-padded to header_size (a multiple of 8)
    rows     version 1: ncols int64 values each, back to back, in time order
             version 2: compressed chunks of such rows (:mod:`.samplechunks`), in time order

Version 2 is what the writer writes: a day of 1 Hz rows is about 2 MB instead of 9.7 MB.
Version 1 files are still read; a file of a newer version is refused with a one-line reason.

``monotonic_ref_ns``/``unix_ref_ns`` are one reading of each clock taken together, so row times
(CLOCK_MONOTONIC) can be placed on the run's wall-clock timeline. A value of -1 is "could not
measure"; ``flags`` holds the ``FLAG_*`` bits below. A reader takes every complete row (version 2:
every good chunk) and ignores a partial last row or chunk (a crash mid-append), reporting it as
a caveat.

Columns written by the sampler: ``t_ns``, ``flags``, ``phase`` (node id of the innermost phase open
in the main thread, -1 for none), ``rss_bytes``, the five ``/proc/self/io`` counters ``rchar``,
``wchar``, ``read_bytes``, ``write_bytes``, ``cancelled_write_bytes`` (cumulative), the same five
prefixed ``own_`` (the profiler's own I/O so far, to subtract), ``pss_bytes`` (the native sampler
only: the process's proportional set size from ``/proc/self/smaps_rollup``, each shared page
divided among the processes that map it, so PSS adds up across processes where RSS does not;
-1 where the kernel has no smaps_rollup), then ``gpu<i>_busy`` and ``gpu<i>_mine`` per NVML
device. Files written before ``pss_bytes`` existed, and the psutil fallback's, lack that column:
readers look it up by name.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from array import array
from operator import and_

from .._record import Record
from . import layout, reading, samplechunks
from .layout import SAMPLES_SUFFIX
from .layout import sidecar_name as sidecar_name  # still importable from here

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path
    from typing import Any

MAGIC = b"LPSAMPLE"
VERSION = 2
FORMAT = "lineprofiler-samples/2"
SUFFIX = SAMPLES_SUFFIX
_HEAD = struct.Struct("<8sIIII4q")

# Row flags (the same values as _sampler.FLAG_*; repeated here because the report must not
# import the C module).
FLAG_SEGMENT_START = 1  # first row after a (re)start: no interval ends here
FLAG_CHILD_REAPED = 2  # a child process was reaped: the kernel folded its I/O into ours
FLAG_REAP_UNKNOWN = 4  # /proc/self/stat was unreadable here or in the row before
_DROP_FLAGS = FLAG_SEGMENT_START | FLAG_CHILD_REAPED | FLAG_REAP_UNKNOWN

#: The phase-occupancy file (``.timeline``, the same layout): one row per thread per tick, the
#: thread's innermost phase node id (-1: none), since when it has been in that state
#: (``since_ns``, CLOCK_MONOTONIC like ``t_ns``; 0: not known) and the last phase it left
#: (``prev_phase``, -1: none, from ``prev_since_ns`` to ``prev_end_ns``; between that end and
#: ``since_ns`` the thread was in no phase). ``tid`` 0: no thread was in a phase; ``tid`` -1
#: (TID_SKIPPED): the sampler missed ``phase`` ticks just before this row.
TIMELINE_COLUMNS = ("t_ns", "tid", "phase", "since_ns", "prev_phase", "prev_since_ns", "prev_end_ns")
#: What a reader needs: files written before ``since_ns`` existed have only these.
TIMELINE_REQUIRED_COLUMNS = ("t_ns", "tid", "phase")
#: Optional: when the main thread's ``phase`` of a sample row was set (0: not known), so an
#: interval can be told to lie wholly outside phases, or wholly in one.
PHASE_SINCE_COLUMN = "phase_since_ns"
TID_NONE = 0
TID_SKIPPED = -1
#: Timeline rows kept in memory while the file cannot be written, at most.
TIMELINE_PENDING_ROWS = 65536

IO_FIELDS = ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes")
BASE_COLUMNS = ("t_ns", "flags", "phase", "rss_bytes", *IO_FIELDS, *("own_" + f for f in IO_FIELDS))
#: The native sampler's PSS column, after BASE_COLUMNS; optional to a reader.
PSS_COLUMN = "pss_bytes"
#: The native sampler's columns before its per-GPU ones.
NATIVE_COLUMNS = (*BASE_COLUMNS, PSS_COLUMN, PHASE_SINCE_COLUMN)
#: The most a reader reads of one sample file (header included), and the most its rows may take
#: once decompressed: about 30 days of 1 Hz rows of the base columns, 13 days with eight GPUs'
#: columns. A larger file is refused whole (its process is left out of the sampled blocks, with
#: a caveat); the rest of the run is reported.
MAX_FILE_BYTES = 256 * 1024 * 1024

_BIG_ENDIAN = sys.byteorder == "big"


class SampleFileError(Exception):
    """A sample file that cannot be used; ``str()`` is a one-line reason with the path."""


def _header(columns: Sequence[str], interval_ns: int, monotonic_ref_ns: int, unix_ref_ns: int, pid: int) -> bytes:
    names = b"".join(c.encode("ascii") + b"\0" for c in columns)
    size = _HEAD.size + len(names)
    size += -size % 8
    head = _HEAD.pack(MAGIC, VERSION, size, len(columns), 0, interval_ns, monotonic_ref_ns, unix_ref_ns, pid)
    return (head + names).ljust(size, b"\0")


def _to_little_endian(data: bytes) -> bytes:
    if not _BIG_ENDIAN:
        return data
    rows = array("q", data)
    rows.byteswap()
    return rows.tobytes()


class SampleWriter:
    """Appends drained rows to one sample file (version 2: compressed chunks). Not thread-safe;
    one per process.

    Each append writes its rows as one chunk after the last. Small chunks compress badly (a
    snapshot's 5 rows cost about 40 bytes a row), so once the chunks since the last seal hold
    :data:`.samplechunks.SEAL_ROWS` rows they are sealed into one chunk (about 20 bytes a row):
    written first after them as a copy, then over them, then the file is cut after it. A kill
    at any step leaves every row readable (:mod:`.samplechunks`); the writer keeps the rows since
    the last seal (at most ``SEAL_ROWS``) in memory to do so. A single append of ``SEAL_ROWS``
    rows or more is sealed as it is written.

    The file is reopened for each append (a snapshot every few seconds), so nothing is held open
    across ``fork()``. A failed append leaves the writer as it was before it: the next append
    writes the same rows again, over whatever the failed one left. A seal that fails after the
    rows were written is done again, before anything else, by the next append.

    ``root`` is the run directory: the file is reached from it without following a link
    (:func:`.layout.open_owned`), and only ever written while it is the file this writer made.
    Without ``root``, ``path``'s folder, which must exist.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        columns: Sequence[str],
        interval_ns: int,
        *,
        monotonic_ref_ns: int | None = None,
        unix_ref_ns: int | None = None,
        pid: int | None = None,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        from pathlib import Path  # here: importing this module must stay cheap (a profiler's start)

        self.path = Path(path)
        self.root = None if root is None else Path(root)
        self._inode: tuple[int, int] | None = None  # (st_dev, st_ino) of the file this writer made
        self.columns = tuple(columns)
        self.row_bytes = 8 * len(self.columns)
        if monotonic_ref_ns is None or unix_ref_ns is None:
            monotonic_ref_ns, unix_ref_ns = time.monotonic_ns(), time.time_ns()
        self.monotonic_ref_ns = monotonic_ref_ns
        self.unix_ref_ns = unix_ref_ns
        pid = os.getpid() if pid is None else pid
        self._header = _header(self.columns, interval_ns, monotonic_ref_ns, unix_ref_ns, pid)
        self.rows = 0  # complete rows in the file
        self.restarts = 0  # times the file vanished or shrank under us and was begun again
        self._begin_again()

    @property
    def size(self) -> int:
        return self._size

    def _begin_again(self) -> None:
        self._size = 0  # bytes of the file we know to be good; 0 before the header is written
        self._sealed = len(self._header)  # where the chunks since the last seal begin
        self._unsealed = b""  # their rows (little-endian), to rewrite as one chunk
        self._chunks = 0  # how many they are
        self._must_seal = False  # a seal failed after its rows were written: do it first
        self.rows = 0

    def append(self, data: bytes) -> int:
        """Append whole rows (native-endian int64, as drained); returns the bytes written.

        Raises OSError (the caller counts it and keeps the rows to retry).
        """
        if len(data) % self.row_bytes:
            raise ValueError(f"{len(data)} bytes is not a whole number of {len(self.columns)}-column rows")
        fd, inode = layout.open_owned(self.path, root=self.root, inode=self._inode)
        try:
            if inode != self._inode:
                # A new file: the first append, or ours was removed or replaced since (the
                # replacement was removed, never written to).
                if self._inode is not None:
                    self.restarts += 1
                self._inode = inode
                self._begin_again()
            actual = os.fstat(fd).st_size
            if actual < self._size:
                # Deleted or truncated by someone else: what we wrote is gone; begin again.
                self.restarts += 1
                self._begin_again()
            if self._must_seal:
                self._seal(fd)  # raises before these rows are written: the caller keeps them
                actual = os.fstat(fd).st_size
            rows_le = _to_little_endian(data)
            count = len(data) // self.row_bytes
            out = samplechunks.encode(rows_le, self.rows, count) if count else b""
            at = self._size
            if at == 0:
                out, at = self._header + out, 0
            _write_all(fd, out, at)
            end = at + len(out)
            if actual > end:
                os.ftruncate(fd, end)  # what a failed append or seal left after the last chunk
            self._size = end
            self.rows += count
            if count:
                self._unsealed += rows_le
                self._chunks += 1
            if len(self._unsealed) >= samplechunks.SEAL_ROWS * self.row_bytes:
                try:
                    self._seal(fd)
                except OSError:
                    self._must_seal = True  # the rows are written: the next append seals first
        finally:
            os.close(fd)
        return len(out)

    def _seal(self, fd: int) -> None:
        """Rewrite the chunks since the last seal as one: a copy after them, then over them, then
        the file cut after it. Kept as they are when one chunk would not be smaller."""
        count = len(self._unsealed) // self.row_bytes
        if self._chunks > 1:
            chunk = samplechunks.encode(self._unsealed, self.rows - count, count)
            if len(chunk) <= self._size - self._sealed:
                _write_all(fd, chunk, self._size)
                _write_all(fd, chunk, self._sealed)
                os.ftruncate(fd, self._sealed + len(chunk))
                self._size = self._sealed + len(chunk)
        self._sealed = self._size
        self._unsealed, self._chunks, self._must_seal = b"", 0, False


def _write_all(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    written = 0
    while written < len(data):
        written += os.pwrite(fd, view[written:], at + written)


class SampleTable:
    """Rows of one sample file, row-major in one ``array('q')``.

    ``truncated_bytes``: an unreadable end that was ignored (a partial last row or chunk: a
    writer killed mid-append), and ``truncated_what`` what it was, for a caveat.
    """

    __slots__ = (
        "path", "columns", "data", "interval_ns", "monotonic_ref_ns", "unix_ref_ns", "pid", "truncated_bytes",
        "truncated_what",
    )

    def __init__(
        self,
        path: Path,
        columns: tuple[str, ...],
        data: array,
        interval_ns: int,
        monotonic_ref_ns: int,
        unix_ref_ns: int,
        pid: int,
        truncated_bytes: int = 0,
        truncated_what: str = "partial last row",
    ) -> None:
        self.path = path
        self.columns = columns
        self.data = data
        self.interval_ns = interval_ns
        self.monotonic_ref_ns = monotonic_ref_ns
        self.unix_ref_ns = unix_ref_ns
        self.pid = pid
        self.truncated_bytes = truncated_bytes
        self.truncated_what = truncated_what

    def __repr__(self) -> str:
        return (
            f"SampleTable(path={self.path!r}, columns={self.columns!r}, rows={self.rows}, "
            f"interval_ns={self.interval_ns}, pid={self.pid}, truncated_bytes={self.truncated_bytes})"
        )

    @property
    def rows(self) -> int:
        return len(self.data) // len(self.columns) if self.columns else 0

    def column(self, name: str) -> array:
        """One column as an ``array('q')`` (a strided slice: a C-level copy, no per-row objects)."""
        return self.data[self.columns.index(name) :: len(self.columns)]

    def view(self, name: str) -> memoryview:
        """One column as a strided memoryview of int64: no copy, for indexing."""
        return memoryview(self.data)[self.columns.index(name) :: len(self.columns)]

    def byte_of(self, name: str, which: int) -> bytes:
        """Byte ``which`` (0 the least significant, 7 the sign) of every value of a column, as
        one bytes object: a strided slice of the rows' bytes, copying only the bytes taken."""
        offset = which if sys.byteorder == "little" else 7 - which
        raw = memoryview(self.data).cast("B")
        return raw[8 * self.columns.index(name) + offset :: 8 * len(self.columns)].tobytes()

    def to_unix_ns(self, t_ns: int) -> int:
        return t_ns - self.monotonic_ref_ns + self.unix_ref_ns


def _parse_header(path: Path, handle: Any) -> tuple[int, tuple[str, ...], int, int, int, int, int]:
    """(version, columns, header_size, interval_ns, monotonic_ref_ns, unix_ref_ns, pid)."""
    head = handle.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise SampleFileError(f"{path}: sample file too short for its header")
    magic, version, size, ncols, _reserved, interval_ns, mono_ref, unix_ref, pid = _HEAD.unpack(head)
    if magic != MAGIC:
        raise SampleFileError(f"{path}: not a lineprofiler sample file")
    if version > VERSION:
        raise SampleFileError(
            f"{path}: written with sample file version {version}, this lineprofiler reads up to {VERSION}; "
            "upgrade lineprofiler to read it"
        )
    if version < 1 or size % 8 or size < _HEAD.size or not 1 <= ncols <= 4096 or size > 1 << 20:
        raise SampleFileError(f"{path}: corrupt sample file header")
    names = handle.read(size - _HEAD.size)
    parts = names.split(b"\0")
    if len(names) != size - _HEAD.size or len(parts) <= ncols:
        raise SampleFileError(f"{path}: corrupt sample file header")
    try:
        columns = tuple(p.decode("ascii") for p in parts[:ncols])
    except UnicodeDecodeError:
        raise SampleFileError(f"{path}: corrupt sample file header") from None
    if any(not c for c in columns) or any(parts[ncols:]):
        raise SampleFileError(f"{path}: corrupt sample file header")
    return version, columns, size, interval_ns, mono_ref, unix_ref, pid


def _cannot_read(path: Path, error: OSError) -> SampleFileError:
    if isinstance(error, FileNotFoundError):
        return SampleFileError(f"{path}: sample file is missing")
    return SampleFileError(f"{path}: cannot read: {error.strerror or error}")


def read_header(path: str | os.PathLike[str]) -> tuple[tuple[str, ...], int, int, int, int, int]:
    """(columns, header_size, interval_ns, monotonic_ref_ns, unix_ref_ns, pid); SampleFileError if unusable.

    Opens only a regular file (see :mod:`.reading`).
    """
    from pathlib import Path

    path = Path(path)
    try:
        fd, _ = reading.open_regular(path)
        with os.fdopen(fd, "rb") as handle:
            return _parse_header(path, handle)[1:]
    except OSError as error:
        raise _cannot_read(path, error) from None


def read_samples(path: str | os.PathLike[str]) -> SampleTable:
    """Read a whole sample file into one array. Raises SampleFileError with a one-line reason.

    Opens only a regular file, once (see :mod:`.reading`), and refuses one larger than
    :data:`MAX_FILE_BYTES`, or whose rows would be once decompressed. Version 1 is read straight
    into the array (``array.fromfile``); version 2 chunk by chunk (:mod:`.samplechunks`), its
    rows appended to the array as each is inflated.
    """
    from pathlib import Path

    path = Path(path)
    try:
        fd, info = reading.open_regular(path)
        with os.fdopen(fd, "rb") as handle:
            if info.st_size > MAX_FILE_BYTES:
                raise reading.too_large(path, info.st_size, MAX_FILE_BYTES)
            version, columns, header_size, interval_ns, mono_ref, unix_ref, pid = _parse_header(path, handle)
            if "t_ns" not in columns:
                raise SampleFileError(f"{path}: sample file has no t_ns column")
            # The size from fstat bounds the read: a file still being appended to is read up to
            # where it was when opened.
            body = max(0, info.st_size - header_size)
            row_bytes = 8 * len(columns)
            if version >= 2:
                try:
                    data, ignored, what = samplechunks.decode(handle.read(body), row_bytes, MAX_FILE_BYTES)
                except ValueError as error:
                    raise SampleFileError(f"{path}: {error}") from None
            else:
                data = array("q")
                rows = body // row_bytes
                try:
                    data.fromfile(handle, rows * len(columns))
                except EOFError:
                    # Shrank while we read (a writer repairing a partial row): keep whole rows.
                    del data[len(data) - len(data) % len(columns) :]
                ignored, what = body - rows * row_bytes, "partial last row"
    except OSError as error:
        raise _cannot_read(path, error) from None
    if _BIG_ENDIAN:
        data.byteswap()
    return SampleTable(
        path=path,
        columns=columns,
        data=data,
        interval_ns=interval_ns,
        monotonic_ref_ns=mono_ref,
        unix_ref_ns=unix_ref,
        pid=pid,
        truncated_bytes=ignored,
        truncated_what=what,
    )


# ---------------------------------------------------------------------------------------------
# Intervals: which ones may be differenced
# ---------------------------------------------------------------------------------------------


class IntervalCounts(Record):
    """How the intervals between consecutive rows were classified.

    An interval ends at a row. It is *valid* when the I/O counters were read at both of its ends
    and the row carries no drop flag. ``failed`` intervals touch a row whose counters could not be
    read; ``reaped`` ones saw a child process reaped (its bytes are its own, not ours);
    ``unknown`` ones could not tell. ``gaps`` are restarts of the sampler (no interval: it was
    stopped), not drops.
    """

    __slots__ = ("valid", "failed", "reaped", "unknown", "gaps")

    def __init__(self, valid: int = 0, failed: int = 0, reaped: int = 0, unknown: int = 0, gaps: int = 0) -> None:
        self.valid = valid
        self.failed = failed
        self.reaped = reaped
        self.unknown = unknown
        self.gaps = gaps

    __hash__ = None  # type: ignore[assignment]  # counts change as rows are added

    @property
    def dropped(self) -> int:
        return self.failed + self.reaped + self.unknown

    def add(self, other: "IntervalCounts") -> None:
        self.valid += other.valid
        self.failed += other.failed
        self.reaped += other.reaped
        self.unknown += other.unknown
        self.gaps += other.gaps


def interval_mask(
    rchar: Sequence[int], flags: Sequence[int], previous_ok: bool | None = None
) -> tuple[list[bool], IntervalCounts]:
    """Whether the interval ending at each row may be differenced, and the tally of why not.

    ``previous_ok`` describes the row before these (whether its counters were read), or is None
    when these rows begin the file, so that a file can be classified a chunk at a time exactly as
    it would be whole. This is the readable definition, a bool per row; :func:`classify` is the
    fast sparse form the writer and the report use, and the tests hold the two equal.
    """
    n = len(rchar)
    counts = IntervalCounts()
    if n == 0:
        return [], counts
    ok = [v >= 0 for v in rchar]
    before = [previous_ok is True, *ok[:-1]]
    # An interval ends at every row but the first of the file and the first after a restart.
    ends = [not f & FLAG_SEGMENT_START for f in flags]
    counts.gaps = ends.count(False)
    if previous_ok is None and ends[0]:
        ends[0] = False
    elif previous_ok is None:
        counts.gaps -= 1  # the file's first row is not a restart
    read = list(map(and_, ok, before))
    mask = [e and r and not f & _DROP_FLAGS for e, r, f in zip(ends, read, flags, strict=True)]
    counts.valid = mask.count(True)
    if counts.valid < n - ends.count(False):
        counts.failed = sum(1 for e, r in zip(ends, read, strict=True) if e and not r)
        counts.reaped = sum(1 for e, r, f in zip(ends, read, flags, strict=True) if e and r and f & FLAG_CHILD_REAPED)
        counts.unknown = n - ends.count(False) - counts.valid - counts.failed - counts.reaped
    return mask, counts


_NEGATIVE_RUN = rb"[\x80-\xff]+"  # compiled on first use (re's cache)
_NONZERO = rb"[^\x00]"


def negative_runs(signs: bytes) -> list[tuple[int, int]]:
    """[a, b) row ranges whose value is negative, given the values' sign bytes
    (:meth:`SampleTable.byte_of` ``(name, 7)``): C-speed scans, Python work only per run."""
    if signs.count(0) == len(signs):
        return []  # the common case, at memchr speed
    import re  # here: only the report scans, and a profiled process must not pay for re

    return [m.span() for m in re.finditer(_NEGATIVE_RUN, signs)]


def nonzero_rows(low: bytes) -> list[int]:
    """Rows whose flags are set, given the flags' low bytes (every flag is a low bit)."""
    if low.count(0) == len(low):
        return []
    import re

    return [m.start() for m in re.finditer(_NONZERO, low)]


def sign_bytes(col: Sequence[int]) -> bytes:
    """The sign bytes of a column held as a Python sequence (the writer's drained chunks)."""
    return bytes(0xFF if v < 0 else 0 for v in col)


def low_bytes(col: Sequence[int]) -> bytes:
    return bytes(v & 0xFF for v in col)


def classify(rchar_signs: bytes, flags_low: bytes, previous_ok: bool | None = None) -> tuple[list[int], IntervalCounts]:
    """The sparse form of :func:`interval_mask`, from the sign bytes of ``rchar`` and the low
    bytes of ``flags``: the rows at which *no valid* interval ends (sorted), and the same
    counts. C-speed scans plus Python work per exception only: a clean 12-hour file takes well
    under a millisecond."""
    n = len(rchar_signs)
    counts = IntervalCounts()
    if n == 0:
        return [], counts
    failed_rows = [k for a, b in negative_runs(rchar_signs) for k in range(a, b)]
    flagged = nonzero_rows(flags_low)
    failed_ends = set(failed_rows)
    failed_ends.update(k + 1 for k in failed_rows if k + 1 < n)
    if previous_ok is False:
        failed_ends.add(0)
    breaks = set(failed_ends)
    for k in flagged:
        if k == 0 and previous_ok is None:
            continue  # the file's first row ends no interval, whatever its flags
        f = flags_low[k]
        breaks.add(k)
        if f & FLAG_SEGMENT_START:
            counts.gaps += 1
            failed_ends.discard(k)  # a restart ends no interval, failed or not
        elif k not in failed_ends:
            if f & FLAG_CHILD_REAPED:
                counts.reaped += 1
            elif f & FLAG_REAP_UNKNOWN:
                counts.unknown += 1
    if previous_ok is None:
        breaks.add(0)
        failed_ends.discard(0)
    counts.failed = len(failed_ends)
    counts.valid = n - len(breaks)
    return sorted(breaks), counts


def samples_document(
    *,
    file: str | None,
    columns: Iterable[str],
    rows: int,
    size: int,
    interval_s: float,
    source: str | None,
    counts: IntervalCounts,
    clock: tuple[int, int] | None,
    unavailable_reason: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The worker document's ``samples`` object (see docs/resources.md for every key)."""
    doc: dict[str, Any] = {
        "file": file,
        "format": FORMAT,
        "byteorder": "little",
        "columns": list(columns),
        "rows": rows,
        "bytes": size,
        "interval_s": interval_s,
        "source": source,
        "valid_intervals": counts.valid,
        "dropped_intervals": counts.dropped,
        "dropped": {"failed_read": counts.failed, "child_reaped": counts.reaped, "reap_unknown": counts.unknown},
        "gaps": counts.gaps,
        "clock": None if clock is None else {"monotonic_ns": clock[0], "unix_ns": clock[1]},
        "unavailable_reason": unavailable_reason,
    }
    doc.update(extra)
    return doc
