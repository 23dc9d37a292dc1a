"""Writing a file the user named: a report, a page, an export, a saved profile.

Such a path is the user's, not the run directory's: what is there decides how it is written.
A regular file (or nothing yet) is replaced whole, as every file of a run is
(:func:`~.layout.write_atomic`), so a reader never sees half of it. Anything else is something
a write goes through (``/dev/null``, a FIFO another program reads, a terminal, a socket): it is
opened and written into, never renamed over. Renaming a temporary file over ``/dev/null`` as
root would replace the system's device node with a file of our output.
"""

from __future__ import annotations

import errno
import os
import stat

from .layout import FILE_MODE, write_atomic

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["is_stream", "write_output"]


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (its links followed) is something a write goes through rather than a
    file kept: a FIFO, a character or block device, a socket (``/dev/null``, ``/dev/stdout``)."""
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
    return kind not in (stat.S_IFREG, stat.S_IFDIR)


def write_output(path: str | os.PathLike[str], data: bytes | Iterable[bytes], *, mode: int = FILE_MODE) -> None:
    """Write ``data`` (bytes, or parts of it written as they come) to the file the user named.

    The file this process's stdout or stderr writes to (``/dev/stdout``, ``/proc/self/fd/1``,
    whatever that is: a terminal, a pipe, a file the shell opened to append to) is written
    through that descriptor, after what the stream holds, as a shell's redirection would. Else a
    regular file, or a name where nothing is yet, is written as :func:`~.layout.write_atomic`
    writes, through its links (a link to a file is kept, and the file it names replaced).
    Anything else there (:func:`is_stream`) is opened and written into, never renamed over: a
    FIFO (the write waits for a reader), a device such as ``/dev/null``, a listening socket. A
    folder is refused (IsADirectoryError). Raises OSError."""
    parts = (data,) if isinstance(data, bytes) else data
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "Is a directory")
    standard = _standard_stream(target)
    if standard >= 0:
        for part in parts:
            _write_all(standard, part)
        return
    if is_stream(target):
        fd = _open_stream(target)
        if fd >= 0:
            try:
                for part in parts:
                    _write_all(fd, part)
            finally:
                os.close(fd)
            return
    write_atomic(os.path.realpath(target), parts, mode=mode)


def _standard_stream(path: str) -> int:
    """1 or 2 when ``path`` is the file this process's stdout or stderr writes to (that stream
    flushed first, so the output follows what it printed); -1 otherwise."""
    import sys  # here: nothing else of the run's writers needs it

    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return -1
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        try:
            same = os.path.samestat(info, os.fstat(fd))
        except OSError:
            continue
        if same:
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):
                pass
            return fd
    return -1


def _open_stream(path: str) -> int:
    """A descriptor to write into the FIFO, device or socket at ``path``; -1 when a regular file
    took its place meanwhile (the caller then replaces it as usual)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno != errno.ENXIO or not stat.S_ISSOCK(os.stat(path).st_mode):
            raise
        import socket  # here: only a socket named as the output needs it

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(path)
            return os.dup(connection.fileno())
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return -1
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
