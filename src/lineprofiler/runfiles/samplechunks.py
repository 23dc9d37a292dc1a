"""The rows of a version-2 sample file: compressed chunks, each whole in itself.

A chunk is a 24-byte head (magic ``b"LPCK"``, u64 ``first_row``, u32 ``rows``, u32 payload
bytes, u32 CRC-32 of the payload, all little-endian) and its payload: the rows, row-major
little-endian int64 as version 1 stores them, zlib-compressed. A chunk needs nothing outside
itself to decode, so a file is readable up to its first bad chunk; ``first_row`` says where its
rows go, so rows are never read twice.

A writer seals its small chunks (a snapshot's few rows each) into one: it first copies the
sealed chunk to the end of the file, then writes it over the small chunks, then cuts the file
after it (:class:`~.samplefile.SampleWriter`). Killed between two of those steps, it leaves the
small chunks whole (the copy at the end is out of sequence: ignored), or them damaged and the
copy whole: a reader that stops at a bad chunk takes a good chunk that ends the file, starts
where a chunk it read started and holds more rows (:func:`_last_copy`), so no row is lost.

Reading is C-speed work per chunk (a CRC, an inflate, a copy into the array), never per row:
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
    """One chunk of ``rows`` rows (little-endian int64, row-major) that begin at ``first_row``.

    The window and hash table are sized to the rows (a window as large as the data compresses
    as well as zlib's 32 kB one): zlib's default state is 256 kB to set up, 80 us of a
    profiled process's snapshot for 5 rows, 10 us when sized to them."""
    wbits = min(15, max(9, len(rows_le).bit_length()))
    deflater = zlib.compressobj(LEVEL, zlib.DEFLATED, wbits, max(1, wbits - 7))
    payload = deflater.compress(rows_le) + deflater.flush()
    return CHUNK_HEAD.pack(CHUNK_MAGIC, first_row, rows, len(payload), zlib.crc32(payload)) + payload


def _inflate(view: memoryview, pos: int, size: int, crc: int, want: int) -> bytes | str:
    """A chunk's rows (``want`` bytes), or why they cannot be had."""
    payload = view[pos + CHUNK_HEAD.size : pos + CHUNK_HEAD.size + size]
    if zlib.crc32(payload) != crc:
        return "CRC mismatch"
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(payload, want)
    except zlib.error:
        raw = b""
    if len(raw) != want or not inflater.eof or inflater.unconsumed_tail:
        return f"not {want:,} bytes of rows"
    return raw


def _last_copy(
    body: bytes, after: int, starts: set[int], rows: int, row_bytes: int, max_bytes: int
) -> tuple[int, bytes] | None:
    """The chunk a writer copied to the end of the file before sealing in place (see
    :class:`~.samplefile.SampleWriter`): a good chunk that ends the file, begins past ``after``,
    starts at a row where a chunk read so far started (``starts``) and reaches past ``rows``.
    Returns (its first row, its rows), or None."""
    view = memoryview(body)
    end = len(body)
    if end - after < CHUNK_HEAD.size:
        return None
    pos = body.rfind(CHUNK_MAGIC, after, end - CHUNK_HEAD.size + len(CHUNK_MAGIC))
    while pos >= after:
        _magic, first_row, count, size, crc = CHUNK_HEAD.unpack_from(view, pos)
        reaches = first_row + count
        if (
            pos + CHUNK_HEAD.size + size == end and first_row in starts and reaches > rows
            and reaches * row_bytes <= max_bytes
        ):
            raw = _inflate(view, pos, size, crc, count * row_bytes)
            return (first_row, raw) if isinstance(raw, bytes) else None
        pos = body.rfind(CHUNK_MAGIC, after, pos + len(CHUNK_MAGIC) - 1)
    return None


def decode(body: bytes, row_bytes: int, max_bytes: int) -> tuple[array, int, str]:
    """The rows of every good chunk of ``body`` (a file's bytes after its header), in order, up
    to the first chunk that is incomplete, damaged or out of sequence, as one ``array('q')``
    (little-endian values).

    Where reading stops, the copy a sealing writer put at the end of the file is looked for
    (:func:`_last_copy`): a writer killed while it rewrote its small chunks in place left them
    damaged, and the copy holds their rows. Returns (the rows, bytes ignored at the end, what
    they were: "" when none). Raises ValueError when the rows would exceed ``max_bytes`` (the
    reader's limit: a hostile chunk that inflates without end is refused before it is inflated).
    """
    view = memoryview(body)
    total = len(view)
    # The heads first: the array is then made once at its size and each chunk inflated and
    # copied into its place (an array grown chunk by chunk, or the chunks all held until the
    # end, cost 5 to 8 ms more a day of rows in copies and page faults).
    chunks: list[tuple[int, int, int, int]] = []  # (position, rows, payload size, CRC)
    pos, rows, what = 0, 0, ""
    while pos < total:
        if total - pos < CHUNK_HEAD.size:
            what = PARTIAL
            break
        magic, first_row, count, size, crc = CHUNK_HEAD.unpack_from(view, pos)
        if magic != CHUNK_MAGIC or count == 0:
            what = f"damaged chunk at byte {pos} of the rows"
            break
        if first_row != rows:
            what = f"chunk out of sequence (rows from {first_row:,}, expected {rows:,})"
            break
        if pos + CHUNK_HEAD.size + size > total:
            what = PARTIAL
            break
        if (rows + count) * row_bytes > max_bytes:
            raise ValueError(f"its rows would take more than {max_bytes:,} bytes")
        chunks.append((pos, count, size, crc))
        rows += count
        pos += CHUNK_HEAD.size + size
    data = array("q", [0]) * (rows * row_bytes // 8)
    out = memoryview(data).cast("B")
    starts: list[int] = []  # the first row of each chunk read
    rows = 0
    for at, count, size, crc in chunks:
        raw = _inflate(view, at, size, crc, count * row_bytes)
        if isinstance(raw, str):
            pos, what = at, f"damaged chunk at byte {at} of the rows ({raw})"
            break
        out[rows * row_bytes : (rows + count) * row_bytes] = raw
        starts.append(rows)
        rows += count
    out.release()
    del data[rows * row_bytes // 8 :]
    ignored = total - pos
    if what:
        copy = _last_copy(body, pos, {*starts, rows}, rows, row_bytes, max_bytes)
        if copy is not None:
            first_row, raw = copy
            del data[first_row * row_bytes // 8 :]
            data.frombytes(raw)
            ignored, what = 0, ""
    return data, ignored, what


__all__ = ["CHUNK_HEAD", "CHUNK_MAGIC", "LEVEL", "PARTIAL", "SEAL_ROWS", "decode", "encode"]
