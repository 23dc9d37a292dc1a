"""The rows of a version-2 sample file: compressed chunks, each whole in itself.

A chunk is a 24-byte head (magic ``b"LPCK"``, u64 ``first_row``, u32 ``rows``, u32 payload
bytes, u32 CRC-32 of the payload, all little-endian) and its payload: the rows, row-major
little-endian int64 as version 1 stores them, zlib-compressed. A chunk needs nothing outside
itself to decode, so a file is readable up to its first bad chunk; ``first_row`` says where its
rows go, so a chunk out of sequence (left behind by a writer killed while sealing, see
:class:`~.samplefile.SampleWriter`) is never read twice.

Reading is C-speed work per chunk (a CRC, an inflate into the array), never per row:
the rows of a day (86,400 at 1 Hz) come in 144 chunks of 600 or 24 of 3,600. This module imports
no C module of lineprofiler's.
"""

from __future__ import annotations

import struct
import zlib
from array import array

CHUNK_MAGIC = b"LPCK"
CHUNK_HEAD = struct.Struct("<4sQIII")
#: A writer's small appends (a snapshot's few rows each) are rewritten as one chunk once they
#: hold this many rows: a chunk of 5 rows costs about 40 bytes a row, one of 600 about 20.
SEAL_ROWS = 600
#: zlib's level: 6 is within 10 % of 9's size at a third of its time.
LEVEL = 6

PARTIAL = "partial last chunk"


def encode(rows_le: bytes, first_row: int, rows: int) -> bytes:
    """One chunk of ``rows`` rows (little-endian int64, row-major) that begin at ``first_row``."""
    payload = zlib.compress(rows_le, LEVEL)
    return CHUNK_HEAD.pack(CHUNK_MAGIC, first_row, rows, len(payload), zlib.crc32(payload)) + payload


def decode(body: bytes | memoryview, row_bytes: int, max_bytes: int) -> tuple[array, int, str]:
    """The rows of every good chunk of ``body`` (a file's bytes after its header), in order, up
    to the first chunk that is incomplete, damaged or out of sequence, as one ``array('q')``
    (little-endian values).

    Returns (the rows, bytes ignored at the end, what they were: "" when none). Raises
    ValueError when the rows would exceed ``max_bytes`` (the reader's limit: a hostile chunk that
    inflates without end is refused before it is inflated). The chunks' heads are walked first,
    so the array is made once at its size and each chunk inflated straight into its place."""
    view = memoryview(body)
    total = len(view)
    chunks: list[tuple[int, int, int, int]] = []  # (position, rows, payload size, CRC)
    pos, rows, ignored, what = 0, 0, 0, ""
    while pos < total:
        if total - pos < CHUNK_HEAD.size:
            ignored, what = total - pos, PARTIAL
            break
        magic, first_row, count, size, crc = CHUNK_HEAD.unpack_from(view, pos)
        if magic != CHUNK_MAGIC or count == 0:
            ignored, what = total - pos, f"damaged chunk at byte {pos} of the rows"
            break
        if first_row != rows:
            ignored, what = total - pos, f"chunk out of sequence (rows from {first_row:,}, expected {rows:,})"
            break
        if pos + CHUNK_HEAD.size + size > total:
            ignored, what = total - pos, PARTIAL
            break
        rows += count
        if rows * row_bytes > max_bytes:
            raise ValueError(f"its rows would take more than {max_bytes:,} bytes")
        chunks.append((pos, count, size, crc))
        pos += CHUNK_HEAD.size + size
    data = array("q", [0]) * (rows * row_bytes // 8)
    out = memoryview(data).cast("B")
    at = 0
    for pos, count, size, crc in chunks:
        payload = view[pos + CHUNK_HEAD.size : pos + CHUNK_HEAD.size + size]
        want = count * row_bytes
        damage = None
        if zlib.crc32(payload) != crc:
            damage = "CRC mismatch"
        else:
            inflater = zlib.decompressobj()
            try:
                raw = inflater.decompress(payload, want)
            except zlib.error:
                raw = b""
            if len(raw) != want or not inflater.eof or inflater.unconsumed_tail:
                damage = f"not {count:,} rows"
            else:
                out[at : at + want] = raw
                at += want
        if damage is not None:
            out.release()
            del data[at // 8 :]
            return data, total - pos, f"damaged chunk at byte {pos} of the rows ({damage})"
    out.release()
    return data, ignored, what


__all__ = ["CHUNK_HEAD", "CHUNK_MAGIC", "LEVEL", "PARTIAL", "SEAL_ROWS", "decode", "encode"]
