"""The optional ``trace`` section of a worker file: checked, and read back as columns.

``Profiler(trace=True)`` writes into each worker document a ``trace`` object: the exact spans of
its closed phase entries, the entries still open, and the ``signal`` / ``wait_on`` links
(docs/report.md, "The story of a run", gives the schema). Merge never parses it (it reads files
with ``skip_samples``); :func:`read_trace` reads one file's trace, on purpose, one worker at a
time, and :func:`check_trace` turns it into :class:`TraceColumns`: arrays, not a Python object
per span, so a thousand processes of 200,000 spans each can be reported.
"""

from __future__ import annotations

import operator
import os
from array import array
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import Any, NoReturn

from . import reading, spanfile, workerfile
from .validation import is_count, is_text

#: The columns of one ``trace.spans`` row, and of one ``trace.open`` row.
SPAN_COLUMNS = spanfile.ROW_ORDER
OPEN_COLUMNS = ("start_ns", "phase_id", "thread")
#: A link's kind: a signal or a wait, or a request lifecycle's checkpoint ("mark:NAME" too).
LINK_KINDS = ("signal", "wait", "begin", "end")


class TraceColumns:
    """A validated ``trace`` section with its rows as columns: one ``array('q')`` per column of
    ``spans`` and ``open`` (a run of a thousand processes holds no Python object per span), the
    links as tuples ``(kind, channel, key, t_ns, thread, phase_id)`` (they are few)."""

    __slots__ = (
        "clock",
        "clock_pairs",
        "capacity",
        "recorded",
        "dropped",
        "threads",
        "spans",
        "open",
        "links",
        "links_capacity",
        "links_recorded",
        "links_dropped",
    )
    clock: str
    clock_pairs: list[tuple[int, int, int]]
    capacity: int
    recorded: int
    dropped: int
    threads: list[dict[str, Any]]
    #: ``start_ns, end_ns, phase_id, thread, cpu_ns`` columns.
    spans: list[array[int]]
    #: ``start_ns, phase_id, thread`` columns.
    open: list[array[int]]
    links: list[tuple[Any, ...]]
    links_capacity: int
    links_recorded: int
    links_dropped: int

    def __init__(self, **values: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, values[name])


def skipped(trace: object) -> bool:
    """Whether a document's ``trace`` is :data:`~.workerfile.TRACE_SKIPPED` (left in the file by a
    reader that skips samples), or a copy of it that came back from a pool's process."""
    return trace is workerfile.TRACE_SKIPPED or trace == workerfile.TRACE_SKIPPED


def _int_columns(rows: object, width: int) -> list[Any] | None:
    """``rows`` (a list of lists of ``width`` int64) as ``width`` arrays; None when it is not."""
    if type(rows) is not list:
        return None
    # The length of every row at C speed (a ring holds 200,000 of them); the array refuses a row
    # that is not a list of ints.
    if rows and set(map(len, rows)) != {width}:
        return None
    try:
        # The array refuses anything but an int64 (a float, a string, an int past 64 bits).
        flat = array("q", chain.from_iterable(rows))
    except (TypeError, OverflowError):
        return None
    return [flat[i::width] for i in range(width)]


def check_trace(trace: Any, path: object, error: type[Exception]) -> TraceColumns:
    """A worker document's ``trace`` object as columns; raise ``error`` with one line naming the
    first problem. Spans must be sorted by start, end at or after their start, and name one of
    ``threads``."""

    def fail(what: str) -> NoReturn:
        raise error(f"{path}: 'trace.{what}")

    if not isinstance(trace, dict):
        raise error(f"{path}: 'trace' is neither an object nor null")
    if trace.get("in_live_file") is True:
        # A periodic snapshot's: the rings are in the live file beside it (read instead where
        # it can be), and this file holds none of them.
        raise error(f"{path}: its spans are kept in its live file, which could not be read")
    clock = trace.get("clock")
    if clock != "monotonic":
        fail(f"clock' is {ascii(clock)[:40]}, not 'monotonic'")
    counts = {}
    for key in ("capacity", "recorded", "dropped", "links_capacity", "links_recorded", "links_dropped"):
        value = trace.get(key, 0)
        if not is_count(value):
            fail(f"{key}' is not a count")
        counts[key] = value
    pairs = _int_columns(trace.get("clock_pairs", []), 3)
    if pairs is None or any(v < 0 for column in pairs for v in column):
        fail("clock_pairs' is not a list of [monotonic_ns, unix_ns, uncertainty_ns]")
    threads = trace.get("threads")
    if type(threads) is not list:
        fail("threads' is not a list")
    for i, thread in enumerate(threads):
        if (
            not isinstance(thread, dict)
            or not is_count(thread.get("ident", 0))
            or not (thread.get("native_id") is None or is_count(thread.get("native_id")))
            or not is_text(thread.get("name", ""))
        ):
            fail(f"threads[{i}]' is not an object of ident, native_id and name")
    n_threads = len(threads)
    if spanfile.is_reference(trace.get("spans")):
        # The final snapshot's spans file: its size and CRC-32 say it is what the writer wrote,
        # sorted and in range (checking each value again would cost more than reading it).
        try:
            spans = spanfile.read(path, trace["spans"])  # type: ignore[arg-type]
        except spanfile.SpanFileError as problem:
            raise error(f"{path}: {problem}") from None
    elif isinstance(trace.get("spans"), spanfile.SpanColumns):
        spans = trace["spans"].arrays  # a live file's ring, checked record by record as it was read
        if spans[0] and max(spans[3]) >= n_threads:
            fail("spans' names an unknown thread")
    else:
        spans = _checked_rows(trace.get("spans"), n_threads, fail)
    opened = _int_columns(trace.get("open", []), len(OPEN_COLUMNS))
    if opened is None or (opened[0] and (min(opened[0]) < 0 or min(opened[2]) < 0 or max(opened[2]) >= n_threads)):
        fail("open' is not a list of [start_ns, phase_id, thread] of known threads")
    links = trace.get("links", [])
    if type(links) is not list:
        fail("links' is not a list")
    checked = []
    for i, link in enumerate(links):
        if (
            type(link) is not list
            or len(link) != 6
            or not (link[0] in LINK_KINDS or (isinstance(link[0], str) and link[0].startswith("mark:")))
            or not is_text(link[1])
            or not is_text(link[2])
            or not is_count(link[3])
            or not is_count(link[4])
            or link[4] >= n_threads
            or not is_count(link[5], -1)
        ):
            fail(
                f"links[{i}]' is not [kind (\"signal\", \"wait\", \"begin\", \"mark:NAME\", \"end\"), "
                "channel, key, t_ns, thread, phase_id]"
            )
        checked.append(tuple(link))
    return TraceColumns(
        clock=clock,
        clock_pairs=list(zip(*pairs, strict=True)),
        threads=threads,
        spans=spans,
        open=opened,
        links=checked,
        **counts,
    )


def _checked_rows(rows: object, n_threads: int, fail: Callable[[str], NoReturn]) -> list[array[int]]:
    """JSON span rows as columns, each value checked (a file with no spans file beside it)."""
    spans = _int_columns(rows, len(SPAN_COLUMNS))
    if spans is None:
        fail("spans' is not a list of [start_ns, end_ns, phase_id, thread, cpu_ns] integers")
    start, end, phase, thread, cpu = spans
    if spans[0] and (
        min(start) < 0
        or min(phase) < 0
        or min(thread) < 0
        or max(thread) >= n_threads
        or min(cpu) < -1
        or not all(map(operator.le, start, end))
    ):
        fail("spans' holds a span that ends before it starts, a negative phase_id or an unknown thread")
    if not all(map(operator.le, start, start[1:])):
        fail("spans' is not sorted by start_ns")
    return spans


def read_trace(path: str | os.PathLike[str]) -> TraceColumns | None:
    """The ``trace`` of one worker file, checked, as columns; None when tracing was off.

    Reads the file again and parses only the trace where the layout allows. Raises
    WorkerFileError (one line) for a file or a trace that cannot be used.
    """
    import json

    path = Path(path)
    try:
        raw = reading.read_limited(path, workerfile.MAX_FILE_BYTES)
    except OSError as error:
        raise workerfile.WorkerFileError(f"{path}: cannot read: {error.strerror or error}") from None
    split = workerfile.split_trace(raw)
    try:
        if split is not None:
            trace = json.loads(split[1], parse_constant=workerfile._refuse_constant)
        else:
            document = json.loads(raw, parse_constant=workerfile._refuse_constant)
            trace = document.get("trace") if isinstance(document, dict) else None
    except (ValueError, RecursionError) as error:
        raise workerfile.WorkerFileError(f"{path}: corrupt or truncated JSON ({error.__class__.__name__})") from None
    if trace is None:
        return None
    return check_trace(trace, path, workerfile.WorkerFileError)


def span_rows(trace: dict[str, Any], worker_file: str | os.PathLike[str]) -> list[list[int]]:
    """The ``[start_ns, end_ns, phase_id, thread, cpu_ns]`` rows of a worker document's ``trace``,
    held in it or in the spans file it names (beside ``worker_file``). Raises SpanFileError."""
    spans = trace.get("spans")
    if spanfile.is_reference(spans):
        return [list(row) for row in zip(*spanfile.read(worker_file, spans), strict=True)]
    return list(spans) if isinstance(spans, (list, spanfile.SpanColumns)) else []
