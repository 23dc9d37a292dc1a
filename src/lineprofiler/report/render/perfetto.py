"""``lineprofiler export RUN_DIR --perfetto trace.json``: the run as Chrome trace-event JSON.

Opens in ui.perfetto.dev and chrome://tracing. The format is the JSON object form of the
trace-event format: ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``,
timestamps (``ts``, ``dur``) in microseconds from the run's start.

* One process track per worker file, named ``role host pid (rank)``. Trace pids are the
  worker's position in the run (1, 2, ...), because real pids collide across nodes; the real
  pid is in the name. A ``process_sort_index`` keeps each role's workers together.
* On each process's thread 0, one complete event named ``lifetime`` spanning its lifetime, with
  its status, busy time and top phases as arguments. How it ended is process metadata, as
  Perfetto shows it beside the process's name: a ``process_labels`` event (``exited``,
  ``signalled SIGTERM``, ``running``: still running at its last snapshot, ``started``: its start
  file only), and for an ended process an instant event at its end named the same.
* Counter tracks from its resource samples: ``RSS`` (bytes), ``I/O rate`` (``disk read``,
  ``cache read`` and ``write`` in bytes per second over each valid sample interval, net of the
  profiler's own I/O; intervals the report drops are left out) and ``GPU <i>`` (``busy %`` of
  the whole device, ``this process %``). Past ``max_points`` samples a track keeps, per column
  of time, the samples holding its lowest and highest value, so spikes survive.
* Phase occupancy slices on thread 1 (``phases``) when the run recorded a timeline
  (``report/compute/blocks/timeline.py``).
* For a traced run (``Profiler(trace=True)``), the exact spans: a complete slice (``"X"``, ``cat``
  ``span``) per span on thread ``10 + i`` (``trace <thread name>``), entries a killed worker left
  open as slices to its last known moment (``cat`` ``open``), and each matched link as a flow
  (``"s"`` at the signal, ``"f"`` at the end of the wait; named ``channel (clocks disagree)``
  where the hosts' clocks put the wait first). Spans are placed on the story's one timeline
  (:mod:`..compute.story.clocks`). At most ``max_spans`` spans are written (each process keeps its newest
  share): ``otherData.story`` says how many were written and left out. The events are written as
  they are read, one worker at a time (:func:`iter_trace_json`).
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...runfiles.samplefile import IO_FIELDS, SampleFileError, SampleTable, classify, read_samples
from ...runfiles.workerfile import WorkerFileError
from ..compute.blocks import RenderOptions, sample_infos, timeline
from ..compute.blocks.story import story_block
from ..compute.story.model import Story
from ..compute.story.spans import trace_columns
from ..read.run import Run, Worker
from ..wording import FINAL_STATUSES

#: Samples kept per counter track and worker before reducing to per-column extremes.
MAX_POINTS = 2000
#: Exact spans written at most (1,024 workers of 200,000 spans would be a 10 GB file no viewer
#: opens): about 110 MB.
MAX_SPANS = 1_000_000
_NS_PER_US = 1000
#: What :func:`iter_trace_json` gathers before it yields (a piece, not the whole file, in memory).
_PIECE_CHARS = 1 << 20


def process_name(worker: Worker) -> str:
    """``role host pid (rank)``; without a rank, ``role host pid``."""
    name = f"{worker.role} {worker.host} {worker.pid}"
    return name if worker.rank is None else f"{name} ({worker.rank})"


def status_label(worker: Worker) -> str:
    """How the process ended, or that it had not: ``exited``, ``signalled SIGTERM``, ``running``."""
    if worker.status == "signalled" and worker.signal:
        return f"signalled {worker.signal}"
    return worker.status


def _lifetime(worker: Worker, pid: int, start: int) -> Iterator[dict[str, Any]]:
    """The lifetime slice, and the instant at the end of a process that ended. The slice is not
    named after the status: a slice that says "signalled" for the whole life of a process reads
    as if it spent its life being signalled."""
    top = sorted(
        ((p["path"], p["self_ns"]) for p in worker.document["phases"] if p["self_ns"] > 0), key=lambda kv: -kv[1]
    )[:5]
    label = status_label(worker)
    yield {
        "name": "lifetime",
        "ph": "X",
        "pid": pid,
        "tid": 0,
        "ts": (worker.start_ns - start) / _NS_PER_US,
        "dur": max(0, worker.stop_ns - worker.start_ns) / _NS_PER_US,
        "args": {
            "status": label,
            "busy_ms": worker.busy_ns / 1e6,
            **{f"self ms: {path}": ns / 1e6 for path, ns in top},
        },
    }
    if worker.end_ns is not None and worker.status in FINAL_STATUSES:
        yield {"name": label, "ph": "i", "s": "t", "pid": pid, "tid": 0, "ts": (worker.end_ns - start) / _NS_PER_US}


def _keep(times: Sequence[int], values: Sequence[float], max_points: int) -> list[int]:
    """Indices of the samples to keep: all of them up to ``max_points``, else per column of
    time the ones with the column's lowest and highest value, in time order."""
    n = len(times)
    if n <= max_points:
        return list(range(n))
    columns = max(1, max_points // 2)
    start, span = times[0], max(1, times[-1] - times[0])
    kept: list[int] = []
    first = 0
    for c in range(columns):
        edge = start + span * (c + 1) // columns
        last = first
        while last < n and (times[last] < edge or c == columns - 1):
            last += 1
        if last > first:
            chunk = range(first, last)
            low = min(chunk, key=values.__getitem__)
            high = max(chunk, key=values.__getitem__)
            kept.extend(sorted({low, high}))
        first = last
    return kept


def _counter(pid: int, name: str, t_us: float, args: dict[str, float]) -> dict[str, Any]:
    return {"name": name, "ph": "C", "pid": pid, "tid": 0, "ts": t_us, "args": args}


def _rss(table: SampleTable, pid: int, to_us: Any, max_points: int) -> Iterator[dict[str, Any]]:
    times, rss = table.column("t_ns"), table.column("rss_bytes")
    rows = [k for k in range(len(rss)) if rss[k] >= 0]
    t = [times[k] for k in rows]
    v = [rss[k] for k in rows]
    for i in _keep(t, v, max_points):
        yield _counter(pid, "RSS", to_us(t[i]), {"bytes": v[i]})


def _io_rates(table: SampleTable, pid: int, to_us: Any, max_points: int) -> Iterator[dict[str, Any]]:
    if any(c not in table.columns for c in ("flags", *IO_FIELDS, *("own_" + f for f in IO_FIELDS))):
        return
    breaks, _ = classify(table.byte_of("rchar", 7), table.byte_of("flags", 0))
    broken = set(breaks)
    times = table.column("t_ns")
    net = {f: [a - b for a, b in zip(table.column(f), table.column("own_" + f), strict=True)] for f in IO_FIELDS}
    read, chars = net["read_bytes"], net["rchar"]
    written, cancelled = net["write_bytes"], net["cancelled_write_bytes"]
    ends, rates = [], []
    for k in range(1, len(times)):
        dt = (times[k] - times[k - 1]) / 1e9
        if k in broken or dt <= 0:
            continue
        disk = read[k] - read[k - 1]
        cache = chars[k] - chars[k - 1] - disk
        write = written[k] - written[k - 1] - (cancelled[k] - cancelled[k - 1])
        ends.append(times[k])
        rates.append((max(0, disk) / dt, max(0, cache) / dt, max(0, write) / dt))
    totals = [sum(r) for r in rates]
    for i in _keep(ends, totals, max_points):
        disk, cache, write = rates[i]
        yield _counter(pid, "I/O rate", to_us(ends[i]), {"disk read": disk, "cache read": cache, "write": write})


def _gpu(table: SampleTable, pid: int, to_us: Any, max_points: int) -> Iterator[dict[str, Any]]:
    times = table.column("t_ns")
    for name in table.columns:
        if not (name.startswith("gpu") and name.endswith("_busy")):
            continue
        index = name[3:-5]
        busy = table.column(name)
        mine_name = f"gpu{index}_mine"
        mine = table.column(mine_name) if mine_name in table.columns else None
        rows = [k for k in range(len(busy)) if busy[k] >= 0]
        t = [times[k] for k in rows]
        v = [float(busy[k]) for k in rows]
        for i in _keep(t, v, max_points):
            args = {"busy %": v[i]}
            k = rows[i]
            # mine: -1 is measured with nothing attributed (zero); -2 or below, not measured.
            if mine is not None and mine[k] >= -1:
                args["this process %"] = float(max(0, mine[k]))
            yield _counter(pid, f"GPU {index}", to_us(t[i]), args)


def trace_events(run: Run, *, max_points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """Every event of the trace, metadata first for each process."""
    start = run.start_ns
    options = RenderOptions(no_samples=run.no_samples)
    events: list[dict[str, Any]] = []
    pids = {id(w): n for n, w in enumerate(run.workers, start=1)}
    role_order = {name: n for n, name in enumerate(run.roles)}
    for worker in run.workers:
        pid = pids[id(worker)]
        for meta, args in (
            ("process_name", {"name": process_name(worker)}),
            ("process_labels", {"labels": status_label(worker)}),
            ("process_sort_index", {"sort_index": role_order[worker.role]}),
            ("thread_name", {"name": "process"}),
        ):
            events.append({"name": meta, "ph": "M", "pid": pid, "tid": 0, "args": args})
        events.extend(_lifetime(worker, pid, start))
    if not run.no_samples:
        for info in sample_infos(run, options):
            if info.sidecar is None:
                continue
            try:
                table = read_samples(info.sidecar)
            except SampleFileError:
                continue  # the report names an unreadable sample file; the trace just lacks it
            if "t_ns" not in table.columns or not table.rows:
                continue
            pid = pids[id(info.worker)]
            offset = table.unix_ref_ns - table.monotonic_ref_ns - start

            def to_us(t_ns: int, offset: int = offset) -> float:
                return (t_ns + offset) / _NS_PER_US

            if "rss_bytes" in table.columns:
                events.extend(_rss(table, pid, to_us, max_points))
            events.extend(_io_rates(table, pid, to_us, max_points))
            events.extend(_gpu(table, pid, to_us, max_points))
            del table
    for lane in timeline.lanes(run, options):
        worker_pid = next(
            (pids[id(w)] for w in run.workers if w.pid == lane.process.pid and w.host == lane.process.host), None
        )
        if worker_pid is None:
            continue
        events.append({"name": "thread_name", "ph": "M", "pid": worker_pid, "tid": 1, "args": {"name": "phases"}})
        for span in lane.spans:
            events.append(
                {
                    "name": span.path,
                    "ph": "X",
                    "pid": worker_pid,
                    "tid": 1,
                    "ts": (span.start_ns - start) / _NS_PER_US,
                    "dur": max(0, span.end_ns - span.start_ns) / _NS_PER_US,
                }
            )
    return events


def _phase_names(worker: Worker) -> Any:
    """``phase_id -> its path as JSON text`` for one worker, each encoded once."""
    paths = {p["id"]: p["path"] for p in worker.document["phases"] if type(p.get("id")) is int}
    names: dict[int, str] = {}

    def phase_name(phase_id: int) -> str:
        if phase_id not in names:
            names[phase_id] = json.dumps(paths.get(phase_id, f"phase #{phase_id}"))
        return names[phase_id]

    return phase_name


def _span_events(
    spans: Sequence[Sequence[int]], first: int, pid: int, offset: int, phase_name: Callable[[int], str]
) -> Iterator[str]:
    """One process's spans from ``first`` on as X events, in pieces of lines joined by ``,\n``:
    formatted by ``str.format`` over ``map``s of the columns (no Python code per span, a million
    of them being allowed)."""
    start, end, phase, thread_of, cpu = (column[first:] for column in spans)
    if not start:
        return
    names = {p: phase_name(p) for p in set(phase)}
    head = '{{"name":{},"cat":"span","ph":"X","pid":%d,"tid":{},"ts":{},"dur":{}' % pid
    columns: list[Iterator[Any]] = [
        map(names.__getitem__, phase),
        map((10).__add__, thread_of),
        map(operator.truediv, map(offset.__add__, start), itertools.repeat(_NS_PER_US)),
        map(operator.truediv, map(operator.sub, end, start), itertools.repeat(_NS_PER_US)),
    ]
    if min(cpu) >= 0:  # measured for every span: each carries it
        columns.append(map(operator.truediv, cpu, itertools.repeat(1e6)))
        yield ",\n".join(map((head + ',"args":{{"cpu_ms":{}}}}}').format, *columns))
    elif max(cpu) < 0:  # measured for none (measure_cpu=False)
        yield ",\n".join(map((head + "}}").format, *columns))
    else:
        yield ",\n".join(
            head.format(name, tid, ts, dur) + ("" if cpu_ns < 0 else f',"args":{{"cpu_ms":{cpu_ns / 1e6}}}') + "}"
            for name, tid, ts, dur, cpu_ns in zip(*columns, cpu, strict=True)
        )


def _story_events(run: Run, story: Story, quota: int) -> Iterator[str]:
    """The story's spans (each process's newest ``quota``) and flows, as JSON event lines."""
    shift = story.timeline_unix_ns if story.timeline_unix_ns is not None else run.start_ns - story.run_start_ns
    base = shift - run.start_ns
    for process in story.processes:
        worker = run.workers[process.worker]
        pid = process.worker + 1
        try:
            trace = trace_columns(worker)
        except WorkerFileError:
            continue  # the report names a trace it could not read
        if trace is None:
            continue
        offset = base + process.offset_ns
        for t, thread in enumerate(trace.threads):
            name = json.dumps({"name": f"trace {thread.get('name') or t}"})
            yield f'{{"name":"thread_name","ph":"M","pid":{pid},"tid":{10 + t},"args":{name}}}'
        phase_name = _phase_names(worker)
        yield from _span_events(trace.spans, max(0, len(trace.spans[0]) - quota), pid, offset, phase_name)
        stop = story.processes[process.index].end_ns - process.offset_ns
        for o_start, o_phase, o_thread in zip(*trace.open, strict=True):
            yield (
                f'{{"name":{phase_name(o_phase)},"cat":"open","ph":"X","pid":{pid},"tid":{10 + o_thread},'
                f'"ts":{(o_start + offset) / _NS_PER_US},"dur":{max(0, stop - o_start) / _NS_PER_US},'
                '"args":{"open":"still open when the file was written: drawn to its last known moment"}}'
            )
        del trace
    for n, arrow in enumerate(story.arrows, start=1):
        name = json.dumps(arrow.channel + (" (clocks disagree)" if arrow.backwards else ""))
        key = json.dumps({"key": arrow.key})
        for ph, who, tid, at in (
            ("s", arrow.from_process, arrow.from_thread, arrow.from_ns),
            ("f", arrow.to_process, arrow.to_thread, arrow.to_ns),
        ):
            pid = story.processes[who].worker + 1
            bind = ',"bp":"e"' if ph == "f" else ""
            yield (
                f'{{"name":{name},"cat":"link","ph":"{ph}","id":{n},"pid":{pid},"tid":{10 + tid},'
                f'"ts":{(at + base) / _NS_PER_US}{bind},"args":{key}}}'
            )


def _story_of(run: Run) -> Story | None:
    return story_block(run, RenderOptions(no_samples=True))


def trace_document(run: Run, *, max_points: int = MAX_POINTS) -> dict[str, Any]:
    return {
        "traceEvents": trace_events(run, max_points=max_points),
        "displayTimeUnit": "ms",
        "otherData": {"run": run.name, "run_dir": str(run.run_dir), "start_unix_ns": run.start_ns},
    }


def iter_trace_json(run: Run, *, max_points: int = MAX_POINTS, max_spans: int = MAX_SPANS) -> Iterator[str]:
    """The trace as JSON text, one event per line, in pieces: a traced run's spans are read and
    written one worker at a time, never held all at once."""
    doc = trace_document(run, max_points=max_points)
    story = _story_of(run)
    quota = max(1, max_spans // max(1, len(story.processes))) if story is not None else 0
    if story is not None:
        kept = sum(p.spans_kept for p in story.processes)
        written = sum(min(quota, p.spans_kept) for p in story.processes)
        doc["otherData"]["story"] = {
            "spans_written": written,
            "spans_left_out": kept - written,
            "spans_kept": kept,
            "spans_recorded": story.spans_recorded,
            "flows": len(story.arrows),
            "flows_left_out": story.arrows_left_out,
            "note": story.kept_line
            + (f"; {kept - written:,} more left out here: each process keeps its newest {quota:,}" * (kept > written)),
        }
    other = json.dumps(doc["otherData"], allow_nan=False)
    yield f'{{"displayTimeUnit":"ms","otherData":{other},"traceEvents":[\n'
    lines: Iterator[str] = (json.dumps(e, allow_nan=False, separators=(",", ":")) for e in doc["traceEvents"])
    if story is not None:
        lines = itertools.chain(lines, _story_events(run, story, quota))
    first = True
    batch: list[str] = []
    size = 0
    for line in lines:  # a line, or a process's spans: many lines in one piece
        if not first:
            batch.append(",\n")
        batch.append(line)
        first = False
        size += len(line)
        if size >= _PIECE_CHARS:
            yield "".join(batch)
            batch.clear()
            size = 0
    yield "".join(batch) + "\n]}\n"


def trace_json(run: Run, *, max_points: int = MAX_POINTS, max_spans: int = MAX_SPANS) -> str:
    """The trace as JSON text, one event per line."""
    return "".join(iter_trace_json(run, max_points=max_points, max_spans=max_spans))


__all__ = [
    "MAX_POINTS",
    "MAX_SPANS",
    "iter_trace_json",
    "process_name",
    "status_label",
    "trace_document",
    "trace_events",
    "trace_json",
]
