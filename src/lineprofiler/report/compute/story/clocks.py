"""One timeline for the hosts of a run: each host's monotonic clock offset onto a reference host's.

The processes of one host share CLOCK_MONOTONIC, so their spans need no offset. Across hosts two
things bound the offset: the clock pairs (monotonic and wall clock read back to back: the offset
is the difference of the hosts' ``unix - monotonic``, *if* their wall clocks agree, within the
pairs' read times), and the matched links (a wait cannot end before its signal: each link from
host A to host B bounds ``offset_B - offset_A`` from below). The estimate is the pairs' one kept
inside the links' bounds; when the two cannot both hold, the links win and the disagreement is
said. Links between two hosts that are neither the reference do not bound here: an arrow between
them that still runs backwards is marked so by the story.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ... import format as fmt
from .model import HostClock
from .spans import Link, WorkerTrace

#: A matched pair: the signalling worker and link, the waiting worker and link.
Match = tuple[WorkerTrace, Link, WorkerTrace, Link]


def offset_text(ns: int | None) -> str:
    """A clock offset to the microsecond, signed: ``+4000.003050s`` (a duration's units would
    round an hour's offset to minutes)."""
    return "unbounded" if ns is None else f"{ns / 1e9:+.6f}s"


def reference_host(traces: Sequence[WorkerTrace]) -> str:
    """The host of the most traced workers (ties: the first by name)."""
    counts = Counter(t.host for t in traces)
    return min(counts, key=lambda host: (-counts[host], host))


def _pair_estimates(traces: Sequence[WorkerTrace]) -> dict[str, tuple[int, int]]:
    """Per host, ``(unix - monotonic, uncertainty)`` of its most certain clock pair."""
    best: dict[str, tuple[int, int]] = {}
    for trace in traces:
        for mono, unix, uncertainty in trace.clock_pairs:
            held = best.get(trace.host)
            if held is None or uncertainty < held[1]:
                best[trace.host] = (unix - mono, uncertainty)
    return best


def estimate(traces: Sequence[WorkerTrace], matches: Sequence[Match]) -> dict[str, HostClock]:
    """Every host's :class:`HostClock` (the reference's offset is 0, exactly)."""
    if not traces:
        return {}
    reference = reference_host(traces)
    pairs = _pair_estimates(traces)
    lows: dict[str, int] = {}
    highs: dict[str, int] = {}
    bounding: Counter[str] = Counter()
    for signaller, signal, waiter, wait in matches:
        a, b = signaller.host, waiter.host
        if a == b:
            continue
        if a == reference:  # wait_B + off_B >= signal_A: off_B >= signal - wait
            lows[b] = max(lows.get(b, signal.t_ns - wait.t_ns), signal.t_ns - wait.t_ns)
            bounding[b] += 1
        elif b == reference:  # wait_ref >= signal_A + off_A: off_A <= wait - signal
            highs[a] = min(highs.get(a, wait.t_ns - signal.t_ns), wait.t_ns - signal.t_ns)
            bounding[a] += 1
    clocks = {reference: HostClock(reference, 0, 0, 0, "reference")}
    for host in sorted({t.host for t in traces} - {reference}):
        clocks[host] = _one_host(host, reference, pairs, lows.get(host), highs.get(host), bounding[host])
    return clocks


def _one_host(
    host: str, reference: str, pairs: dict[str, tuple[int, int]], low: int | None, high: int | None, links: int
) -> HostClock:
    shown = fmt.printable(host)
    if low is not None and high is not None and low > high:
        return HostClock(
            host,
            (low + high) // 2,
            None,
            None,
            "links",
            links,
            f"the links between {shown} and {fmt.printable(reference)} contradict each other (waits that must end "
            f"both {fmt.duration(low - high)} before and after their signals): {shown}'s offset is unknown",
        )
    if host in pairs and reference in pairs:
        estimate = pairs[host][0] - pairs[reference][0]
        spread = pairs[host][1] + pairs[reference][1]
        p_low, p_high = estimate - spread, estimate + spread
        in_low = p_low if low is None else max(p_low, low)
        in_high = p_high if high is None else min(p_high, high)
        if in_low <= in_high:
            narrowed = (low is not None and low > p_low) or (high is not None and high < p_high)
            offset = min(max(estimate, in_low), in_high)
            return HostClock(
                host, offset, in_low, in_high, "clock pairs and links" if narrowed else "clock pairs", links
            )
        # The wall clocks disagree: a wait cannot end before its signal, so the links win.
        offset = low if low is not None and estimate < low else high if high is not None else estimate
        bound = f"at least {offset_text(low)}" if offset == low else f"at most {offset_text(high)}"
        return HostClock(
            host,
            offset,
            low,
            high,
            "links",
            links,
            f"the wall clocks of {shown} and {fmt.printable(reference)} disagree by at least "
            f"{fmt.duration(abs(estimate - offset) - spread)}: their clock pairs put {shown}'s offset at "
            f"{offset_text(estimate)} ± {fmt.duration(spread)}, but {links} link(s) need {bound} "
            "(a wait cannot end before its signal): the links' bound is used",
        )
    if low is not None or high is not None:
        bounded = (low + high) // 2 if low is not None and high is not None else low if low is not None else high
        assert bounded is not None
        return HostClock(host, bounded, low, high, "links", links)
    return HostClock(
        host,
        0,
        None,
        None,
        "none",
        0,
        f"{shown} has no clock pair and no link to {fmt.printable(reference)}: its spans are drawn as if its "
        "clock were the reference's, and their order against other hosts is unknown",
    )
