"""A traced worker's spans as a binary file beside its worker file: five columns, no JSON.

A ring of 200,000 spans is 8 MB of JSON rows, which the report took about 0.4 s of CPU to parse
and check per worker, and the final snapshot 0.4 s with the GIL held to build and encode. The
final snapshot writes them instead as ``w_<run>_<pid>_<uuid>.<writes>.spans``: the columns
``start_ns``, ``end_ns``, ``cpu_ns`` (int64), ``phase_id`` and ``thread`` (int32), each whole,
one after the other, little-endian, sorted by start (32 bytes a span). The worker document's
``trace.spans`` names it::

    {"file": "w_..._12.spans", "layout": "columns-le-1", "count": 200000, "crc32": 305419896}

The number in the name is the write's: a later final snapshot (a signal, then the exit) writes
a file of its own and removes the older one after its worker file is in place, so a worker file
and the spans it names are always a pair. The reader takes the file only when it is the worker
file's own (its name is the worker file's stem and a number), its size is ``32 * count`` and its
CRC-32 is the one named: a cut, a damaged, a foreign or another worker's file is one line, never
a wrong span. A file that passes is still checked span by span, over its columns
(:func:`.tracesection.check_trace`). Reading is one ``read`` and five ``array.frombytes`` (a copy
each), so a thousand workers' rings are read in seconds.

This module imports nothing of the profilers: the report reads it where only the files are.
"""

from __future__ import annotations

import os
import sys

from . import reading
from .layout import JSON_SUFFIX, remove, write_atomic

TYPE_CHECKING = False  # typing, pathlib, re, zlib, array: not imported by the profiler's start
if TYPE_CHECKING:
    from array import array
    from collections.abc import Iterator
    from typing import Any

LAYOUT = "columns-le-1"
SUFFIX = ".spans"
BYTES_PER_SPAN = 32
#: ``(name, typecode)`` of the columns, in file order; ``q``: int64, ``i``: int32.
COLUMNS = (("start_ns", "q"), ("end_ns", "q"), ("cpu_ns", "q"), ("phase_id", "i"), ("thread", "i"))
#: The order of a span's values in a JSON row, and of the columns this module returns.
ROW_ORDER = ("start_ns", "end_ns", "phase_id", "thread", "cpu_ns")
#: Far above a full ring (the profiler allows 10,000,000 spans: 320 MB).
MAX_FILE_BYTES = 400 << 20


class SpanFileError(ValueError):
    """A spans file that cannot be used; ``str()`` is one line saying why."""


def file_name(worker_file_name: str, writes: int) -> str:
    """``w_run_12_abcd1234.json``, write 7 -> ``w_run_12_abcd1234.7.spans``."""
    return f"{worker_file_name.removesuffix(JSON_SUFFIX)}.{writes}{SUFFIX}"


def write(
    worker_file: str | os.PathLike[str],
    columns: bytes,
    writes: int,
    *,
    root: str | os.PathLike[str] | None,
    fsync: bool,
    notes: list[str] | None,
) -> dict[str, object]:
    """Write ``columns`` (as ``trace_snapshot(columns=True)`` gives them) beside ``worker_file``;
    return what the worker document's ``trace.spans`` holds. Raises OSError."""
    import zlib

    if len(columns) % BYTES_PER_SPAN:
        raise ValueError(f"span columns of {len(columns)} bytes are not whole spans")
    name = file_name(os.path.basename(worker_file), writes)
    write_atomic(os.path.join(os.path.dirname(worker_file), name), columns, root=root, fsync=fsync, notes=notes)
    return {"file": name, "layout": LAYOUT, "count": len(columns) // BYTES_PER_SPAN, "crc32": zlib.crc32(columns)}


def split_off(
    worker_file: str | os.PathLike[str],
    document: dict[str, Any],
    *,
    root: str | os.PathLike[str] | None,
    fsync: bool,
    notes: list[str] | None,
) -> tuple[dict[str, Any], str | None]:
    """``document`` with its trace's span columns (bytes) written to a spans file and named
    instead, and that file's name; a document without them as it is, and None. Where the file
    cannot be written, the spans stay as rows and the document's ``errors`` says why (a final
    snapshot has no next one to say it)."""
    trace = document.get("trace")
    if not isinstance(trace, dict) or not isinstance(trace.get("spans"), bytes):
        return document, None
    columns = trace["spans"]
    try:
        writes = document.get("snapshot", {}).get("writes", 0)
        reference = write(worker_file, columns, writes, root=root, fsync=fsync, notes=notes)
    except OSError as error:
        why = f"snapshot: spans file not written ({error.strerror or error}): the spans are in the worker file"
        errors = [*document.get("errors", []), why]
        return dict(document, trace=dict(trace, spans=rows(columns)), errors=errors), None
    return dict(document, trace=dict(trace, spans=reference)), str(reference["file"])


def remove_older(worker_file: str | os.PathLike[str], keep: str | None, *, root: str | os.PathLike[str] | None) -> None:
    """Remove the spans files an earlier snapshot of ``worker_file`` wrote, all but ``keep``
    (nothing when ``keep`` is None: no spans file was written; best effort: a file left behind
    is named by no worker file, and the report ignores it)."""
    if keep is None:
        return
    folder = os.path.dirname(os.fspath(worker_file))
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return
    for name in names:
        if is_own(worker_file, name) and name != keep:
            try:
                remove(os.path.join(folder, name), root=root)
            except OSError:
                pass


def _is_spans_name(name: object) -> bool:
    """``w_<...>.<digits>.spans``, a plain name: nothing outside the worker file's folder."""
    if not isinstance(name, str) or not name.startswith("w_") or not name.endswith(SUFFIX):
        return False
    stem, dot, number = name.removesuffix(SUFFIX).rpartition(".")
    return bool(dot and stem and number.isdigit()) and "/" not in name and "\\" not in name and "\0" not in name


def is_own(worker_file: str | os.PathLike[str], name: str) -> bool:
    """Whether ``name`` is a spans file ``worker_file`` writes (:func:`file_name`: its own stem,
    then the number of a write)."""
    stem = os.path.basename(os.fspath(worker_file)).removesuffix(JSON_SUFFIX) + "."
    return name.startswith(stem) and name[len(stem) : -len(SUFFIX)].isdigit() and name.endswith(SUFFIX)


class SpanColumns:
    """Spans already read and checked as columns (a live file's ring): ``start_ns, end_ns,
    phase_id, thread, cpu_ns``. In a ``trace`` section it stands for the rows: its length is
    theirs, and it iterates them as lists."""

    __slots__ = ("arrays",)

    def __init__(self, arrays: list[array[int]]) -> None:
        self.arrays = arrays

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __iter__(self) -> Iterator[list[int]]:
        return (list(row) for row in zip(*self.arrays, strict=True))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SpanColumns):
            return self.arrays == other.arrays
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]


def is_reference(value: object) -> bool:
    """Whether a ``trace.spans`` value names a spans file (rather than holding rows)."""
    return isinstance(value, dict) and "file" in value


def read(worker_file: str | os.PathLike[str], reference: object) -> list[array[int]]:
    """The columns ``start_ns, end_ns, phase_id, thread, cpu_ns`` (the order of a JSON row) of
    the spans file ``reference`` names, beside ``worker_file``. Raises SpanFileError."""
    if not isinstance(reference, dict):
        raise SpanFileError("'trace.spans' is neither a list of rows nor an object naming a spans file")
    name, layout, count, crc = (reference.get(k) for k in ("file", "layout", "count", "crc32"))
    if layout != LAYOUT:
        raise SpanFileError(f"'trace.spans' has layout {ascii(layout)[:40]}, which this reader does not know")
    if not _is_spans_name(name):
        raise SpanFileError("'trace.spans.file' is not the name of a spans file beside the worker file")
    if not is_own(worker_file, str(name)):
        # Another worker file's spans (a copied or forged reference): never read as this one's.
        raise SpanFileError(f"'trace.spans.file' names {name}, the spans file of another worker file")
    if type(count) is not int or count < 0 or type(crc) is not int:
        raise SpanFileError("'trace.spans' has no count or crc32")
    path = os.path.join(os.path.dirname(worker_file), str(name))
    try:
        data = reading.read_limited(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise SpanFileError(f"its spans file {name} is missing") from None
    except OSError as error:
        raise SpanFileError(f"its spans file {name} cannot be read: {error.strerror or error}") from None
    if len(data) != count * BYTES_PER_SPAN:
        raise SpanFileError(
            f"its spans file {name} holds {len(data):,} bytes, not {count * BYTES_PER_SPAN:,} (cut short?)"
        )
    import zlib

    if zlib.crc32(data) != crc:
        raise SpanFileError(f"its spans file {name} is damaged (its CRC-32 is not the one its worker file names)")
    return columns_of(data)


def columns_of(data: bytes) -> list[array[int]]:
    """The columns ``start_ns, end_ns, phase_id, thread, cpu_ns`` of span column bytes (whole spans)."""
    from array import array

    count = len(data) // BYTES_PER_SPAN
    view = memoryview(data)
    columns: dict[str, array[int]] = {}
    at = 0
    for column, code in COLUMNS:
        values = array(code)
        width = values.itemsize * count
        values.frombytes(view[at : at + width])
        if sys.byteorder != "little":
            values.byteswap()
        columns[column] = values
        at += width
    return [columns[k] for k in ROW_ORDER]


def rows(data: bytes) -> list[list[int]]:
    """Span column bytes as the JSON rows ``[start_ns, end_ns, phase_id, thread, cpu_ns]``."""
    return [list(row) for row in zip(*columns_of(data), strict=True)]


def columns_bytes(rows: list[list[int]]) -> bytes:
    """Rows ``[start_ns, end_ns, phase_id, thread, cpu_ns]`` (sorted by start) as the column bytes
    ``trace_snapshot(columns=True)`` gives: for writers other than the profiler's C recorder."""
    from array import array

    values = dict(zip(ROW_ORDER, zip(*rows, strict=True) if rows else ((),) * len(ROW_ORDER), strict=True))
    parts = [array(code, values[name]) for name, code in COLUMNS]
    if sys.byteorder != "little":
        for part in parts:
            part.byteswap()
    return b"".join(part.tobytes() for part in parts)
