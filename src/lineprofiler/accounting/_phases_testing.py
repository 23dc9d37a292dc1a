"""Test hooks of the phase recorder (the C module :mod:`._phases`). Production code never
imports this module. Needs a development build (``LINEPROFILER_DEV_BUILD=1``, as ``make test``
builds): a wheel's ``_phases`` has no ``_set_io_path``, and each function here then raises
RuntimeError saying so.

The recorder reads the process's I/O counters at the boundaries of ``io=True`` phases from
``/proc/self/io`` (and :func:`._phases.read_io` reads the same file); :func:`read_io_from`
points it at another file (a missing one, one of garbage) to see what a failed read records,
and :func:`read_real_io` points it back.
"""

from __future__ import annotations

from . import _phases

#: What :func:`read_real_io` restores: the C module's own file.
REAL_IO_PATH = "/proc/self/io"


def _set_io_path(path: str) -> None:
    if not hasattr(_phases, "_set_io_path"):
        raise RuntimeError(
            "lineprofiler.accounting._phases has no _set_io_path: its test seam needs a development build "
            "(LINEPROFILER_DEV_BUILD=1 pip install -e ., as make test builds)"
        )
    _phases._set_io_path(path)


def read_io_from(path: str) -> None:
    """Phase boundaries read their I/O counters from ``path`` from now on."""
    _set_io_path(path)


def read_real_io() -> None:
    _set_io_path(REAL_IO_PATH)
