"""The phase histogram's bucket scheme: the readable reference for the C in ``accounting/_phases/histogram.c``.

Buckets are fixed and logarithmic, 8 per doubling of duration, from 31.25 ns (about what two reads
of the clock around an empty phase take) to about 10^4 s:

* ``EDGES[k] = round(1000 * 2 ** ((k - BELOW_1US) / 8))`` nanoseconds, for ``k`` in
  ``0..LAST_EDGE`` (``EDGES[BELOW_1US]`` is 1 us);
* bucket 0 holds durations below ``EDGES[0]`` (31 ns; underflow);
* bucket ``k`` (1..LAST_EDGE) holds ``EDGES[k-1] <= ns < EDGES[k]``;
* bucket ``LAST_EDGE + 1`` holds durations at or above ``EDGES[LAST_EDGE]`` (overflow).

A bucket is reported by its geometric midpoint ``sqrt(EDGES[k-1] * EDGES[k])``. A value
``v`` recorded in ``[lo, hi)`` is then reported within ``sqrt(hi / lo) - 1`` of itself:
``sqrt(r) - 1`` = 4.43 % for ``r = 2 ** (1/8)``, and 5.27 % at worst because the edges are
whole nanoseconds (the buckets below 1 us are a little wider or narrower). :data:`RELATIVE_ERROR`
is that worst case, computed from the edges. Reported quantiles are also clamped to the phase's
exact min and max.

Files written before the scheme reached below 1 us (``"log2x8-1us"``, 268 buckets) still read:
their bucket ``k`` is this scheme's ``k + BELOW_1US`` (the same edges), and their underflow
bucket (below 1 us) becomes the bucket just below 1 us (see :func:`from_1us_scheme`).

Counts merge exactly by addition, which is what lets the report merge many processes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping

BUCKETS_PER_DOUBLING = 8
#: The edge at 1 us: five doublings of 8 buckets below it.
ONE_US_NS = 1000
BELOW_1US = 40
LAST_EDGE = 266 + BELOW_1US  # EDGES[306] is about 1.02e13 ns, a little over 10^4 s
N_BUCKETS = LAST_EDGE + 2
SCHEME = "log2x8-31.25ns"
#: The scheme before 0.2 (and version 1 and 2 live files): the same edges from 1 us up.
SCHEME_1US = "log2x8-1us"
N_BUCKETS_1US = 268

EDGES: tuple[int, ...] = tuple(
    int(math.floor(ONE_US_NS * 2.0 ** ((k - BELOW_1US) / BUCKETS_PER_DOUBLING) + 0.5)) for k in range(LAST_EDGE + 1)
)
MIN_NS = EDGES[0]

RATIO = 2.0 ** (1.0 / BUCKETS_PER_DOUBLING)
#: The worst relative error of a reported quantile inside the covered range, against the
#: value really recorded: the widest bucket's sqrt(hi / lo) - 1 (5.27 %, below 1 us; 4.45 % above).
RELATIVE_ERROR = max(math.sqrt(EDGES[k] / EDGES[k - 1]) - 1.0 for k in range(1, LAST_EDGE + 1))


def from_1us_scheme(index: int) -> int:
    """This scheme's bucket for bucket ``index`` of :data:`SCHEME_1US`. Its underflow bucket (any
    duration below 1 us) becomes the bucket just below 1 us: the reported value is then at most
    what the old scheme reported (1 us), and quantiles are clamped to the phase's exact min."""
    return index + BELOW_1US if index > 0 else BELOW_1US


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
