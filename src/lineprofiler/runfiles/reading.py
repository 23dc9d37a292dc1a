"""Opening the files of a run directory for reading: regular files only, never more than a limit.

A run directory may be shared, copied or damaged, so a name that looks like a worker file can be
anything: a FIFO (opening it for reading would wait for a writer forever), a symbolic link to
``/dev/zero`` (endless), a directory, or a regular file of many gigabytes. Every reader of run
files opens through :func:`open_regular`: ``O_NONBLOCK`` so a FIFO or a device cannot block the
open, ``O_NOFOLLOW`` so a symbolic link at the file's own name is refused rather than followed,
then ``fstat`` on the open descriptor (no race with a rename) to accept only a regular file.
:func:`read_limited` reads at most a given number of bytes and refuses a larger file.

Failures are :class:`OSError` with a one-line ``strerror``, so a caller's usual
``f"cannot read: {error.strerror}"`` names the reason: ``not a regular file (a FIFO)``,
``a symbolic link (not followed)``, ``larger than the 67,108,864-byte limit (...)``.
"""

from __future__ import annotations

import errno
import os
import stat

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link (not followed)"),
)


class NotRegularFile(OSError):
    """The name is something other than a regular file; ``strerror`` says what."""


class FileTooLarge(OSError):
    """A regular file larger than the reader's limit; ``strerror`` gives both sizes."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (``a FIFO``), for a "not a regular file" error."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(path: str | os.PathLike[str], mode: int) -> NotRegularFile:
    kind = kind_of(mode)
    text = kind if kind.startswith("a symbolic") else f"not a regular file ({kind})"
    return NotRegularFile(errno.EINVAL, text, os.fspath(path))


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only if it is a regular file: ``(fd, its fstat)``; the caller closes fd.

    Raises :class:`NotRegularFile` for anything else (a symbolic link included) and OSError when
    it cannot be opened at all (missing, no permission).
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError as error:
        # ELOOP: a symbolic link and O_NOFOLLOW. ENXIO: a socket, or a FIFO nobody writes to on
        # some systems. Name what the path is rather than the errno where we can tell.
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                raise error from None
            if not stat.S_ISREG(mode):
                raise _not_regular(path, mode) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def too_large(path: str | os.PathLike[str], size: int | None, limit: int) -> FileTooLarge:
    """The error for a file of ``size`` bytes (None: it grew past the limit while being read)
    read with a limit of ``limit`` bytes."""
    shown = "it grew while being read" if size is None else f"{size:,} bytes"
    return FileTooLarge(errno.EFBIG, f"larger than the {limit:,}-byte limit for this file ({shown})", os.fspath(path))


def read_limited(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole content of the regular file ``path``, which must hold at most ``limit`` bytes.

    Raises :class:`NotRegularFile`, :class:`FileTooLarge` (also when the file grows past the limit
    while it is read: no more than ``limit + 1`` bytes are ever read) or OSError.
    """
    fd, info = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise too_large(path, info.st_size, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise too_large(path, None, limit)
    return data


__all__ = ["FileTooLarge", "NotRegularFile", "open_regular", "read_limited", "too_large"]
