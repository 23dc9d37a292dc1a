"""Reading a file that a user's path names (a profiled source file, a ``pyproject.toml``): a
regular file only, at most a stated number of bytes, never blocking.

Such a path can name anything. A FIFO blocks ``open`` until a writer comes; ``/dev/zero`` streams
forever; a ``/proc`` or ``/sys`` file says size 0 and then gives gigabytes (``/proc/self/pagemap``)
or blocks in ``read`` (``/proc/kmsg``, which also consumes the kernel's messages). So the file
is opened with ``O_NONBLOCK`` (a FIFO or a device cannot block the open) and ``O_NOCTTY`` (a
terminal never becomes the process's), checked with ``fstat`` on the open descriptor (no race
with a rename) to be a regular file, and read with a byte limit. A regular file whose size is 0
is not read at all: an empty source has nothing to read, and a kernel file that reports 0 is
not a source. Symbolic links are followed (a source tree may be linked in); what they lead to is
checked the same way.
"""

from __future__ import annotations

import errno
import os
import stat

from .runfiles.reading import kind_of

__all__ = ["read_regular"]

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The content of the regular file ``path`` (links followed), which must hold at most
    ``limit`` bytes; ``b""`` for one whose size is 0.

    Raises OSError with a one-line ``strerror``: ``not a regular file (a FIFO)``, ``larger than
    the ...-byte limit``, or the system's reason (missing, no permission, ``EAGAIN`` from a
    file that would block). No more than ``limit + 1`` bytes are ever read.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket, or a FIFO on systems that refuse O_NONBLOCK opens
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({kind_of(info.st_mode)})", os.fspath(path))
        if info.st_size > limit:
            why = f"larger than the {limit:,}-byte limit ({info.st_size:,} bytes)"
            raise OSError(errno.EFBIG, why, os.fspath(path))
        if info.st_size == 0:
            return b""
        parts: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(parts)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than the {limit:,}-byte limit (it grew while being read)", os.fspath(path))
    return data
