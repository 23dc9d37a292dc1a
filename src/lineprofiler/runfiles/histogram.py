"""The phase histogram's bucket scheme: the readable reference for the C in ``accounting/_phases/histogram.c``.

Buckets are fixed and logarithmic, 8 per doubling of duration, from 1 us to about 10^4 s:

* ``EDGES[k] = round(1000 * 2 ** (k / 8))`` nanoseconds, for ``k`` in ``0..LAST_EDGE``;
* bucket 0 holds durations below ``EDGES[0]`` (underflow);
* bucket ``k`` (1..LAST_EDGE) holds ``EDGES[k-1] <= ns < EDGES[k]``;
* bucket ``LAST_EDGE + 1`` holds durations at or above ``EDGES[LAST_EDGE]`` (overflow).

A bucket is reported by its geometric midpoint ``sqrt(EDGES[k-1] * EDGES[k])``. A value
``v`` recorded in ``[lo, hi)`` is then reported within ``sqrt(hi / lo) - 1`` of itself:
``sqrt(r) - 1`` = 4.43 % for ``r = 2 ** (1/8)``, and 4.45 % at worst because the edges are
whole nanoseconds (the buckets near 1 us are a little wider). :data:`RELATIVE_ERROR` is that
worst case, computed from the edges. Reported quantiles are also clamped to the phase's exact
min and max.

Counts merge exactly by addition, which is what lets the report merge many processes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping

BUCKETS_PER_DOUBLING = 8
MIN_NS = 1000
LAST_EDGE = 266  # EDGES[266] is about 1.02e13 ns, a little over 10^4 s
N_BUCKETS = LAST_EDGE + 2
SCHEME = "log2x8-1us"

EDGES: tuple[int, ...] = tuple(
    int(math.floor(MIN_NS * 2.0 ** (k / BUCKETS_PER_DOUBLING) + 0.5)) for k in range(LAST_EDGE + 1)
)

RATIO = 2.0 ** (1.0 / BUCKETS_PER_DOUBLING)
#: The worst relative error of a reported quantile inside the covered range, against the
#: value really recorded: the widest bucket's sqrt(hi / lo) - 1 (4.45 %).
RELATIVE_ERROR = max(math.sqrt(EDGES[k] / EDGES[k - 1]) - 1.0 for k in range(1, LAST_EDGE + 1))


def bucket_index(ns: int) -> int:
    """The bucket a duration of ``ns`` nanoseconds falls into."""
    return bisect.bisect_right(EDGES, ns)


def bucket_bounds(index: int) -> tuple[int, int | None]:
    """``(low, high)`` of a bucket: ``low <= ns < high``; ``high`` is None for overflow."""
    if index <= 0:
        return (0, EDGES[0])
    if index > LAST_EDGE:
        return (EDGES[LAST_EDGE], None)
    return (EDGES[index - 1], EDGES[index])


def bucket_midpoint(index: int) -> float:
    """The value a bucket reports: its geometric midpoint (the edge itself at the ends)."""
    if index <= 0:
        return float(EDGES[0])
    if index > LAST_EDGE:
        return float(EDGES[LAST_EDGE])
    return math.sqrt(EDGES[index - 1] * EDGES[index])


def merge(into: dict[int, int], sparse: Iterable[tuple[int, int]] | Mapping[int, int]) -> dict[int, int]:
    """Add sparse ``(index, count)`` pairs into ``into``: exact, so merging is lossless."""
    items = sparse.items() if isinstance(sparse, Mapping) else sparse
    for index, count in items:
        into[index] = into.get(index, 0) + count
    return into


def quantile(
    counts: Mapping[int, int], q: float, *, min_ns: int | None = None, max_ns: int | None = None
) -> float | None:
    """The ``q``-quantile (0..1) of a sparse histogram, in ns; None when it is empty.

    Nearest rank over the cumulative counts, reported as the bucket's midpoint and clamped
    to the exact ``min_ns`` / ``max_ns`` when they are known.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within 0..1, got {q!r}")
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    value = None
    for index in sorted(counts):
        seen += counts[index]
        if seen >= rank:
            value = bucket_midpoint(index)
            break
    assert value is not None
    if min_ns is not None:
        value = max(value, float(min_ns))
    if max_ns is not None:
        value = min(value, float(max_ns))
    return value
