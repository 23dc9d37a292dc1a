"""The live file: one process's phase tree and counters, kept by the engine in a shared mapping
of this file while it runs, so everything recorded up to a SIGKILL or the OOM killer is here.

Layout (every offset and size is read from the header, never assumed):

* a header page: ``magic`` ``LPLIVE\\0\\0``, ``version``, the sizes of a node, a counter and a
  segment header, the chunk sizes, the field offsets, the pid, the creation time, the counts of
  published nodes and counters, an ``epoch`` (bumped when the recorder is reset; in version 1,
  all ones when the writer abandoned the file), the process's identity as JSON (a 2,048-byte
  area) and, from version 2, a ``flags`` word right after it (:data:`FLAG_FROZEN`: the file
  could not grow any more; what it holds is exact, later paths are in the snapshots only);
* segments appended as the tree grows: a segment header (``magic`` ``LPSG``, ``kind``: 1 nodes,
  2 counters, the chunk's index, the segment's size) and a chunk of nodes or counters; a traced
  worker's first segment is its trace block (kind 3, read by :mod:`.livetrace`).

A node carries a sequence number, odd while an entry is being added: a reader that finds it odd
retries, and after a few tries reports the node as in flight (its writer died mid-update, or is
writing right now).

The file may be anything (a crash, a bad disk, a hostile copy): every count, size and offset is
checked against the file's size before it is used, so reading costs time linear in the file's
size and never fails but with :class:`LiveFileError` (not a live file at all). Everything else
is a line in :attr:`LiveFile.problems`, with ``usable`` False where the numbers must not be used.
This module imports nothing of the profilers.
"""

from __future__ import annotations

import json
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import histogram, livetrace

# Where a worker's live file lies is the layout's to say; still importable from here.
from .layout import live_path as live_path

MAGIC = b"LPLIVE\0\0"
#: The newest version this reader knows; it reads every version from 1 up to it.
VERSION = 3
SEGMENT_MAGIC = 0x4753504C
SEG_NODES = 1
SEG_COUNTERS = 2
#: Version 1's mark of a file its writer abandoned (it could not grow): not used.
ABANDONED_EPOCH = 2**64 - 1
#: Version 2's ``flags``: the writer could not grow the file any more (its nodes and counters
#: are still exact; paths and counters made after that are in the worker file's snapshots only).
FLAG_FROZEN = 1
#: Largest live file read (a full tree of 1,000,000 paths is about 2.5 GiB: far past any cap
#: in use; the default caps make at most about 30 MiB).
MAX_BYTES = 512 * 1024 * 1024
#: Bytes of the identity area after the fixed header fields.
IDENTITY_BYTES = 2048
#: Nesting the identity JSON may have (it is a flat object; anything deeper is damage).
MAX_IDENTITY_NESTING = 32
#: Characters of phase paths built in all: a bound on the text a chain of nested nodes makes
#: (each path repeats its parent's), far past what a worker file could hold.
MAX_PATH_TEXT = 64 * 1024 * 1024
#: A segment header's fixed fields (``magic``, ``kind``, ``index``, ``bytes``).
_SEGMENT = struct.Struct("<IIiI")
#: Largest segment header the header may declare (the writer's is 64 bytes).
_MAX_SEGMENT_HEADER = 1 << 16
_RETRIES = 50

# magic, version, header_bytes, segment_bytes, node_bytes, counter_bytes, chunk_nodes,
# chunk_counters, n_buckets, name_bytes, measure_cpu, pid, created, n_nodes, n_counters, epoch,
# 21 node offsets, 5 counter offsets, identity_len
_HEADER = struct.Struct("<8s10I2q2iQ21I5II")
#: Where version 2's ``flags`` word is: right after the identity area.
FLAGS_OFFSET = _HEADER.size + IDENTITY_BYTES
_FLAGS = struct.Struct("<I")
#: Version 2's ``alive_unix_ns``, right after the flags: the wall clock of a recent phase exit
#: (stamped at most every 10 ms), the process's last sign of life when it was killed. The
#: file's mtime cannot serve: stores into a shared mapping move it only at writeback.
ALIVE_OFFSET = FLAGS_OFFSET + 4
_ALIVE = struct.Struct("<q")
_NODE_FIELDS = (
    "seq id parent entries wall self cpu cpu_missing min max io sync overflow depth io_delta "
    "io_measured io_failed hist lname_len lname_cut lname"
).split()
_COUNTER_FIELDS = "node total lname_len lname_cut lname".split()
_IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_IO_DELTA = struct.Struct("<5q")
#: Bytes each field spans (the histogram's and the names' depend on the header).
_WIDTHS = {
    "seq": 4, "id": 4, "parent": 4, "entries": 8, "wall": 8, "self": 8, "cpu": 8, "cpu_missing": 8,
    "min": 8, "max": 8, "io": 1, "sync": 1, "overflow": 1, "depth": 4, "io_delta": 40, "io_measured": 8,
    "io_failed": 8, "lname_len": 2, "lname_cut": 1, "node": 4, "total": 8,
}  # fmt: skip
_INT64_LIMIT = 2**63


class LiveFileError(Exception):
    """Not a live file (wrong magic, unreadable): the caller falls back to the worker file.
    ``str()`` is ``"<path>: <reason>"``; ``reason`` is the part after the path."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass
class LiveFile:
    """What a live file held when read: phases and counters shaped as a worker file's."""

    path: Path
    version: int
    pid: int
    created_unix_ns: int
    mtime_ns: int
    identity: dict[str, Any]
    phases: list[dict[str, Any]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    #: Nodes whose last entry was being added when read (a writer killed mid-update).
    in_flight: list[str] = field(default_factory=list)
    #: Why the numbers may be short: a truncated tail, a newer version, an abandoned file.
    problems: list[str] = field(default_factory=list)
    #: False when the numbers must not be used (newer version, abandoned, no header).
    usable: bool = True
    #: Version 2's flags word (0 in version 1).
    flags: int = 0
    #: Version 2: the wall clock of a recent phase exit (0 when unknown: version 1).
    alive_unix_ns: int = 0
    #: The published counts the header holds (what the writer had made when read).
    n_nodes: int = 0
    n_counters: int = 0
    #: A traced worker's ``trace`` section (its spans, open entries, links), else None.
    trace: dict[str, Any] | None = None

    @property
    def frozen(self) -> bool:
        """The writer could not grow the file: its paths are exact, later ones are elsewhere."""
        return bool(self.flags & FLAG_FROZEN)

    @property
    def total_entries(self) -> int:
        return sum(p["entries"] for p in self.phases)


def _read_bytes(path: Path) -> tuple[bytes, int]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise LiveFileError(path, error.strerror or str(error)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LiveFileError(path, "not a regular file")
        if info.st_size > MAX_BYTES:
            raise LiveFileError(path, f"larger than {MAX_BYTES} bytes")
        chunks = []
        remaining = info.st_size
        while remaining > 0:
            block = os.read(fd, min(remaining, 1 << 22))
            if not block:
                break
            chunks.append(block)
            remaining -= len(block)
        return b"".join(chunks), info.st_mtime_ns
    except OSError as error:
        raise LiveFileError(path, error.strerror or str(error)) from None
    finally:
        os.close(fd)


def _nesting(text: str) -> int:
    """How deep the brackets of a JSON text nest (outside strings): counted without the parser,
    which recurses once per level."""
    if text.count("[") + text.count("{") <= MAX_IDENTITY_NESTING:
        return 0  # the usual case: too few brackets to nest too deep
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _identity(data: bytes, length: int, problems: list[str]) -> dict[str, Any]:
    raw = data[_HEADER.size : _HEADER.size + min(length, IDENTITY_BYTES)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("its identity is not UTF-8 text: not used")
        return {}
    if _nesting(text) > MAX_IDENTITY_NESTING:
        problems.append(f"its identity nests deeper than {MAX_IDENTITY_NESTING} levels: not used")
        return {}
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError):
        problems.append("its identity is not valid JSON: not used")
        return {}
    if not isinstance(loaded, dict):
        problems.append("its identity is not a JSON object: not used")
        return {}
    return loaded


@dataclass
class _Layout:
    """The header's description of the records, checked against each other and the file."""

    header_bytes: int
    seg_bytes: int
    node_bytes: int
    counter_bytes: int
    chunk_nodes: int
    chunk_counters: int
    n_buckets: int
    name_bytes: int
    node_off: dict[str, int]
    counter_off: dict[str, int]
    #: Versions 1 and 2 wrote the histogram scheme that starts at 1 us (histogram.SCHEME_1US).
    version: int = VERSION


def _layout_problem(lay: _Layout) -> str | None:
    """Why records laid out as the header says cannot be read, or None."""
    if lay.header_bytes < _HEADER.size:
        return f"its header claims {lay.header_bytes} bytes, fewer than its own fields"
    if not _SEGMENT.size <= lay.seg_bytes <= _MAX_SEGMENT_HEADER:
        return f"its segment header size ({lay.seg_bytes} bytes) is impossible"
    for what, value in (
        ("node size", lay.node_bytes),
        ("counter size", lay.counter_bytes),
        ("nodes per chunk", lay.chunk_nodes),
        ("counters per chunk", lay.chunk_counters),
    ):
        if value <= 0:
            return f"its {what} is zero"
    expected = histogram.N_BUCKETS_1US if lay.version < 3 else histogram.N_BUCKETS
    if lay.n_buckets != expected:
        return f"its histograms have {lay.n_buckets} buckets, {expected} in version {lay.version}"
    for kind, size, offsets in (
        ("node", lay.node_bytes, lay.node_off),
        ("counter", lay.counter_bytes, lay.counter_off),
    ):
        for name, offset in offsets.items():
            width = 8 * lay.n_buckets if name == "hist" else lay.name_bytes if name == "lname" else _WIDTHS[name]
            if offset + width > size:
                return f"its {kind} field {name} (at {offset}, {width} bytes) lies outside a {size}-byte {kind}"
    return None


def read_live(path: str | os.PathLike[str], *, data: bytes | None = None) -> LiveFile:
    """Read a live file (``data``: its bytes, already read). Raises LiveFileError when it is not
    one (unreadable, too short for a header, wrong magic); every other fault is in ``problems``,
    and ``usable`` is False when the numbers must not be used."""
    path = Path(path)
    mtime_ns = 0
    if data is None:
        data, mtime_ns = _read_bytes(path)
    if len(data) < _HEADER.size:
        raise LiveFileError(path, f"{len(data)} bytes, shorter than a live file's header")
    values = _HEADER.unpack_from(data, 0)
    magic, version, header_bytes, seg_bytes, node_bytes, counter_bytes, chunk_nodes, chunk_counters = values[:8]
    n_buckets, name_bytes, measure_cpu, pid, created, n_nodes, n_counters, epoch = values[8:16]
    if magic != MAGIC:
        if magic == b"\0" * 8:
            raise LiveFileError(path, "header never completed (zero-filled)")
        raise LiveFileError(path, "not a live file")
    problems: list[str] = []
    identity = _identity(data, values[42], problems)
    live = LiveFile(path, version, pid, created, mtime_ns, identity, problems=problems)
    live.n_nodes, live.n_counters = n_nodes, n_counters
    if not 1 <= version <= VERSION:
        newer = f"is newer than this reader ({VERSION})" if version > VERSION else "is not one this reader knows"
        return _unusable(live, f"live file version {version} {newer}: not used")
    if epoch == ABANDONED_EPOCH:
        return _unusable(live, "the writer abandoned its live file (it could not grow): not used")
    if version >= 2:
        if header_bytes < FLAGS_OFFSET + _FLAGS.size or len(data) < FLAGS_OFFSET + _FLAGS.size:
            return _unusable(live, f"its header is too short for version {version}'s flags: not used")
        (live.flags,) = _FLAGS.unpack_from(data, FLAGS_OFFSET)
        if header_bytes >= ALIVE_OFFSET + _ALIVE.size and len(data) >= ALIVE_OFFSET + _ALIVE.size:
            (alive,) = _ALIVE.unpack_from(data, ALIVE_OFFSET)
            live.alive_unix_ns = max(0, alive)
    lay = _Layout(
        header_bytes,
        seg_bytes,
        node_bytes,
        counter_bytes,
        chunk_nodes,
        chunk_counters,
        n_buckets,
        name_bytes,
        dict(zip(_NODE_FIELDS, values[16:37], strict=True)),
        dict(zip(_COUNTER_FIELDS, values[37:42], strict=True)),
        version,
    )
    wrong = _layout_problem(lay)
    if wrong is not None:
        return _unusable(live, f"{wrong}: not used")
    if n_nodes < 0 or n_counters < 0:
        return _unusable(live, f"its header counts {n_nodes} nodes and {n_counters} counters: not used")
    node_chunks, counter_chunks = _segments(live, data, lay)
    paths = _read_nodes(live, data, lay, node_chunks, bool(measure_cpu))
    _read_counters(live, data, lay, counter_chunks, paths)
    block = livetrace.find_block(data, lay.header_bytes, lay.seg_bytes)
    if block is not None:
        live.trace = livetrace.read_block(data, block[0], block[1], live.problems)
        if live.trace is not None:
            _add_open_phases(live, live.trace["open"], paths)
    if live.frozen:
        paths_held = max(0, n_nodes - 1)  # every node but the root
        live.problems.append(f"stopped growing at {paths_held:,} paths; later paths come from the last snapshot")
    return live


def _add_open_phases(live: LiveFile, opened: list[list[int]], paths: dict[int, str]) -> None:
    """A phase, with no entry closed yet, for each path the trace shows open: so every phase id
    of the trace names a path (a killed worker's last phases are often open ones)."""
    known = {p["id"] for p in live.phases}
    counts: dict[int, int] = {}
    for _, phase_id, _ in opened:
        counts[phase_id] = counts.get(phase_id, 0) + 1
    for phase_id, n in sorted(counts.items()):
        if phase_id in known or phase_id not in paths:
            continue
        live.phases.append(
            {
                "id": phase_id, "path": paths[phase_id], "entries": 0, "wall_ns": 0, "self_ns": 0, "cpu_ns": None,
                "cpu_missing": 0, "min_ns": None, "max_ns": None, "hist": [], "io": False, "sync": False,
                "io_bytes": None, "overflow": phase_id == 1, "open_entries": n, "open_ns": 0, "open_self_ns": 0,
            }
        )  # fmt: skip


def _unusable(live: LiveFile, problem: str) -> LiveFile:
    live.problems.append(problem)
    live.usable = False
    return live


def _segments(live: LiveFile, data: bytes, lay: _Layout) -> tuple[dict[int, int], dict[int, int]]:
    """Where each chunk's records start, by kind and index: the segments walked in file order,
    each at least a segment header long, so the walk ends within ``len(data) / 16`` steps."""
    chunks: dict[int, dict[int, int]] = {SEG_NODES: {}, SEG_COUNTERS: {}}
    payload = {SEG_NODES: lay.chunk_nodes * lay.node_bytes, SEG_COUNTERS: lay.chunk_counters * lay.counter_bytes}
    damaged = 0
    offset = lay.header_bytes
    while offset + lay.seg_bytes <= len(data):
        seg_magic, kind, index, size = _SEGMENT.unpack_from(data, offset)
        if seg_magic != SEGMENT_MAGIC or size < lay.seg_bytes or offset + size > len(data):
            break  # a zero-filled or cut tail: growth that never completed
        if kind in chunks:
            if index < 0 or index in chunks[kind] or size - lay.seg_bytes < payload[kind]:
                damaged += 1  # a chunk its records would not fit, or a second chunk of an index
            else:
                chunks[kind][index] = offset + lay.seg_bytes
        offset += size
    if damaged:
        live.problems.append(f"{damaged} damaged segment(s) left out (a wrong index or size)")
    return chunks[SEG_NODES], chunks[SEG_COUNTERS]


def _records(chunks: dict[int, int], per_chunk: int, size: int, count: int) -> list[tuple[int, int]]:
    """``(index, offset)`` of each of the first ``count`` records the chunks hold, in index
    order: at most the chunks' records, whatever ``count`` claims."""
    out: list[tuple[int, int]] = []
    for chunk in sorted(chunks):
        first = chunk * per_chunk
        if first >= count:
            break
        start = chunks[chunk]
        out.extend((first + i, start + i * size) for i in range(min(per_chunk, count - first)))
    return out


def _name(data: bytes, base: int, off: dict[str, int], name_bytes: int) -> str:
    (length,) = _U16.unpack_from(data, base + off["lname_len"])
    start = base + off["lname"]
    text = data[start : start + min(length, name_bytes)].decode("utf-8", "replace")
    if data[base + off["lname_cut"]]:
        text += "..."
    return text


def _read_nodes(live: LiveFile, data: bytes, lay: _Layout, chunks: dict[int, int], measure_cpu: bool) -> dict[int, str]:
    """The nodes' phases into ``live``; returns each read node's path (for the counters)."""
    off = lay.node_off
    hist_format = struct.Struct(f"<{lay.n_buckets}Q")
    paths: dict[int, str] = {}
    records = _records(chunks, lay.chunk_nodes, lay.node_bytes, live.n_nodes)
    orphans = impossible = 0
    text = 0
    for node_id, base in records:
        if node_id == 0:
            continue  # the root: no phase of its own
        (parent,) = _I32.unpack_from(data, base + off["parent"])
        name = _name(data, base, off, lay.name_bytes)
        # As the writer names them: the overflow node (1) and a child of the root are top-level.
        # Parents are made before their children: a parent that does not precede its child (or
        # was not read) would make a loop or a path out of nowhere.
        parent_path = "" if node_id == 1 or parent <= 0 else paths.get(parent) if parent < node_id else None
        if parent_path is None or not name:
            orphans += 1
            continue
        path = f"{parent_path}/{name}" if parent_path else name
        text += len(path)
        if text > MAX_PATH_TEXT:
            live.problems.append(f"its phase paths exceed {MAX_PATH_TEXT:,} characters in all: the rest left out")
            break
        paths[node_id] = path
        (seq,) = _U32.unpack_from(data, base + off["seq"])
        entries, wall, self_ns, cpu, cpu_missing, mn, mx = (
            _I64.unpack_from(data, base + off[key])[0]
            for key in ("entries", "wall", "self", "cpu", "cpu_missing", "min", "max")
        )
        if seq & 1:
            live.in_flight.append(path)
        if entries <= 0:
            if entries < 0:
                impossible += 1
            continue
        hist = [[b, n] for b, n in enumerate(hist_format.unpack_from(data, base + off["hist"])) if n]
        if lay.version < 3:
            hist = [[histogram.from_1us_scheme(b), n] for b, n in hist]
        if wall < 0 or mn < 0 or mx < 0 or any(n >= _INT64_LIMIT for _, n in hist):
            impossible += 1
            continue
        io = bool(data[base + off["io"]])
        io_bytes = None
        if io:
            deltas = _IO_DELTA.unpack_from(data, base + off["io_delta"])
            io_bytes = dict(zip(_IO_KEYS, deltas, strict=True))
            io_bytes["measured_entries"] = _I64.unpack_from(data, base + off["io_measured"])[0]
            io_bytes["failed_reads"] = _I64.unpack_from(data, base + off["io_failed"])[0]
        live.phases.append(
            {
                "id": node_id,
                "path": path,
                "entries": entries,
                "wall_ns": wall,
                "self_ns": self_ns,
                "cpu_ns": cpu if measure_cpu and entries > cpu_missing else None,
                "cpu_missing": cpu_missing,
                "min_ns": mn,
                "max_ns": mx,
                "hist": hist,
                "io": io,
                "sync": bool(data[base + off["sync"]]),
                "io_bytes": io_bytes,
                "overflow": bool(data[base + off["overflow"]]),
                "open_entries": 0,
                "open_ns": 0,
                "open_self_ns": 0,
            }
        )
    missing = live.n_nodes - len(records)
    if missing:
        live.problems.append(
            f"live file cut short: {missing:,} of {live.n_nodes:,} nodes missing (a crash while it grew)"
        )
    if orphans:
        live.problems.append(f"{orphans:,} node(s) without a readable parent or name left out")
    if impossible:
        live.problems.append(f"{impossible:,} node(s) holding negative counts or times left out")
    return paths


def _read_counters(live: LiveFile, data: bytes, lay: _Layout, chunks: dict[int, int], paths: dict[int, str]) -> None:
    off = lay.counter_off
    records = _records(chunks, lay.chunk_counters, lay.counter_bytes, live.n_counters)
    for _, base in records:
        (node,) = _I32.unpack_from(data, base + off["node"])
        (total,) = _I64.unpack_from(data, base + off["total"])
        live.counters.append(
            {
                "phase": paths.get(node, "") if node > 0 else "",
                "name": _name(data, base, off, lay.name_bytes),
                "total": total,
            }
        )
    missing = live.n_counters - len(records)
    if missing:
        live.problems.append(f"live file cut short: {missing:,} of {live.n_counters:,} counters missing")


def read_live_retrying(path: str | os.PathLike[str]) -> LiveFile:
    """:func:`read_live`, read again while a node is odd (being written right now), a few times;
    not again once two reads agree (a writer that died mid-update leaves it odd for good)."""
    live = read_live(path)
    for _ in range(_RETRIES):
        if not live.in_flight:
            break
        again = read_live(path)
        unchanged = again.in_flight == live.in_flight and again.total_entries == live.total_entries
        live = again
        if unchanged:
            break
    return live
