"""The live file: one process's phase tree and counters, kept by the engine in a shared mapping
of this file while it runs, so everything recorded up to a SIGKILL or the OOM killer is here.

Layout (every offset and size is read from the header, never assumed):

* a header page: ``magic`` ``LPLIVE\\0\\0``, ``version``, the sizes of a node, a counter and a
  segment header, the chunk sizes, the field offsets, the pid, the creation time, the counts of
  published nodes and counters, an ``epoch`` (bumped when the recorder is reset; all ones when
  the writer abandoned the file), and the process's identity as JSON;
* segments appended as the tree grows: a 16-byte segment header (``magic`` ``LPSG``, ``kind``:
  1 nodes, 2 counters, the chunk's index, its size) and a chunk of nodes or counters.

A node carries a sequence number, odd while an entry is being added: a reader that finds it odd
retries, and after a few tries reports the node as in flight (its writer died mid-update, or is
writing right now). Reading never fails on a damaged file: :func:`read_live` returns a
:class:`LiveFile` with ``problems`` (a truncated or zero-filled tail, a newer version) or None
for a file that is not a live file at all. This module imports nothing of the profilers.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import layout

MAGIC = b"LPLIVE\0\0"
VERSION = 2
SEGMENT_MAGIC = 0x4753504C
SEG_NODES = 1
SEG_COUNTERS = 2
ABANDONED_EPOCH = 2**64 - 1
#: Largest live file read (a full tree of 1,000,000 paths is about 2.5 GiB: far past any cap
#: in use; the default caps make at most about 30 MiB).
MAX_BYTES = 512 * 1024 * 1024
_RETRIES = 50

# magic, version, header_bytes, segment_bytes, node_bytes, counter_bytes, chunk_nodes,
# chunk_counters, n_buckets, name_bytes, measure_cpu, pid, created, n_nodes, n_counters, epoch,
# 21 node offsets, 5 counter offsets, identity_len
_HEADER = struct.Struct("<8s10I2q2iQ21I5II")
_NODE_FIELDS = (
    "seq id parent entries wall self cpu cpu_missing min max io sync overflow depth io_delta "
    "io_measured io_failed hist lname_len lname_cut lname"
).split()
_COUNTER_FIELDS = "node total lname_len lname_cut lname".split()
_IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes")


class LiveFileError(Exception):
    """Not a live file (wrong magic, unreadable): the caller falls back to the worker file."""


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

    @property
    def total_entries(self) -> int:
        return sum(p["entries"] for p in self.phases)


def live_path(worker_file: str | os.PathLike[str]) -> Path:
    """The live file beside a worker file (``layout.live_path``)."""
    return layout.live_path(worker_file)


def _read_bytes(path: Path) -> tuple[bytes, int]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise LiveFileError(f"{path}: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        import stat

        if not stat.S_ISREG(info.st_mode):
            raise LiveFileError(f"{path}: not a regular file")
        if info.st_size > MAX_BYTES:
            raise LiveFileError(f"{path}: larger than {MAX_BYTES} bytes")
        chunks = []
        remaining = info.st_size
        while remaining > 0:
            block = os.read(fd, min(remaining, 1 << 22))
            if not block:
                break
            chunks.append(block)
            remaining -= len(block)
        return b"".join(chunks), info.st_mtime_ns
    finally:
        os.close(fd)


def read_live(path: str | os.PathLike[str], *, data: bytes | None = None) -> LiveFile:
    """Read a live file (``data``: its bytes, already read). Raises LiveFileError when it is not
    one (too short for a header, wrong magic); every other fault is in ``problems``."""
    path = Path(path)
    mtime_ns = 0
    if data is None:
        data, mtime_ns = _read_bytes(path)
    if len(data) < _HEADER.size:
        raise LiveFileError(f"{path}: {len(data)} bytes, shorter than a live file's header")
    values = _HEADER.unpack_from(data, 0)
    magic, version, header_bytes, seg_bytes, node_bytes, counter_bytes, chunk_nodes, chunk_counters = values[:8]
    n_buckets, name_bytes, measure_cpu, pid, created, n_nodes, n_counters, epoch = values[8:16]
    node_off = dict(zip(_NODE_FIELDS, values[16:37], strict=True))
    counter_off = dict(zip(_COUNTER_FIELDS, values[37:42], strict=True))
    identity_len = values[42]
    if magic != MAGIC:
        if magic == b"\0" * 8:
            raise LiveFileError(f"{path}: header never completed (zero-filled)")
        raise LiveFileError(f"{path}: not a live file")
    identity: dict[str, Any] = {}
    try:
        start = _HEADER.size
        loaded = json.loads(data[start : start + min(identity_len, 4096)].decode("utf-8"))
        if isinstance(loaded, dict):
            identity = loaded
    except (ValueError, UnicodeDecodeError):
        pass
    live = LiveFile(path, version, pid, created, mtime_ns, identity)
    if version > VERSION:
        live.problems.append(f"live file version {version} is newer than this reader ({VERSION}): not used")
        live.usable = False
        return live
    if epoch == ABANDONED_EPOCH:
        live.problems.append("the writer abandoned its live file (it could not grow): not used")
        live.usable = False
        return live
    if not (0 < node_bytes and 0 < counter_bytes and 0 < chunk_nodes and 0 < chunk_counters and header_bytes > 0):
        live.problems.append("live file header has zero sizes: not used")
        live.usable = False
        return live
    node_chunks: dict[int, int] = {}
    counter_chunks: dict[int, int] = {}
    offset = header_bytes
    while offset + 16 <= len(data):
        seg_magic, kind, index, size = struct.unpack_from("<IIiI", data, offset)
        if seg_magic != SEGMENT_MAGIC or size < seg_bytes or offset + size > len(data):
            break  # a zero-filled or cut tail: growth that never completed
        if kind == SEG_NODES:
            node_chunks.setdefault(index, offset + seg_bytes)
        elif kind == SEG_COUNTERS:
            counter_chunks.setdefault(index, offset + seg_bytes)
        offset += size
    _read_nodes(live, data, n_nodes, node_chunks, chunk_nodes, node_bytes, node_off, n_buckets, bool(measure_cpu))
    _read_counters(live, data, n_counters, counter_chunks, chunk_counters, counter_bytes, counter_off, node_paths=None)
    return live


def _node_at(chunks: dict[int, int], chunk: int, size: int, index: int) -> int | None:
    start = chunks.get(index // chunk)
    return None if start is None else start + (index % chunk) * size


def _name(data: bytes, base: int, off: dict[str, int]) -> str:
    (length,) = struct.unpack_from("<H", data, base + off["lname_len"])
    raw = data[base + off["lname"] : base + off["lname"] + length]
    text = raw.decode("utf-8", "replace")
    if data[base + off["lname_cut"]]:
        text += "..."
    return text


def _read_nodes(
    live: LiveFile,
    data: bytes,
    n_nodes: int,
    chunks: dict[int, int],
    chunk: int,
    size: int,
    off: dict[str, int],
    n_buckets: int,
    measure_cpu: bool,
) -> None:
    paths: dict[int, str] = {}
    missing = 0
    for node_id in range(max(0, n_nodes)):
        base = _node_at(chunks, chunk, size, node_id)
        if base is None or base + size > len(data):
            missing += 1
            continue
        (seq,) = struct.unpack_from("<I", data, base + off["seq"])
        (parent,) = struct.unpack_from("<i", data, base + off["parent"])
        name = _name(data, base, off) if node_id > 0 else ""
        if node_id == 1 or parent <= 0:
            path = name
        else:
            path = f"{paths.get(parent, '?')}/{name}"
        paths[node_id] = path
        if node_id == 0:
            continue
        entries, wall, self_ns, cpu, cpu_missing, mn, mx = (
            struct.unpack_from("<q", data, base + off[key])[0]
            for key in ("entries", "wall", "self", "cpu", "cpu_missing", "min", "max")
        )
        if seq & 1:
            live.in_flight.append(path)
        if entries <= 0:
            continue
        hist_raw = struct.unpack_from(f"<{n_buckets}Q", data, base + off["hist"])
        io = bool(data[base + off["io"]])
        io_bytes = None
        if io:
            deltas = struct.unpack_from("<5q", data, base + off["io_delta"])
            io_bytes = dict(zip(_IO_KEYS, deltas, strict=True))
            io_bytes["measured_entries"] = struct.unpack_from("<q", data, base + off["io_measured"])[0]
            io_bytes["failed_reads"] = struct.unpack_from("<q", data, base + off["io_failed"])[0]
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
                "hist": [[b, n] for b, n in enumerate(hist_raw) if n],
                "io": io,
                "sync": bool(data[base + off["sync"]]),
                "io_bytes": io_bytes,
                "overflow": bool(data[base + off["overflow"]]),
                "open_entries": 0,
                "open_ns": 0,
                "open_self_ns": 0,
            }
        )
    live._paths = paths  # type: ignore[attr-defined]
    if missing:
        live.problems.append(f"live file cut short: {missing} of {n_nodes} nodes missing (a crash while it grew)")


def _read_counters(
    live: LiveFile,
    data: bytes,
    n_counters: int,
    chunks: dict[int, int],
    chunk: int,
    size: int,
    off: dict[str, int],
    node_paths: dict[int, str] | None,
) -> None:
    paths: dict[int, str] = node_paths or getattr(live, "_paths", {})
    missing = 0
    for index in range(max(0, n_counters)):
        base = _node_at(chunks, chunk, size, index)
        if base is None or base + size > len(data):
            missing += 1
            continue
        (node,) = struct.unpack_from("<i", data, base + off["node"])
        (total,) = struct.unpack_from("<q", data, base + off["total"])
        live.counters.append(
            {"phase": paths.get(node, "") if node > 0 else "", "name": _name(data, base, off), "total": total}
        )
    if missing:
        live.problems.append(f"live file cut short: {missing} of {n_counters} counters missing")


def read_live_retrying(path: str | os.PathLike[str]) -> LiveFile:
    """:func:`read_live`, read again while a node is odd (being written right now), a few times."""
    live = read_live(path)
    for _ in range(_RETRIES):
        if not live.in_flight:
            break
        live = read_live(path)
    return live
