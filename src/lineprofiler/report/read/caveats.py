"""The CAVEATS lines a merge can tell from the files alone, most serious first.

What is unreadable, stale, never flushed, killed before any data, cut by a cap or repaired, and
what the report took from a live file rather than a snapshot: each a line, so that a number
the report prints is never silently short.
"""

from __future__ import annotations

from collections import Counter

from ...runfiles import layout, raycollect
from .. import format as fmt
from ..wording import FINAL_STATUSES, utc_time
from . import duplicates as duplicates_mod
from .run import Run, Worker

#: A worker is stale when it stopped flushing this many snapshot intervals before the run's end...
STALE_INTERVALS = 3
#: ...and at least this long before it (short intervals must not make every jitter a caveat).
STALE_MIN_NS = 10 * 1_000_000_000
#: How many workers a caveat names before it says "and N more".
CAVEAT_NAMES = 5


def _names(workers: list[Worker]) -> str:
    shown = ", ".join(w.label for w in workers[:CAVEAT_NAMES])
    if len(workers) > CAVEAT_NAMES:
        shown += f" and {len(workers) - CAVEAT_NAMES} more"
    return shown


def is_stale(worker: Worker, run_end_ns: int) -> bool:
    """True when a worker that never finished stopped flushing well before the run's end."""
    if worker.status in FINAL_STATUSES:
        return False
    threshold = max(STALE_INTERVALS * worker.interval_s * 1e9, STALE_MIN_NS)
    return run_end_ns - worker.last_flush_ns > threshold


def _per_worker(lines: list[str], items: list[tuple[Worker, str]], summary: str) -> None:
    """One line per worker, or, past :data:`CAVEAT_NAMES` workers, one line for all of them."""
    if len(items) <= CAVEAT_NAMES:
        lines.extend(line for _, line in items)
    else:
        lines.append(f"{len(items)} workers {summary}: {_names([w for w, _ in items])}; the first: {items[0][1]}")


def _live_line(worker: Worker) -> str:
    """The CAVEATS line of a worker reported from its live file."""
    name = fmt.printable(layout.live_path(worker.path).name)
    if worker.before_first_snapshot:
        text = (
            f"{worker.label} was killed before its first snapshot: numbers from its live file {name}, "
            "everything it recorded until it stopped"
        )
    else:
        text = (
            f"{worker.label}: numbers from its live file {name}, newer than its last snapshot "
            f"({utc_time(worker.last_flush_ns)}): everything it recorded until it stopped"
        )
    notes = "; ".join(worker.live_notes)
    return f"{text}; {notes[:400]}" if notes else text


#: Phase time may pass a lifetime by this share of it (the two are read from different clocks)...
OVERFULL_SHARE = 0.005
#: ...or by this much, before CAVEATS says so.
OVERFULL_MIN_NS = 1_000_000


def _overfull_line(worker: Worker) -> str | None:
    """Why a worker's phase time cannot be a share of its lifetime, when it holds more."""
    if not worker.has_data or worker.busy_ns <= 0:
        return None
    excess = worker.busy_ns - worker.elapsed_ns
    if excess <= max(OVERFULL_MIN_NS, OVERFULL_SHARE * worker.elapsed_ns):
        return None
    return (
        f"{worker.label}: its top-level phases hold {fmt.duration(worker.busy_ns)}, "
        f"{fmt.duration(excess)} more than its lifetime of {fmt.duration(worker.elapsed_ns)} (phases on several "
        "threads at once, or a lifetime cut short): its time in phases counts as 100% and its numbers are suspect"
    )


def ray_collect_caveats(run: Run) -> list[str]:
    """The problems Ray's last collect recorded in ``ray/collect.json`` (nodes that left or could
    not be collected, files not copied, actors that died without a final flush), one line each.
    A collect of another run (an earlier Ray job in the same directory) does not concern this one."""
    try:
        collected = raycollect.read_collect_file(run.run_dir)
    except raycollect.CollectFileError as error:
        return [f"Ray collect record not used, so what collect failed to bring here is unknown: {error}"]
    if collected is None:
        return []
    if collected.run_id is not None and collected.run_id not in {run.run_id, *(m.run_id for m in run.merged)}:
        return []
    # Ray's reasons may span lines ("...Node Id: ...\n\tthe actor's node was terminated"): a
    # caveat is one line, so its whitespace runs become single spaces.
    lines = [fmt.printable(" ".join(line.split()))[:600] for line in collected.caveats[: 2 * CAVEAT_NAMES]]
    more = len(collected.caveats) - 2 * CAVEAT_NAMES
    if more > 0:
        lines.append(f"... and {more} more problems of Ray's collect, listed in {collected.path}")
    return lines


def derive_caveats(run: Run) -> list[str]:
    """The CAVEATS lines merge can tell from the files alone, most serious first."""
    lines: list[str] = []
    end = run.end_ns
    for bad in run.unreadable[: 2 * CAVEAT_NAMES]:
        lines.append(f"unreadable worker file (its process is missing from every total): {bad.describe(run.run_dir)}")
    if len(run.unreadable) > 2 * CAVEAT_NAMES:
        lines.append(f"... and {len(run.unreadable) - 2 * CAVEAT_NAMES} more unreadable worker files")
    for problem in run.listing_problems:
        lines.append(f"folder not listed, its workers are missing from every total: {problem}")
    lines.extend(ray_collect_caveats(run))
    lines.extend(duplicates_mod.caveats(run.duplicates, run.run_dir, CAVEAT_NAMES))

    killed = [w for w in run.workers if w.status == "started" and not w.forked_unprofiled and is_stale(w, end)]
    _per_worker(
        lines,
        [
            (
                w,
                f"{w.label} was killed before any data: only its start file exists "
                f"(started {fmt.duration(max(0, end - w.start_ns))} before the run's last flush)",
            )
            for w in killed
        ],
        "were killed before any data (only their start files exist)",
    )
    not_yet = [w for w in run.workers if w.status == "started" and not w.forked_unprofiled and not is_stale(w, end)]
    if not_yet:
        lines.append(f"{len(not_yet)} worker(s) had written no data yet (just started): {_names(not_yet)}")

    live = [w for w in run.workers if w.numbers_from == "live"]
    _per_worker(
        lines,
        [(w, _live_line(w)) for w in live],
        "are reported from their live files (newer than their last snapshots)",
    )
    not_live = [w for w in run.workers if w.numbers_from.startswith("json: ")]
    _per_worker(
        lines,
        [
            (w, f"{w.label}: numbers from its last snapshot ({fmt.printable(w.numbers_from[6:])[:300]})")
            for w in not_live
        ],
        "are reported from their last snapshots, their live files not used",
    )
    _per_worker(
        lines,
        [(w, line) for w in run.workers if (line := _overfull_line(w)) is not None],
        "hold more phase time than their lifetimes",
    )
    stale = [w for w in run.workers if w.status != "started" and w.numbers_from != "live" and is_stale(w, end)]
    _per_worker(
        lines,
        [
            (
                w,
                f"{w.label} stopped writing {fmt.duration(end - w.last_flush_ns)} before the run "
                f"ended (last snapshot {utc_time(w.last_flush_ns)}): its numbers stop there",
            )
            for w in stale
        ],
        "stopped writing well before the run ended; their numbers stop at their last snapshot",
    )

    failing = []
    for worker in run.workers:
        snapshot = worker.document["snapshot"]
        if (snapshot.get("failures") or 0) > 0:
            error = snapshot.get("last_error")
            detail = f" (last error: {fmt.printable(error)[:160]})" if error else ""
            failing.append(
                (
                    worker,
                    f"{worker.label}: {fmt.count(snapshot['failures'])} snapshot write(s) failed{detail}; "
                    f"its file holds its last successful snapshot",
                )
            )
    _per_worker(lines, failing, "had snapshot writes fail")

    path_caps, counter_caps = [], []
    for worker in run.workers:
        caps = worker.document.get("caps") or {}
        if caps.get("paths_overflowed"):
            limit = caps.get("max_paths")
            path_caps.append(
                (
                    worker,
                    f"{worker.label} hit the phase-path cap"
                    f"{f' of {fmt.count(limit)}' if limit is not None else ''}: "
                    f"{fmt.count(caps['paths_overflowed'])} entries went to the overflow node",
                )
            )
        if caps.get("counters_overflowed"):
            limit = caps.get("max_counters")
            counter_caps.append(
                (
                    worker,
                    f"{worker.label} hit the counter cap"
                    f"{f' of {fmt.count(limit)}' if limit is not None else ''}: "
                    f"{fmt.count(caps['counters_overflowed'])} counts went to the overflow counter",
                )
            )
    _per_worker(lines, path_caps, "hit the phase-path cap")
    _per_worker(lines, counter_caps, "hit the counter cap")

    repaired = [w for w in run.workers if ((w.document.get("repairs") or {}).get("mismatched_exits") or 0) > 0]
    if repaired:
        total = sum(w.document["repairs"]["mismatched_exits"] for w in repaired)
        lines.append(
            f"{fmt.count(total)} mismatched phase exit(s) repaired (exited out of order or from another "
            f"thread) in {_names(repaired)}: times around them may be billed to the wrong phase"
        )

    _per_worker(
        lines,
        [
            (
                w,
                f"{w.label} recorded {len(w.document['errors'])} profiler error(s); "
                f"first: {fmt.printable(w.document['errors'][0])[:200]}",
            )
            for w in run.workers
            if w.document.get("errors")
        ],
        "recorded profiler errors",
    )

    signalled = [w for w in run.workers if w.status == "signalled"]
    if signalled:
        signals = sorted({fmt.printable(w.signal) for w in signalled if w.signal})
        lines.append(
            f"{len(signalled)} worker(s) flushed on a signal ({', '.join(signals) or 'unnamed'}): "
            f"{_names(signalled)}"
        )

    unfinished = [w for w in run.workers if w.status == "running" and w.numbers_from != "live" and not is_stale(w, end)]
    if unfinished:
        lines.append(
            f"{len(unfinished)} worker(s) never wrote a final flush (the run is still going, or they were "
            f"killed): {_names(unfinished)}; their numbers stop at their last snapshot"
        )

    duplicated = [rank for rank, n in Counter(w.rank for w in run.workers if w.rank is not None).items() if n > 1]
    if duplicated:
        lines.append(
            f"rank(s) {fmt.int_ranges(duplicated)} appear in more than one worker file of this attempt "
            f"(restarted workers?): each file is counted as a process"
        )
    return lines
