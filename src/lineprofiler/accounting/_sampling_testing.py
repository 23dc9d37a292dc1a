"""Test hooks of the resource samplers. Production code never imports this module. Pure Python
(the samplers' paths are constructor arguments): any build has them, no development build needed.

* :func:`read_proc_from`: every sampler made from then on reads a folder's ``io``, ``statm`` and
  ``stat`` files instead of ``/proc/self``'s (unless it is given its own paths).
* :data:`PROC_DIR_ENV`: a process that imports this module with the variable set does
  ``read_proc_from`` its folder: how a spawned child, which imports the test module its target
  lives in, inherits the stand-in files.
* :func:`read_cpu_stat_from`: every native sampler made from then on reads its cgroup throttling
  counters from a stand-in ``cpu.stat``.
* :func:`no_proc`: while it is open, the platform has no ``/proc`` as far as the samplers can
  tell (as on macOS), so they fall back to psutil or to none.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import sampling as native_sampler

PROC_DIR_ENV = "LINEPROFILER_TEST_PROC_DIR"

_open_real_sampler = native_sampler.open_sampler


def read_proc_from(folder: str | os.PathLike[str] | None) -> None:
    """Samplers made from now on read ``folder``'s ``io``, ``statm`` and ``stat`` (None: the
    real ``/proc/self`` files again)."""
    if folder is None:
        native_sampler.open_sampler = _open_real_sampler
        return
    root = os.fspath(folder)

    def open_sampler(
        interval_s: float,
        capacity: int,
        *,
        io_path: str | None = None,
        statm_path: str | None = None,
        stat_path: str | None = None,
        **options: Any,
    ) -> Any:
        return _open_real_sampler(
            interval_s,
            capacity,
            io_path=io_path or os.path.join(root, "io"),
            statm_path=statm_path or os.path.join(root, "statm"),
            stat_path=stat_path or os.path.join(root, "stat"),
            **options,
        )

    native_sampler.open_sampler = open_sampler


_real_cpu_stat_path = native_sampler.cpu.cpu_stat_path


def read_cpu_stat_from(path: str | os.PathLike[str] | None) -> None:
    """Native samplers made from now on read ``path`` as their cgroup's ``cpu.stat`` (None: the
    process's real one again)."""
    if path is None:
        native_sampler.cpu.cpu_stat_path = _real_cpu_stat_path
        return
    stand_in = os.fspath(path)
    native_sampler.cpu.cpu_stat_path = lambda *_args: stand_in


@contextmanager
def no_proc() -> Iterator[None]:
    """Samplers made inside find no ``/proc/self``."""
    real = native_sampler.PROC_SELF
    native_sampler.PROC_SELF = os.path.join(os.devnull, "self")  # below a device: never a folder
    try:
        yield
    finally:
        native_sampler.PROC_SELF = real


if os.environ.get(PROC_DIR_ENV):
    read_proc_from(os.environ[PROC_DIR_ENV])
