"""The native resource sampler's Python side: whether :mod:`._sampler` (C) can run here, and
making one.

The C sampler is a thread that never takes the GIL, reading ``/proc/self`` through descriptors
it keeps open: Linux only. :mod:`.sampling` picks it where it can run, else the psutil fallback
(:mod:`.psutil_sampler`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from typing import Any

#: Where the native sampler reads; a platform without it (macOS) gets the psutil fallback.
PROC_SELF = "/proc/self"


def load() -> Any:
    """The C module; raises ImportError where it was not built or cannot load."""
    from . import _sampler

    return _sampler


def import_error() -> str | None:
    """Why the C module cannot be imported, or None when it can."""
    try:
        load()
    except ImportError as error:
        return f"the native sampler cannot be imported ({error})"
    return None


def has_proc() -> bool:
    return os.path.isdir(PROC_SELF)


def thread_io() -> tuple[int, ...] | None:
    """The calling thread's I/O counters (``/proc/thread-self/io``, read by the C module), or
    None where they cannot be read."""
    try:
        return load().thread_io()
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
) -> Any:
    """A native ``Sampler`` (see ``_sampler.pyi``), not started. The paths replace the
    ``/proc/self`` files it reads (None: the real ones)."""
    return load().Sampler(
        interval_s, capacity, io_path=io_path, statm_path=statm_path, stat_path=stat_path, nvml=nvml,
        timeline_hz=timeline_hz,
    )
