"""Request lifecycles: each request's checkpoints (``trace_begin``, ``trace_mark``, ``trace_end``),
gathered across the processes that stamped them, split into the intervals between them.

A ``wait_on`` link says when a wait ended and which signal ended it; it cannot say whether the
request sat unclaimed, waited for a batch to fill, was computed or travelled back, which have
opposite remedies. A lifecycle can: the client marks ``begin`` and ``end``, the server the
steps in between (``admitted``, ``compute_start``), each on its own clock, put on the run's
timeline by the host offsets (:mod:`.clocks`).

Only complete lifecycles count: a request with no ``begin`` or no ``end`` (in flight when the
files were written) is counted apart, as is one whose checkpoints are not in order on the
timeline (two ``begin``, an ``end`` before the last mark: a key reused, or clocks that cannot
order them); a segment that cannot have happened is worse than one missing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from .model import HostClock, LifecycleChannel, LifecycleSegment
from .spans import WorkerTrace

#: Slowest requests named per channel.
SLOWEST = 3


def _label(kind: str) -> str:
    return kind[5:] if kind.startswith("mark:") else kind


def _percentile(sorted_values: Sequence[int], fraction: float) -> int:
    """The nearest-rank percentile of an ascending, non-empty list."""
    rank = max(1, math.ceil(len(sorted_values) * fraction))
    return sorted_values[min(len(sorted_values), rank) - 1]


def lifecycles(traces: Sequence[WorkerTrace], clocks: dict[str, HostClock]) -> list[LifecycleChannel]:
    """Per channel (in name order), its complete requests split into segments."""
    stamps: dict[str, dict[str, list[tuple[int, str, int]]]] = defaultdict(lambda: defaultdict(list))
    for trace in traces:
        offset = clocks[trace.host].offset_ns
        for link in trace.links:
            if link.kind in ("begin", "end") or link.kind.startswith("mark:"):
                stamps[link.channel][link.key].append((link.t_ns + offset, link.kind, trace.index))
    out = []
    for channel in sorted(stamps):
        totals: dict[str, list[int]] = {}
        order: list[str] = []
        lengths: list[tuple[int, str, int, int]] = []
        incomplete = out_of_order = 0
        for key, marks in stamps[channel].items():
            marks.sort()
            kinds = [kind for _, kind, _ in marks]
            if "begin" not in kinds or "end" not in kinds:
                incomplete += 1
                continue
            if kinds[0] != "begin" or kinds[-1] != "end" or kinds.count("begin") > 1 or kinds.count("end") > 1:
                out_of_order += 1
                continue
            for (start, before, _), (end, after, _) in zip(marks, marks[1:], strict=False):
                name = f"{_label(before)} -> {_label(after)}"
                if name not in totals:
                    totals[name] = []
                    order.append(name)
                totals[name].append(end - start)
            lengths.append((marks[-1][0] - marks[0][0], key, marks[0][2], marks[-1][2]))
        if not lengths and not incomplete and not out_of_order:
            continue
        lengths.sort(key=lambda row: (-row[0], row[1]))
        ascending = sorted(row[0] for row in lengths)
        segments = []
        for name in order:
            values = sorted(totals[name])
            segments.append(
                LifecycleSegment(
                    name=name,
                    total_ns=sum(values),
                    count=len(values),
                    mean_ns=sum(values) / len(values),
                    p50_ns=_percentile(values, 0.5),
                    p95_ns=_percentile(values, 0.95),
                    max_ns=values[-1],
                )
            )
        out.append(
            LifecycleChannel(
                channel=channel,
                requests=len(lengths),
                incomplete=incomplete,
                out_of_order=out_of_order,
                total_ns=sum(ascending),
                p50_ns=_percentile(ascending, 0.5) if ascending else None,
                p95_ns=_percentile(ascending, 0.95) if ascending else None,
                max_ns=ascending[-1] if ascending else None,
                segments=segments,
                slowest=[(key, ns, begun, ended) for ns, key, begun, ended in lengths[:SLOWEST]],
            )
        )
    return out
