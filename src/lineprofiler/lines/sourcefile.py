"""A profiled file's source text, read with a bound, and whether it changed since its code ran.

The tables, the saved file and the annotated page print a line's text next to its numbers. That
text is read here, never through ``linecache``'s own disk reads, which open any path whole and
blocking: a code object's ``co_filename`` can name a FIFO, a device or a ``/proc`` file
(``compile(text, path, "exec")`` takes any name). :func:`source_lines` takes what ``linecache``
already holds in memory (a notebook cell, a module's loader), and reads a file on disk only as
:func:`~lineprofiler._bounded_read.read_regular` does: a regular file of at most
:data:`MAX_SOURCE_BYTES`, never blocking.

A file edited while the program runs no longer holds the code that ran: its lines would be
printed against new text. :class:`SourceStamps` keeps each file's size, mtime and inode when the
profiler first meets code from it; a file whose stamp differs at render time has "changed since
the run", and its lines are shown without text, marked so. A file edited before the profiler
first met its code (imported, edited, then profiled) is not detected.
"""

from __future__ import annotations

import io
import linecache
import os
import sys
import tokenize

from .._bounded_read import read_regular

__all__ = ["MAX_SOURCE_BYTES", "SourceStamps", "decode_source", "disk_lines", "source_lines"]

#: A source file larger than this is not read: its lines are shown without text.
MAX_SOURCE_BYTES = 8 * 1024 * 1024

Stamp = tuple[int, int, int, int]


def decode_source(data: bytes) -> list[str] | None:
    """The lines of a Python source as Python decodes it (its coding cookie or BOM honoured),
    newlines kept; None when it cannot be decoded."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeError, LookupError, ValueError):
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    return io.StringIO(text, newline=None).readlines()


def disk_lines(filename: str) -> list[str] | None:
    """The lines of the file on disk (newlines kept), read with the bound; None when it is not
    a readable regular file of at most :data:`MAX_SOURCE_BYTES` or cannot be decoded."""
    candidates = [filename]
    if not os.path.isabs(filename):  # as linecache: a relative name is also looked for on sys.path
        candidates += [os.path.join(folder, filename) for folder in sys.path if isinstance(folder, str)]
    for candidate in candidates:
        try:
            data = read_regular(candidate, MAX_SOURCE_BYTES)
        except (OSError, ValueError):  # ValueError: a NUL in the name
            continue
        return decode_source(data)
    return None


def source_lines(filename: str) -> list[str] | None:
    """The lines of ``filename`` (newlines kept): what ``linecache`` holds in memory for it, else
    the file on disk read with a bound; None when there is none."""
    try:
        linecache.checkcache(filename)  # drops a stale entry of a file on disk (a stat, no read)
        entry = linecache.cache.get(filename)
        if entry is not None and len(entry) == 1:  # a loader's get_source(), from memory or a zip
            text = entry[0]()
            return (text.splitlines(keepends=True) or None) if isinstance(text, str) else None
        if entry is not None:
            return list(entry[2]) or None
    except Exception:  # a loader's get_source() failing is not ours to raise
        return None
    if not filename or (filename.startswith("<") and filename.endswith(">")):
        return None
    return disk_lines(filename)


def _stamp(path: str) -> Stamp | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev)


class SourceStamps:
    """Each profiled file's stamp (size, mtime, inode, device) when the profiler first met code
    from it: one ``stat`` per file, never a read. A relative name is stamped by its absolute
    path then, so a later ``chdir`` does not read as a change."""

    def __init__(self) -> None:
        self._stamps: dict[str, tuple[str, Stamp] | None] = {}

    def note(self, filename: str) -> None:
        """Stamp ``filename`` unless it already is (a pseudo-file such as ``<string>`` never)."""
        if filename in self._stamps or (filename.startswith("<") and filename.endswith(">")):
            return
        try:
            path = os.path.abspath(filename)
        except (OSError, ValueError):
            self._stamps[filename] = None
            return
        stamp = _stamp(path)
        self._stamps[filename] = None if stamp is None else (path, stamp)

    def changed(self, filename: str) -> bool:
        """Whether ``filename`` was stamped and differs now (edited, replaced, touched or
        removed); False for a file never stamped or one that could not be: nothing to compare."""
        then = self._stamps.get(filename)
        return then is not None and _stamp(then[0]) != then[1]
