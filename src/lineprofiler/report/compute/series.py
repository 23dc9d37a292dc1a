"""Quantities over time, reduced to a chart's columns: the lowest and highest value per column.

A chart one column per pixel wide cannot show 43,200 samples; a mean per column would hide the
one-second spike that matters. Keeping each column's minimum and maximum draws the same
envelope the full series would, at any length of run.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress

from ..model import Series

#: Columns of every chart over time (its width in SVG units: one column per unit).
COLUMNS = 600


def columns(
    times_ns: Sequence[int],
    values: Sequence[float],
    start_ns: int,
    end_ns: int,
    n: int = COLUMNS,
    *,
    offset_ns: int = 0,
    measured: bool = False,
) -> Series | None:
    """``values`` at sorted ``times_ns`` in ``n`` columns over the unix-time span
    ``[start_ns, end_ns)``; negative values (not measured) are left out (``measured``: the
    caller left them out already, so a pass over every value is saved). ``offset_ns`` is what
    the times' clock reads ahead of unix time (a sample file's monotonic clock). None when no
    value remains."""
    if end_ns <= start_ns or n <= 0 or not values:
        return None
    times: Sequence[int] = times_ns
    vals: Sequence[float] = values
    if not measured and min(values) < 0:
        keep = [v >= 0 for v in values]
        times = list(compress(times_ns, keep))
        vals = list(compress(values, keep))
        if not vals:
            return None
    span = end_ns - start_ns
    edges = [bisect_left(times, start_ns + offset_ns + span * j // n) for j in range(n + 1)]
    edges[0], edges[-1] = 0, len(times)  # values before the start or after the end: the edge columns
    low: list[float | None] = []
    high: list[float | None] = []
    for a, b in zip(edges, edges[1:], strict=False):
        if b > a:
            chunk = vals[a:b]
            low.append(float(min(chunk)))
            high.append(float(max(chunk)))
        else:
            low.append(None)
            high.append(None)
    return Series(start_ns=start_ns, column_ns=span / n, low=low, high=high)


def regroup(values: Sequence[float], start_ns: int, slot_ns: int, n: int = COLUMNS) -> Series:
    """Values of consecutive equal slots (``slot_ns`` each, from ``start_ns``) in at most ``n``
    columns: one per slot when they fit, else each column's min and max over its slots."""
    slots = len(values)
    if slots <= n:
        kept = [float(v) for v in values]
        return Series(start_ns=start_ns, column_ns=float(slot_ns), low=list(kept), high=list(kept))
    edges = [slots * j // n for j in range(n + 1)]
    low: list[float | None] = []
    high: list[float | None] = []
    for a, b in zip(edges, edges[1:], strict=False):
        chunk = values[a:b]
        low.append(float(min(chunk)))
        high.append(float(max(chunk)))
    return Series(start_ns=start_ns, column_ns=slots * slot_ns / n, low=low, high=high)


def envelope(series: Sequence[Series]) -> Series | None:
    """Column by column, the lowest and the highest of ``series``: one band that holds them all.
    None when their columns do not line up."""
    first = series[0]
    if any(s.start_ns != first.start_ns or s.column_ns != first.column_ns for s in series):
        return None
    width = max(len(s.low) for s in series)
    low: list[float | None] = [None] * width
    high: list[float | None] = [None] * width
    for s in series:
        for j, (lo, hi) in enumerate(zip(s.low, s.high, strict=False)):
            if lo is not None:
                was = low[j]
                low[j] = lo if was is None else min(was, lo)
            if hi is not None:
                was = high[j]
                high[j] = hi if was is None else max(was, hi)
    return Series(first.start_ns, first.column_ns, low, high)


__all__ = ["COLUMNS", "columns", "envelope", "regroup"]
