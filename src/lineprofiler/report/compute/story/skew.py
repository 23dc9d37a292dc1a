"""Per-rank step skew at collective phases: who arrives late, as Holistic Trace Analysis defines
a straggler.

A phase "carries a step" when it is collective (entered with ``sync=True``) and more than one
rank recorded it: its n-th entry in each rank is step n (counted from the last entry when a rank's
oldest spans were dropped, so that the steps still line up). A rank's arrival is that entry's
start on the run's timeline; at each step the others wait for the latest arrival. The straggler
is the rank that arrived last at the most steps; what it cost is, summed over steps, how much
later the last arrival was than the median one, never more than the time from the first arrival
to the last (steps that overlap in time, ranks whose rings kept different steps, cannot make it
exceed the run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import median

from .model import HostClock, SkewPhase
from .spans import WorkerTrace


def skew(traces: Sequence[WorkerTrace], clocks: dict[str, HostClock]) -> list[SkewPhase]:
    paths = sorted({path for t in traces if t.worker.rank is not None for path in t.arrivals})
    out: list[SkewPhase] = []
    for path in paths:
        ranked = [t for t in traces if t.worker.rank is not None and len(t.arrivals.get(path, ())) > 0]
        if len({t.worker.rank for t in ranked}) < 2:
            continue
        steps = min(len(t.arrivals[path]) for t in ranked)
        from_end = any(t.dropped for t in ranked)
        late_total = 0
        spread_total = 0
        first_at, final_at = None, None
        last_at: Counter[int] = Counter()
        for n in range(steps):
            arrivals = []
            for t in ranked:
                starts = t.arrivals[path]
                at = starts[len(starts) - steps + n] if from_end else starts[n]
                arrivals.append((at + clocks[t.host].offset_ns, t.index))
            latest = max(arrivals)
            earliest = min(arrivals)[0]
            first_at = earliest if first_at is None else min(first_at, earliest)
            final_at = latest[0] if final_at is None else max(final_at, latest[0])
            late_total += latest[0] - int(median(a for a, _ in arrivals))
            spread_total += latest[0] - min(arrivals)[0]
            last_at[latest[1]] += 1
        if first_at is not None and final_at is not None:
            late_total = min(late_total, final_at - first_at)
        straggler, count = min(last_at.items(), key=lambda kv: (-kv[1], kv[0]))
        hosts = {t.host for t in ranked}
        uncertainties = [clocks[h].uncertainty_ns for h in hosts]
        uncertainty = None if any(u is None for u in uncertainties) else max(u for u in uncertainties if u is not None)
        out.append(
            SkewPhase(
                phase=path,
                steps=steps,
                ranks=len(ranked),
                late_ns=late_total,
                straggler_rank=traces[straggler].worker.rank,
                straggler_process=straggler,
                straggler_steps=count,
                mean_spread_ns=spread_total / steps if steps else 0.0,
                uncertainty_ns=uncertainty if len(hosts) > 1 else 0,
            )
        )
    return out
