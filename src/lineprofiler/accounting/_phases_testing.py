"""Test hooks of the phase recorder (the C module :mod:`._phases`). Production code never
imports this module. Needs a development build (``LINEPROFILER_DEV_BUILD=1``, as ``make test``
builds): a wheel's ``_phases`` has no ``_set_io_path``, and each function here then raises
RuntimeError saying so.

The recorder reads the process's I/O counters at the boundaries of ``io=True`` phases from
``/proc/self/io`` (and :func:`._phases.read_io` reads the same file); :func:`read_io_from`
points it at another file (a missing one, one of garbage) to see what a failed read records,
and :func:`read_real_io` points it back. :func:`hold_own_read` plays a sampler thread preempted
in the middle of one of its own reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from . import _phases

#: What :func:`read_real_io` restores: the C module's own file.
REAL_IO_PATH = "/proc/self/io"


def _seam(name: str) -> Callable[..., object]:
    seam = getattr(_phases, name, None)
    if seam is None:
        raise RuntimeError(
            f"lineprofiler.accounting._phases has no {name}: its test seam needs a development build "
            "(LINEPROFILER_DEV_BUILD=1 pip install -e ., as make test builds)"
        )
    return cast("Callable[..., object]", seam)


def _set_io_path(path: str) -> None:
    _seam("_set_io_path")(path)


def read_io_from(path: str) -> None:
    """Phase boundaries read their I/O counters from ``path`` from now on."""
    _set_io_path(path)


def read_real_io() -> None:
    _set_io_path(REAL_IO_PATH)


def hold_own_read(path: str, hold_s: float) -> int:
    """Reads ``path`` as the sampler thread reads ``/proc``, counted as the profiler's own I/O,
    and stays ``hold_s`` inside that read's window after the kernel has counted its bytes (with
    the GIL released). Returns the bytes read."""
    return cast(int, _seam("_hold_own_read")(path, int(hold_s * 1e9)))
