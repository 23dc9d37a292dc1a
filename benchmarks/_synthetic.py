"""A synthetic sample history, written by the sampler's real writer: the report's scale benchmark
(``bench_report.py``), the sampler's read benchmark (``bench_sampler.py``) and a round-trip test
build 12-hour, many-worker runs with it instead of waiting 12 hours.

Import it as ``_synthetic`` from a benchmark run as a script (its folder is on ``sys.path``), or
load the file by path.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from operator import add
from typing import Any

from lineprofiler.runfiles.samplefile import (
    BASE_COLUMNS,
    FLAG_SEGMENT_START,
    IO_FIELDS,
    IntervalCounts,
    SampleWriter,
    classify,
    low_bytes,
    samples_document,
    sign_bytes,
)


def write_synthetic_history(
    path: str | os.PathLike[str],
    *,
    start_unix_ns: int,
    hours: float = 12.0,
    interval_s: float = 1.0,
    seed: int = 0,
    phase_ids: Sequence[int] = (0, 1, 2),
    chunk_rows: int = 3600,
    failed_every: int = 0,
    pid: int = 1,
) -> dict[str, Any]:
    """Write a synthetic sample history through :class:`SampleWriter` and return the ``samples``
    object for the worker document that names it.

    Rows are appended ``chunk_rows`` at a time, as a profiler's snapshots append them. They are
    deterministic arithmetic, not measurements: reads trickle with a 50 MB burst every 5 minutes,
    a 40 MB checkpoint is written every 10 minutes, the profiler's own writes (4 KB every 5 rows)
    and /proc reads (450 B a row) are in the own columns, RSS grows slowly with a sawtooth,
    phases cycle through ``phase_ids`` with a row under no phase now and then, and every
    ``failed_every``-th row (0: none) could not be read. Used by ``benchmarks/bench_report.py``
    to build a 64-worker x 12-hour run.
    """
    interval_ns = int(interval_s * 1e9)
    n = int(hours * 3600 / interval_s)
    mono0 = 10_000_000_000 + seed * 1_000
    columns = dict(_synthetic_columns(n, tuple(phase_ids), failed_every))
    columns["t_ns"] = array("q", range(mono0, mono0 + n * interval_ns, interval_ns))
    rss0 = 200_000_000 + seed * 1_000_000
    columns["rss_bytes"] = array("q", [rss0 + v for v in columns["rss_bytes"]])
    writer = SampleWriter(path, BASE_COLUMNS, interval_ns, monotonic_ref_ns=mono0, unix_ref_ns=start_unix_ns, pid=pid)
    ncols = len(BASE_COLUMNS)
    counts = IntervalCounts()
    previous_ok: bool | None = None
    for first in range(0, n, chunk_rows):
        last = min(n, first + chunk_rows)
        rows = array("q", bytes(8 * ncols * (last - first)))
        for k, name in enumerate(BASE_COLUMNS):
            rows[k::ncols] = columns[name][first:last]
        writer.append(rows.tobytes())
        chunk_rchar = rows[BASE_COLUMNS.index("rchar") :: ncols]
        flags = rows[BASE_COLUMNS.index("flags") :: ncols]
        counts.add(classify(sign_bytes(chunk_rchar), low_bytes(flags), previous_ok)[1])
        previous_ok = chunk_rchar[-1] >= 0
    return samples_document(
        file=writer.path.name,
        columns=BASE_COLUMNS,
        rows=writer.rows,
        size=writer.size,
        interval_s=interval_s,
        source="synthetic",
        counts=counts,
        clock=(mono0, start_unix_ns),
    )


@lru_cache(maxsize=4)
def _synthetic_columns(n: int, phase_ids: tuple[int, ...], failed_every: int) -> dict[str, array]:
    """The seed-independent columns of a synthetic history (cached: a benchmark writes 64)."""
    rng = range(n)
    # Per-row increments, then running sums: cumulative counters, as /proc reports them.
    own_r = list(accumulate(450 for _ in rng))
    own_w = list(accumulate(4096 if i % 5 == 0 else 0 for i in rng))
    rb = list(accumulate(50_000_000 if i % 300 == 0 else 0 for i in rng))
    wb_user = list(accumulate(40_000_000 if i % 600 == 599 else 0 for i in rng))
    wb = list(map(add, wb_user, own_w))
    rchar = list(map(add, accumulate(65_536 + (i % 7) * 4096 for i in rng), map(add, rb, own_r)))
    nphase = len(phase_ids)
    zeros = [0] * n
    columns = {
        "flags": [FLAG_SEGMENT_START] + zeros[1:],
        "phase": [phase_ids[(i // 30) % nphase] if nphase and i % 97 else -1 for i in rng],
        "rss_bytes": [i * 2_000 + (i % 60) * 100_000 for i in rng],  # plus the seed's base
        "rchar": rchar,
        "wchar": list(wb),
        "read_bytes": rb,
        "write_bytes": wb,
        "cancelled_write_bytes": zeros,
        "own_rchar": own_r,
        "own_wchar": own_w,
        "own_read_bytes": zeros,
        "own_write_bytes": own_w,
        "own_cancelled_write_bytes": zeros,
    }
    if failed_every:
        failed = range(failed_every - 1, n, failed_every)
        for name in IO_FIELDS:
            columns[name] = list(columns[name])
            columns[name][failed_every - 1 :: failed_every] = [-1] * len(failed)
    return {name: array("q", values) for name, values in columns.items()}
