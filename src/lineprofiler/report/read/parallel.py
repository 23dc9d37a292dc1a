"""The report's per-file work, spread over the cores the report may use.

Reading a run is work per file: parse and validate each worker file, reduce each sample file to
a small summary. The files are independent, so where more than one core is usable they go to a
pool of processes. Results come back in the order of the files, and the caller folds them in
that order exactly as it folds the serial path's: the report's text is byte-identical either way
(``tests/report/test_parallel.py`` holds it).

The serial path stays for one core, for a small run (a pool costs more to start than a few
files take to read), and wherever a pool cannot be had: a child that dies (killed for memory,
say) or a pool that cannot start costs only speed, its files being read in this process
instead. ``LINEPROFILER_REPORT_JOBS=N`` asks for ``N`` processes (1: always serial), a small
run included.

The workers are forked when this process has a single thread (they then start at once and
share its memory until they write it), else started fresh with ``forkserver``, where that
exists, or ``spawn``, where it does not.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time, as everywhere the report starts
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import TypeVar

    _T = TypeVar("_T")
    _R = TypeVar("_R")

#: ``N``: read a run's files in ``N`` processes (1: in this one), whatever its size.
ENV_JOBS = "LINEPROFILER_REPORT_JOBS"
#: The most processes the report starts, however many cores there are: each holds one sample
#: file at a time (tens of MB for a day at 1 Hz), and more than this gains little.
MAX_JOBS = 32


def usable_cpus() -> int:
    """The cores this process may run on: its affinity mask, not the machine's count."""
    count = getattr(os, "process_cpu_count", None)  # 3.13: affinity (and -X cpu_count) aware
    if count is not None:
        return max(1, count() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def requested_jobs() -> int | None:
    """The number of processes ``LINEPROFILER_REPORT_JOBS`` asks for, or None (not set, or not a
    positive integer: then the report decides)."""
    text = os.environ.get(ENV_JOBS, "").strip()
    try:
        value = int(text)
    except ValueError:
        return None
    return min(value, MAX_JOBS) if value >= 1 else None


def jobs_for(items: int, work: float, min_work: float) -> int:
    """How many processes for ``items`` files that hold ``work`` units in all: 1 (serial) when
    the work is under ``min_work`` units per extra process, or there is one core; never more
    processes than files."""
    asked = requested_jobs()
    if asked is not None:
        return max(1, min(asked, items))
    if items < 2:
        return 1
    by_work = int(work // min_work) if min_work > 0 else items
    return max(1, min(usable_cpus(), MAX_JOBS, items, by_work))


def _start_method() -> str:
    import multiprocessing
    import threading

    methods = multiprocessing.get_all_start_methods()
    # A fork copies every lock as it is: safe only when no other thread can hold one.
    if "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def _child_start() -> None:
    # Objects inherited through fork are never collected here: leave them out of every
    # collection, so the garbage collector does not touch (and so copy) their memory.
    import gc

    gc.freeze()


def ordered_map(fn: Callable[[_T], _R], items: Sequence[_T], jobs: int, chunksize: int = 1) -> Iterator[_R]:
    """``fn(item)`` for each item, yielded in the items' order; in ``jobs`` processes when
    ``jobs > 1``, else here. ``fn`` must be a module-level function and the items and results
    picklable. An exception ``fn`` raises reaches the caller as it would serially; a pool that
    breaks (a child killed) has the rest computed here."""
    if jobs <= 1 or len(items) < 2:
        yield from map(fn, items)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    done = 0
    pool = None
    try:
        context = multiprocessing.get_context(_start_method())
        pool = ProcessPoolExecutor(min(jobs, len(items)), mp_context=context, initializer=_child_start)
        for result in pool.map(fn, items, chunksize=max(1, chunksize)):
            yield result
            done += 1
    except (BrokenProcessPool, OSError):
        # No pool, or a child died: what it had not returned is computed here, in order.
        pass
    finally:
        if pool is not None:
            # Also when the caller stops early: the files not yet read are not read.
            pool.shutdown(wait=True, cancel_futures=True)
    yield from map(fn, items[done:])


__all__ = ["ENV_JOBS", "MAX_JOBS", "jobs_for", "ordered_map", "requested_jobs", "usable_cpus"]
