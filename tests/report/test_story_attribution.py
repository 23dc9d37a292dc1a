"""The critical path's split by phase (``attribution.overlaps``) against the plain walk over
every span it replaced: the same nanoseconds per segment and phase, on random nested spans of
several threads, open entries and segments that cut spans anywhere."""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import defaultdict

from lineprofiler.report.compute.story.attribution import overlaps


def _walk(spans, opened, segments):
    """Each span against each segment of its thread: the definition."""
    start, end, phase, thread = spans
    last = max([b for _, _, b in segments], default=0)
    by_thread = defaultdict(list)
    for n, (t, _, _) in enumerate(segments):
        by_thread[t].append(n)
    starts = {t: [segments[n][1] for n in ns] for t, ns in by_thread.items()}
    out = [defaultdict(int) for _ in segments]
    rows = list(zip(start, end, phase, thread, strict=True))
    rows.extend((s, max(s, last), p, t) for s, p, t in opened)
    for s, e, p, t in rows:
        mine = by_thread.get(t)
        if mine is None:
            continue
        k = max(0, bisect_right(starts[t], s) - 1)
        while k < len(mine):
            _, a, b = segments[mine[k]]
            if a >= e:
                break
            if b > s:
                out[mine[k]][p] += min(b, e) - max(a, s)
            k += 1
    return out


def _nested(rng, threads):
    rows = []
    for t in range(threads):
        now = rng.randrange(1_000)

        def emit(depth, now, t=t):
            for _ in range(rng.randrange(1, 4)):
                begin = now + rng.randrange(0, 50)
                inner = emit(depth + 1, begin, t) if depth < 3 and rng.random() < 0.5 else begin
                stop = inner + rng.randrange(0, 200)
                rows.append((begin, stop, depth * 10 + rng.randrange(3), t))
                now = stop
            return now

        emit(0, now)
    rows.sort(key=lambda r: r[0])
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[], [], [], []]


def _segments(rng, threads, horizon):
    out = []
    for t in range(threads):
        cuts = sorted(rng.sample(range(horizon), rng.randrange(0, 12) * 2))
        out.extend((t, a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=True))
    return sorted(out, key=lambda s: (s[0], s[1]))


def test_the_split_is_the_walk_over_every_span():
    rng = random.Random(28)
    for _ in range(300):
        threads = rng.randrange(1, 4)
        spans = _nested(rng, threads)
        horizon = max(spans[1], default=0) + 100
        opened = [(rng.randrange(horizon), rng.randrange(5), rng.randrange(threads)) for _ in range(rng.randrange(3))]
        segments = _segments(rng, threads + 1, horizon)  # a thread with segments and no span, too
        # A phase covering 0 ns of a segment may be there or not: it is never shown.
        got = [{p: ns for p, ns in d.items() if ns} for d in overlaps(spans, opened, segments)]
        want = [{p: ns for p, ns in d.items() if ns} for d in _walk(spans, opened, segments)]
        assert got == want
