"""The trace block of a live file (a worker made with ``trace=True``): its spans, the entries still
open, its links and threads, read back as the worker document's ``trace`` section, so a worker
killed with SIGKILL still shows its last spans and the phases it was in.

The block is one segment (kind 3) right after the header: a header of its own (``magic``
``LPTR``, the record sizes and capacities, the offsets of its tables from the block's start, the
counts), then the thread table, one open table per flow of control, the span ring and the link
ring. A record of a ring carries ``seq``, its number + 1 (low 32 bits), stored after its fields:
record ``i`` lies in slot ``i % capacity`` and is taken only when its ``seq`` says it is that
record, so one being overwritten while the file was read is left out (and counted as dropped).

Every size, count and offset is checked before use; a block this reader cannot use is a line
in the caller's problems, never an exception. This module imports nothing of the profilers.
"""

from __future__ import annotations

import operator
import struct
import sys
from array import array
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from typing import Any

from .spanfile import SpanColumns

SEG_TRACE = 3
MAGIC = 0x5254504C
_SEGMENT = struct.Struct("<IIiI")
_SEGMENT_MAGIC = 0x4753504C
# magic, header_bytes, span/link/thread/stack bytes, span/link/thread/stack capacity, open_depth,
# text_bytes, thread_name_bytes, pair_capacity; the four offsets; recorded, links_recorded,
# links_truncated, spans_unthreaded, stacks_unshown; n_threads, n_pairs
_HEADER = struct.Struct("<14I4Q5q2i")
_PAIR = struct.Struct("<3q")
#: After the pairs (the header's bytes permitting: a block written before it holds zero there):
#: links_unthreaded, the links of threads past the thread table, kept with thread -1.
_AFTER_PAIRS = struct.Struct("<q")
_SPAN = struct.Struct("<3q2i2I")
_LINK = struct.Struct("<qIiiBBBB")
_THREAD = struct.Struct("<qqII")
_OPEN_STACK = struct.Struct("<ii")
_OPEN_ENTRY = struct.Struct("<qihh")
#: Capacities a writer may have used (the profiler allows 10,000,000 spans): anything larger is damage.
MAX_CAPACITY = 50_000_000
_MASK = 0xFFFFFFFF
#: A link record's kind byte: the engine's LP_LINK_* numbers.
_LINK_KINDS = ("signal", "wait", "begin", "mark", "end")


def find_block(data: bytes, header_bytes: int, segment_bytes: int) -> tuple[int, int] | None:
    """``(offset, bytes)`` of the trace block's payload, or None: the segments walked in file
    order, as the live file's reader walks them."""
    offset = header_bytes
    while offset + max(segment_bytes, _SEGMENT.size) <= len(data):
        magic, kind, _, size = _SEGMENT.unpack_from(data, offset)
        if magic != _SEGMENT_MAGIC or size < segment_bytes:
            return None
        if kind == SEG_TRACE:
            return offset + segment_bytes, size - segment_bytes  # read_block says when it is cut
        offset += size
    return None


def read_block(data: bytes, start: int, size: int, problems: list[str]) -> dict[str, Any] | None:
    """The ``trace`` section from the block at ``data[start:start + size]``, or None (why is
    appended to ``problems``)."""
    if start + size > len(data):
        problems.append("its trace block is cut short (the file was truncated): the trace is not read")
        return None
    if size < _HEADER.size:
        problems.append("its trace block is shorter than its header: the trace is not read")
        return None
    h = _HEADER.unpack_from(data, start)
    magic, header_bytes, span_bytes, link_bytes, thread_bytes, stack_bytes = h[:6]
    span_cap, link_cap, thread_cap, stack_cap, open_depth, text_bytes, name_bytes, pair_cap = h[6:14]
    off_threads, off_stacks, off_spans, off_links = h[14:18]
    recorded, links_recorded, links_truncated, unthreaded, unshown, n_threads, n_pairs = h[18:25]
    if magic != MAGIC:
        problems.append("its trace block was never completed: the trace is not read")
        return None
    entry_bytes = _OPEN_STACK.size + open_depth * _OPEN_ENTRY.size
    if (
        span_bytes != _SPAN.size
        or link_bytes != _LINK.size + 2 * text_bytes
        or thread_bytes != _THREAD.size + name_bytes
        or stack_bytes != entry_bytes
        or not 1 <= span_cap <= MAX_CAPACITY
        or link_cap > MAX_CAPACITY
        or thread_cap > 65536
        or stack_cap > 65536
        or header_bytes < _HEADER.size + pair_cap * _PAIR.size
    ):
        problems.append("its trace block has a layout this reader does not know: the trace is not read")
        return None
    regions = (
        (off_threads, thread_cap * thread_bytes),
        (off_stacks, stack_cap * stack_bytes),
        (off_spans, span_cap * span_bytes),
        (off_links, link_cap * link_bytes),
    )
    if (
        any(off < header_bytes or off + length > size for off, length in regions)
        or min(recorded, links_recorded, links_truncated, unthreaded, unshown, n_threads, n_pairs) < 0
    ):
        problems.append("its trace block holds offsets or counts outside itself: the trace is not read")
        return None
    after_pairs = _HEADER.size + pair_cap * _PAIR.size
    links_unthreaded = (
        _AFTER_PAIRS.unpack_from(data, start + after_pairs)[0] if header_bytes >= after_pairs + _AFTER_PAIRS.size else 0
    )
    n_threads = min(n_threads, thread_cap)
    threads = _threads(data, start + off_threads, n_threads, thread_bytes, name_bytes)
    spans = _spans(data, start + off_spans, span_cap, recorded, n_threads)
    links = _links(data, start + off_links, link_cap, links_recorded, text_bytes)
    return {
        "clock": "monotonic",
        "clock_pairs": _pairs(data, start + _HEADER.size, pair_cap, n_pairs),
        "capacity": span_cap,
        "recorded": recorded,
        "dropped": recorded - len(spans),
        "threads": threads,
        "spans": spans,
        "open": _open(data, start + off_stacks, stack_cap, stack_bytes, open_depth, n_threads),
        "links_capacity": link_cap,
        "links_recorded": links_recorded,
        "links_dropped": links_recorded - len(links),
        "links": links,
        "links_truncated": links_truncated,
        "spans_unthreaded": unthreaded,
        "open_unshown": unshown,
        "links_unthreaded": max(links_unthreaded, 0),
    }


def _pairs(data: bytes, base: int, capacity: int, taken: int) -> list[list[int]]:
    """Oldest first: the first pair, then the ring of the newest from its oldest slot."""
    kept = min(taken, capacity)
    if taken <= capacity or capacity < 2:
        slots = list(range(kept))
    else:
        ring = capacity - 1
        slots = [0] + [1 + ((taken - 1) % ring + k - 1) % ring for k in range(1, kept)]
    return [list(_PAIR.unpack_from(data, base + slot * _PAIR.size)) for slot in slots]


def _threads(data: bytes, base: int, count: int, size: int, name_bytes: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        at = base + i * size
        ident, native_id, name_len, seq = _THREAD.unpack_from(data, at)
        raw = data[at + _THREAD.size : at + _THREAD.size + min(name_len, name_bytes)]
        name = "" if seq & 1 else raw.decode("utf-8", "replace")  # odd: being renamed when read
        out.append({"ident": ident, "native_id": native_id, "name": name})
    return out


def _ring_order(capacity: int, recorded: int) -> tuple[int, int]:
    """The first record the ring can still hold, and how many there are from it."""
    first = max(0, recorded - capacity)
    return first, recorded - first


def _spans(data: bytes, base: int, capacity: int, recorded: int, n_threads: int) -> SpanColumns:
    """The ring's records that are whole (``seq`` the one their slot must hold, an end at or
    after the start, a known thread), sorted by start: sliced out of the ring as columns, with
    no Python code per record (a killed or running worker's ring is 200,000 of them)."""
    first, count = _ring_order(capacity, recorded)
    ring = memoryview(data)[base : base + capacity * _SPAN.size]
    wide, narrow, unsigned = array("q"), array("i"), array("I")
    for values in (wide, narrow, unsigned):
        values.frombytes(ring)
        if sys.byteorder != "little":
            values.byteswap()
    # A record: start, end, cpu (int64), phase_id, thread (int32), seq, pad (uint32).
    start, end, cpu = wide[0::5], wide[1::5], wide[2::5]
    phase, thread, seq = narrow[6::10], narrow[7::10], unsigned[8::10]
    slot = first % capacity  # record `first` lies there; the ring runs on from it
    columns = [c[slot:] + c[:slot] if recorded > capacity else c[:count] for c in (start, end, phase, thread, cpu, seq)]
    start, end, phase, thread, cpu, seq = columns
    numbers = range(first + 1, first + count + 1)
    expected = array("I", numbers if first + count <= _MASK else (n & _MASK for n in numbers))
    whole = (
        seq == expected
        and (not count or (min(thread) >= 0 and max(thread) < n_threads and min(phase) >= 0))
        and all(map(operator.le, start, end))
    )
    if not whole:  # overwritten while read, being written when the process died, or damage
        checks = (
            map(operator.eq, seq, expected),
            map(operator.le, start, end),
            map((-1).__lt__, thread),
            map(n_threads.__gt__, thread),
            map((-1).__lt__, phase),
        )
        keep = list(map(all, zip(*checks, strict=True)))
        start, end, phase, thread, cpu = _each((start, end, phase, thread, cpu), lambda c: compress(c, keep))
    if min(cpu, default=0) < -1:
        cpu = array("q", map(max, cpu, repeat(-1)))
    if not all(map(operator.le, start, start[1:])):  # closed children come before their parent
        # Stable: ties keep the ring's order. An itemgetter of the order takes a column at C speed.
        order = operator.itemgetter(*sorted(range(len(start)), key=start.__getitem__))
        start, end, phase, thread, cpu = _each((start, end, phase, thread, cpu), order)
    return SpanColumns([start, end, phase, thread, cpu])


def _each(
    columns: tuple[array[int], ...], pick: Callable[[array[int]], Iterable[int]]
) -> tuple[array[int], ...]:
    """Each column rebuilt from what ``pick`` takes of it, of its own type."""
    return tuple(array(c.typecode, pick(c)) for c in columns)


def _links(data: bytes, base: int, capacity: int, recorded: int, text_bytes: int) -> list[list[Any]]:
    if capacity == 0:
        return []
    first, count = _ring_order(capacity, recorded)
    size = _LINK.size + 2 * text_bytes
    out: list[list[Any]] = []
    for i in range(first, first + count):
        at = base + (i % capacity) * size
        t_ns, seq, thread, phase_id, kind, channel_len, key_len, _ = _LINK.unpack_from(data, at)
        if seq != (i + 1) & _MASK or kind >= len(_LINK_KINDS):
            continue
        text = at + _LINK.size
        channel = data[text : text + min(channel_len, text_bytes)].decode("utf-8", "replace")
        key = data[text + text_bytes : text + text_bytes + min(key_len, text_bytes)].decode("utf-8", "replace")
        name = _LINK_KINDS[kind]
        if name == "mark":  # its channel text is "channel\x1fNAME"
            channel, _, mark = channel.partition("\x1f")
            name = f"mark:{mark}"
        out.append([name, channel, key, t_ns, thread, phase_id])
    return out


def _open(data: bytes, base: int, stacks: int, size: int, depth_cap: int, n_threads: int) -> list[list[int]]:
    """The entries open in each flow's table, without the copies a flow inherited (those are in
    the table of the flow that opened them)."""
    out = []
    for s in range(stacks):
        at = base + s * size
        depth, in_use = _OPEN_STACK.unpack_from(data, at)
        if not in_use or depth <= 0:
            continue
        for level in range(min(depth, depth_cap)):
            start_ns, phase_id, thread, inherited = _OPEN_ENTRY.unpack_from(
                data, at + _OPEN_STACK.size + level * _OPEN_ENTRY.size
            )
            if not inherited and 0 <= thread < n_threads and phase_id >= 0:
                out.append([start_ns, phase_id, thread])
    out.sort()
    return out
