"""The optional ``trace`` section of a worker file: checked, and read back as columns.

``Profiler(trace=True)`` writes into each worker document a ``trace`` object: the exact spans of
its closed phase entries, the entries still open, and the ``signal`` / ``wait_on`` links
(docs/report.md, "The story of a run", gives the schema). Merge never parses it (it reads files
with ``skip_samples``); :func:`read_trace` reads one file's trace, on purpose, one worker at a
time, and :func:`check_trace` turns it into :class:`TraceColumns`: arrays, not a Python object
per span, so a thousand processes of 200,000 spans each can be reported.

A section whose shape is wrong (not an object, a span that is not five integers) is refused in
one line. A record that has the right shape but cannot be placed (a span that ends before it
starts, a thread index not in the thread table, a phase id the profiler cannot write, a time
outside the process's life) is left out and counted in :attr:`TraceColumns.left_out`, whatever
its source: rows, a spans file whose CRC-32 matches, or a live file's ring. One such record costs
itself, never the worker's trace. The checks run over whole columns (``min``, ``max`` and one
``map`` per condition), and pick the records out only when one fails.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
from array import array
from collections.abc import Callable, Iterable
from itertools import chain, compress
from pathlib import Path
from typing import Any, NoReturn

from . import reading, spanfile, workerfile
from .validation import is_count, is_text

#: The columns of one ``trace.spans`` row, and of one ``trace.open`` row.
SPAN_COLUMNS = spanfile.ROW_ORDER
OPEN_COLUMNS = ("start_ns", "phase_id", "thread")
#: A link's kind: a signal or a wait, or a request lifecycle's checkpoint ("mark:NAME" too).
LINK_KINDS = ("signal", "wait", "begin", "end")
#: Phase ids lie below this: they are the profiler's tree's nodes, at most ``max_paths``
#: (1,000,000 at most) paths after the root and the overflow node, under 2**20.
PHASE_ID_LIMIT = 1 << 20
#: How long before its first clock pair (taken when tracing started: no span starts earlier on
#: the same monotonic clock) a record may lie.
EARLY_SLACK_NS = 1_000_000_000
#: How long after its process's last sign of life (a wall time, put on its monotonic clock
#: through its newest clock pair) a record may lie: the wall clock may have been stepped since.
LATE_SLACK_NS = 3600 * 1_000_000_000
#: Why a record is left out, in the order the checks are made (a record counts for its first).
END_BEFORE_START = "end before they start"
UNKNOWN_THREAD = "name a thread not in their thread table"
PHASE_OUT_OF_RANGE = "have a phase id out of range"
OUTSIDE_LIFETIME = "lie outside the process's lifetime"
MALFORMED = "are malformed"


class TraceColumns:
    """A validated ``trace`` section with its rows as columns: one ``array('q')`` per column of
    ``spans`` and ``open`` (a run of a thousand processes holds no Python object per span), the
    links as tuples ``(kind, channel, key, t_ns, thread, phase_id)`` (they are few), and
    ``left_out``: per ``(record kind, why)`` (``("span", END_BEFORE_START)``), how many records
    could not be placed and are not in the columns."""

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
        "left_out",
        "checked_crc",
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
    left_out: dict[tuple[str, str], int]
    #: The CRC-32 of the spans file whose every span was found placed, in order (None: the spans
    #: were not from a file, or not all placed): a later reading of that file, in the same
    #: report, need not check them again (:func:`check_trace`'s ``checked_crc``).
    checked_crc: int | None

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


def check_trace(
    trace: Any, path: object, error: type[Exception], *, stop_unix_ns: int | None = None, checked_crc: int | None = None
) -> TraceColumns:
    """A worker document's ``trace`` object as columns; raise ``error`` with one line naming the
    first problem of its shape. The records that cannot be placed are left out and counted
    (:attr:`TraceColumns.left_out`); ``stop_unix_ns``, the process's last sign of life, bounds
    their times from above (None: only from below, by the first clock pair). ``checked_crc``: the
    :attr:`TraceColumns.checked_crc` of an earlier reading in this report; a spans file of that
    CRC-32 (checked again as it is read) holds the bytes then found placed, and is not checked
    span by span again."""

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
    left_out: dict[tuple[str, str], int] = {}
    window = lifetime_window(list(zip(*pairs, strict=True)), stop_unix_ns)
    if spanfile.is_reference(trace.get("spans")):
        # The final snapshot's spans file: its size and CRC-32 say it is what the writer wrote;
        # its values are checked all the same (a CRC is no proof that a span can be placed).
        try:
            spans = spanfile.read(path, trace["spans"])  # type: ignore[arg-type]
        except spanfile.SpanFileError as problem:
            raise error(f"{path}: {problem}") from None
    elif isinstance(trace.get("spans"), spanfile.SpanColumns):
        spans = trace["spans"].arrays  # a live file's ring, its torn records already left out
    else:
        rows = _int_columns(trace.get("spans"), len(SPAN_COLUMNS))
        if rows is None:
            fail("spans' is not a list of [start_ns, end_ns, phase_id, thread, cpu_ns] integers")
        spans = rows
    crc = trace["spans"].get("crc32") if spanfile.is_reference(trace.get("spans")) else None
    if crc is None or crc != checked_crc:  # else: these very bytes were found placed before
        placed = placed_spans(spans, n_threads, window, left_out)
        crc, spans = crc if placed is spans else None, placed  # the same columns: all placed
    opened = _int_columns(trace.get("open", []), len(OPEN_COLUMNS))
    if opened is None:
        fail("open' is not a list of [start_ns, phase_id, thread]")
    opened = _placed_open(opened, n_threads, window, left_out)
    links = trace.get("links", [])
    if type(links) is not list:
        fail("links' is not a list")
    return TraceColumns(
        clock=clock,
        clock_pairs=list(zip(*pairs, strict=True)),
        threads=threads,
        spans=spans,
        open=opened,
        links=_placed_links(links, n_threads, window, left_out),
        left_out=left_out,
        checked_crc=crc,
        **counts,
    )


def lifetime_window(pairs: list[tuple[int, int, int]], stop_unix_ns: int | None) -> tuple[int, int]:
    """``(low, high)`` on the process's monotonic clock outside which none of its records can
    lie: from its first clock pair (tracing started there) to its last sign of life, with
    :data:`EARLY_SLACK_NS` and :data:`LATE_SLACK_NS`. Unbounded (``0``, ``2**63``) where it has no
    clock pair, or (above) no last sign of life; never below 0."""
    if not pairs:
        return 0, 2**63
    low = max(0, min(mono for mono, _, _ in pairs) - EARLY_SLACK_NS)
    if stop_unix_ns is None:
        return low, 2**63
    mono, unix, _ = max(pairs)
    return low, mono + max(0, stop_unix_ns - unix) + LATE_SLACK_NS


def _count(left_out: dict[tuple[str, str], int], kind: str, why: str, n: int) -> None:
    if n:
        left_out[(kind, why)] = left_out.get((kind, why), 0) + n


def placed_spans(
    spans: list[array[int]], n_threads: int, window: tuple[int, int], left_out: dict[tuple[str, str], int]
) -> list[array[int]]:
    """The columns ``start, end, phase_id, thread, cpu`` of the spans that can be placed, sorted
    by start (stable); the others counted in ``left_out``. A CPU time below 0 is "not measured"
    wherever it is read. The usual file, all of whose spans can be placed, is told by
    :func:`_all_placed` without a Python object per span; the records are picked out, by one
    ``map`` per check and one ``compress`` per column, only when it says one cannot."""
    start, end, phase, thread, cpu = spans
    if not start or _all_placed(spans, n_threads, window):
        return spans
    low, high = window
    checks: list[tuple[str, Callable[[], Iterable[bool]]]] = [
        (END_BEFORE_START, lambda: map(operator.le, start, end)),
        (UNKNOWN_THREAD, lambda: map(operator.and_, map((-1).__lt__, thread), map(n_threads.__gt__, thread))),
        (PHASE_OUT_OF_RANGE, lambda: map(operator.and_, map((-1).__lt__, phase), map(PHASE_ID_LIMIT.__gt__, phase))),
        (OUTSIDE_LIFETIME, lambda: map(operator.and_, map(low.__le__, start), map(high.__ge__, end))),
    ]
    keep = _keep(checks, len(start), "span", left_out)
    start, end, phase, thread, cpu = (array(c.typecode, compress(c, keep)) for c in (start, end, phase, thread, cpu))
    if not all(map(operator.le, start, start[1:])):  # the writer sorts them: a file that is not
        order = sorted(range(len(start)), key=start.__getitem__)  # stable: ties keep their order
        start, end, phase, thread, cpu = (
            array(c.typecode, map(c.__getitem__, order)) for c in (start, end, phase, thread, cpu)
        )
    return [start, end, phase, thread, cpu]


def _all_placed(spans: list[array[int]], n_threads: int, window: tuple[int, int]) -> bool:
    """Whether every span can be placed and they are sorted by start, told at C speed: the int32
    columns by their bytes (:func:`_all_below`), the int64 ones as big integers, one 64-bit lane
    per span (:func:`_lanes_le`)."""
    start, end, phase, thread, _ = spans
    low, high = window
    starts, ends = _little_endian(start), _little_endian(end)
    if _has_negative(starts) or _has_negative(ends):  # the lanes below hold values under 2**63
        return False
    if not _all_below(thread, n_threads) or not _all_below(phase, PHASE_ID_LIMIT):
        return False
    if start[0] < low:
        return False
    n = len(start)
    bound = high.to_bytes(8, "little") if high < 2**63 else b""
    highs: dict[int, int] = {}  # the bound in every lane, per piece length (a ring has two: a full piece, its last)
    for at in range(0, n, _LANES):
        stop = min(n, at + _LANES)
        lanes = stop - at
        # This piece's starts and the next piece's first (sorted across the seam), its ends.
        s = int.from_bytes(starts[8 * at : 8 * min(n, stop + 1)], "little")
        e = int.from_bytes(ends[8 * at : 8 * stop], "little")
        top = _top_bits(lanes)
        if not (
            # start[i] <= start[i + 1]: the lanes of ``s`` shifted by one against its own (the
            # extra lane of ``s`` only borrows above the lanes compared)
            _lanes_le(s, s >> 64, _top_bits(lanes - (stop == n)))
            and _lanes_le(s, e, top)  # start[i] <= end[i]
            and (not bound or _lanes_le(e, highs.get(lanes) or highs.setdefault(lanes, _repeated(bound, lanes)), top))
        ):
            return False
    return True


def _repeated(lane: bytes, lanes: int) -> int:
    return int.from_bytes(lane * lanes, "little")


#: Spans a step of :func:`_all_placed` takes as one big integer: its temporaries stay small.
_LANES = 1 << 14


@functools.lru_cache(maxsize=4)  # a piece, a piece less one, and a ring's last piece
def _top_bits(lanes: int) -> int:
    """The top bit of each of ``lanes`` 64-bit lanes."""
    return _repeated(_TOP_BIT, lanes)


#: An int64's top bit, little-endian.
_TOP_BIT = bytes(7) + b"\x80"


def _lanes_le(a: int, b: int, top: int) -> bool:
    """Whether each 64-bit lane of ``a`` is at most the same lane of ``b``, every lane of both
    below 2**63, ``top`` the top bit of each lane: ``(b | top) - a`` borrows from no lane's
    neighbour (``b``'s lane is at least 2**63, ``a``'s below), and leaves a lane's top bit set
    exactly where ``a``'s lane was at most ``b``'s."""
    return ((b | top) - a) & top == top


def _little_endian(column: array[int]) -> bytes:
    if sys.byteorder == "little":
        return column.tobytes()
    swapped = array(column.typecode, column)
    swapped.byteswap()
    return swapped.tobytes()


def _has_negative(int64s: bytes) -> bool:
    """Whether a little-endian int64 column holds a negative value (a top byte of 0x80 or more)."""
    return bool(int64s[7::8].translate(None, _BELOW_0x80))


_BELOW_0x80 = bytes(range(0x80))


def _all_below(column: array[int], limit: int) -> bool:
    """Whether every value of an int32 column lies in ``[0, limit)``. Where ``limit`` is a number
    of at most 256 times a power of 256 (``n_threads`` up to 256, :data:`PHASE_ID_LIMIT`), by its
    bytes: those above the number's all zero, the one at it below the number (``bytes.count``
    and ``bytes.translate``, at C speed); else by ``min`` and ``max``."""
    scale, rest = 0, limit
    while rest > 256 and rest % 256 == 0:
        rest, scale = rest // 256, scale + 1
    if rest > 256 or scale > 3:
        return min(column) >= 0 and max(column) < limit
    data = _little_endian(column)
    zeros = sum(data[k::4].count(0) for k in range(scale + 1, 4))
    return zeros == len(column) * (3 - scale) and not data[scale::4].translate(None, bytes(range(rest)))


def _keep(
    checks: list[tuple[str, Callable[[], Iterable[bool]]]], n: int, kind: str, left_out: dict[tuple[str, str], int]
) -> list[bool]:
    """Which of ``n`` records pass every check, each record that does not counted once, for the
    first check it fails."""
    keep = [True] * n
    for why, passes in checks:
        failed = list(map(operator.and_, keep, map(operator.not_, passes())))
        _count(left_out, kind, why, sum(failed))
        keep = list(map(operator.and_, keep, map(operator.not_, failed)))
    return keep


def _placed_open(
    opened: list[array[int]], n_threads: int, window: tuple[int, int], left_out: dict[tuple[str, str], int]
) -> list[array[int]]:
    """The entries still open that can be placed (``start, phase_id, thread`` columns)."""
    start, phase, thread = opened
    if not start:
        return opened
    low, high = window
    checks: list[tuple[str, Callable[[], Iterable[bool]]]] = [
        (UNKNOWN_THREAD, lambda: map(operator.and_, map((-1).__lt__, thread), map(n_threads.__gt__, thread))),
        (PHASE_OUT_OF_RANGE, lambda: map(operator.and_, map((-1).__lt__, phase), map(PHASE_ID_LIMIT.__gt__, phase))),
        (OUTSIDE_LIFETIME, lambda: map(operator.and_, map(low.__le__, start), map(high.__ge__, start))),
    ]
    keep = _keep(checks, len(start), "open entry", left_out)
    return [array(c.typecode, compress(c, keep)) for c in opened]


def _placed_links(
    links: list[Any], n_threads: int, window: tuple[int, int], left_out: dict[tuple[str, str], int]
) -> list[tuple[Any, ...]]:
    """The links that can be placed, as tuples (they are few: a loop over them)."""
    low, high = window
    placed = []
    for link in links:
        if (
            type(link) is not list
            or len(link) != 6
            or not (link[0] in LINK_KINDS or (isinstance(link[0], str) and link[0].startswith("mark:")))
            or not is_text(link[1])
            or not is_text(link[2])
            or not is_count(link[3])
            or type(link[4]) is not int
            or not is_count(link[5], -1)
        ):
            _count(left_out, "link", MALFORMED, 1)
        elif not 0 <= link[4] < n_threads:
            _count(left_out, "link", UNKNOWN_THREAD, 1)  # a thread the span store did not track
        elif link[5] >= PHASE_ID_LIMIT:
            _count(left_out, "link", PHASE_OUT_OF_RANGE, 1)
        elif not low <= link[3] <= high:
            _count(left_out, "link", OUTSIDE_LIFETIME, 1)
        else:
            placed.append(tuple(link))
    return placed


def left_out_text(left_out: dict[tuple[str, str], int]) -> str:
    """``3 spans that end before they start, 1 link that names a thread not in ...``."""
    nouns = {"span": ("span", "spans"), "link": ("link", "links"), "open entry": ("open entry", "open entries")}
    parts = []
    for (kind, why), n in sorted(left_out.items(), key=lambda item: (-item[1], item[0])):
        noun = nouns.get(kind, (kind, kind))[n != 1]
        verb = why if n != 1 else _singular(why)
        parts.append(f"{n:,} {noun} that {verb}")
    return ", ".join(parts)


def _singular(why: str) -> str:
    """``end before they start`` -> ``ends before it starts`` (the reasons above, said of one)."""
    first, _, rest = why.partition(" ")
    verb = {"end": "ends", "name": "names", "have": "has", "lie": "lies", "are": "is"}.get(first, first)
    rest = rest.replace("they start", "it starts").replace("their thread", "its thread")
    return f"{verb} {rest}"


def read_trace(
    path: str | os.PathLike[str], *, stop_unix_ns: int | None = None, checked_crc: int | None = None
) -> TraceColumns | None:
    """The ``trace`` of one worker file, checked (:func:`check_trace`, with ``stop_unix_ns``), as
    columns; None when tracing was off.

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
    return check_trace(trace, path, workerfile.WorkerFileError, stop_unix_ns=stop_unix_ns, checked_crc=checked_crc)


def span_rows(trace: dict[str, Any], worker_file: str | os.PathLike[str]) -> list[list[int]]:
    """The ``[start_ns, end_ns, phase_id, thread, cpu_ns]`` rows of a worker document's ``trace``,
    held in it or in the spans file it names (beside ``worker_file``). Raises SpanFileError."""
    spans = trace.get("spans")
    if spanfile.is_reference(spans):
        return [list(row) for row in zip(*spanfile.read(worker_file, spans), strict=True)]
    return list(spans) if isinstance(spans, (list, spanfile.SpanColumns)) else []
