"""Version 2 of the sample file: compressed chunks. Small appends are sealed into one chunk; a
file cut anywhere (a killed writer) reads as a prefix of its rows with a caveat, never a
traceback, and a writer killed mid-seal loses no row; version 1 files still read; a newer
version is one line."""

from __future__ import annotations

import random
import struct
import zlib
from array import array

import pytest

from lineprofiler.runfiles import samplechunks, samplefile
from lineprofiler.runfiles.samplefile import BASE_COLUMNS, SampleFileError, SampleWriter, read_samples

NCOLS = len(BASE_COLUMNS)
ROW_BYTES = 8 * NCOLS


def _rows(first: int, n: int) -> array:
    """Rows ``first`` .. ``first + n - 1`` like a sampler's (a clock with jitter, counters that
    grow by uneven steps, a phase id), each row the same whichever call makes it."""
    out = array("q")
    for r in range(first, first + n):
        jitter = (r * 2_654_435_761) % 100_001 - 50_000
        out.extend([10**13 + r * 10**9 + jitter, 0, r % 3]
                   + [r * (4096 + (r * c * 7919) % 5000) for c in range(NCOLS - 3)])
    return out


def _v1_file(rows: array, columns=BASE_COLUMNS) -> bytes:
    """A version-1 file as 0.10's writer made it: the header, then the raw rows."""
    names = b"".join(c.encode() + b"\0" for c in columns)
    head = struct.Struct("<8sIIII4q")
    size = head.size + len(names)
    size += -size % 8
    header = head.pack(b"LPSAMPLE", 1, size, len(columns), 0, 10**9, 5, 7, 99) + names
    return header.ljust(size, b"\0") + rows.tobytes()


def _write_in_snapshots(path, rows: int, per_append: int = 5) -> SampleWriter:
    w = SampleWriter(path, BASE_COLUMNS, 10**9, monotonic_ref_ns=5, unix_ref_ns=7, pid=99)
    for first in range(0, rows, per_append):
        w.append(_rows(first, min(per_append, rows - first)).tobytes())
    return w


def test_version_1_files_still_read(tmp_path):
    path = tmp_path / "old.samples"
    path.write_bytes(_v1_file(_rows(0, 40)) + b"\1" * 21)
    t = read_samples(path)
    assert t.data == _rows(0, 40) and t.columns == BASE_COLUMNS and t.pid == 99
    assert (t.truncated_bytes, t.truncated_what) == (21, "partial last row")


def test_a_newer_version_is_one_line_that_says_to_upgrade(tmp_path):
    path = tmp_path / "new.samples"
    raw = bytearray(_v1_file(_rows(0, 2)))
    raw[8:12] = (samplefile.VERSION + 1).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(SampleFileError) as info:
        read_samples(path)
    assert str(info.value) == (
        f"{path}: written with sample file version 3, this lineprofiler reads up to 2; upgrade lineprofiler to read it"
    )


def _heads(path) -> list[tuple[int, int]]:
    """(first row, rows) of each chunk of a file."""
    heads = []
    pos = len(samplefile._header(BASE_COLUMNS, 1, 0, 0, 0))
    raw = path.read_bytes()
    while pos < len(raw):
        _magic, first, count, size, _crc = samplechunks.CHUNK_HEAD.unpack_from(raw, pos)
        heads.append((first, count))
        pos += samplechunks.CHUNK_HEAD.size + size
    return heads


def test_snapshots_of_five_rows_are_sealed_into_chunks_of_600(tmp_path):
    path = tmp_path / "w.samples"
    w = _write_in_snapshots(path, 1500)
    t = read_samples(path)
    assert t.data == _rows(0, 1500) and t.truncated_bytes == 0
    assert w.rows == 1500 and w.size == path.stat().st_size
    # Two sealed chunks of 600 rows, then 60 small ones of 5.
    heads = _heads(path)
    assert heads[:2] == [(0, 600), (600, 600)] and heads[2:] == [(k, 5) for k in range(1200, 1500, 5)]
    assert w.size < 1500 * ROW_BYTES / 2  # even these high-entropy rows: half their raw size


def test_every_prefix_of_a_file_reads_as_a_prefix_of_its_rows(tmp_path):
    """A writer killed at any byte: the rows of the whole chunks before it, the rest a caveat."""
    path = tmp_path / "w.samples"
    _write_in_snapshots(path, 40, per_append=7)
    raw = path.read_bytes()
    header = len(samplefile._header(BASE_COLUMNS, 1, 0, 0, 0))
    cut_path = tmp_path / "cut.samples"
    seen_rows = set()
    for cut in range(header, len(raw) + 1):
        cut_path.write_bytes(raw[:cut])
        t = read_samples(cut_path)
        assert t.data == _rows(0, t.rows)
        assert t.rows % 7 == 0 or t.rows == 40
        assert (t.truncated_bytes == 0) == (t.truncated_what == "")
        if t.truncated_bytes:
            assert t.truncated_what == "partial last chunk"
        seen_rows.add(t.rows)
    assert seen_rows == {0, 7, 14, 21, 28, 35, 40}


def _states(before: bytes, operations: list[tuple]) -> list[bytes]:
    """The file after each byte of each write (a kill can cut a write at any byte) and after each
    cut, from ``before``."""
    states, current = [], bytearray(before)
    for operation in operations:
        if operation[0] == "truncate":
            del current[operation[1] :]
            states.append(bytes(current))
            continue
        _, at, data = operation
        for written in range(1, len(data) + 1):
            state = bytearray(current)
            state[len(state) : at] = bytes(max(0, at - len(state)))
            state[at : at + written] = data[:written]
            states.append(bytes(state))
        current = bytearray(states[-1])
    return states


def test_a_kill_at_any_byte_of_a_seal_loses_no_row(tmp_path, monkeypatch):
    """The append that seals writes its own chunk, a copy of the sealed chunk after it, the
    sealed chunk over the small ones, and cuts the file: killed at any byte of any of those, the
    file reads as every row written before the append, and once its chunk is whole, its rows."""
    monkeypatch.setattr(samplechunks, "SEAL_ROWS", 20)
    path = tmp_path / "w.samples"
    w = _write_in_snapshots(path, 35)  # one seal (rows 0-19), then 3 small chunks (20-34)
    before = path.read_bytes()
    operations: list[tuple] = []
    real_pwrite, real_ftruncate = samplefile.os.pwrite, samplefile.os.ftruncate

    def pwrite(fd, data, offset):
        operations.append(("write", offset, bytes(data)))
        return real_pwrite(fd, data, offset)

    def ftruncate(fd, size):
        operations.append(("truncate", size))
        return real_ftruncate(fd, size)

    monkeypatch.setattr(samplefile.os, "pwrite", pwrite)
    monkeypatch.setattr(samplefile.os, "ftruncate", ftruncate)
    w.append(_rows(35, 5).tobytes())  # 20 rows since the seal: sealed
    monkeypatch.undo()
    after = path.read_bytes()
    assert [op[0] for op in operations] == ["write", "write", "write", "truncate"] and len(after) < len(before) + 200
    chunk_written = len(before) + len(operations[0][2])
    killed = tmp_path / "killed.samples"
    for state in _states(before, operations):
        killed.write_bytes(state)
        t = read_samples(killed)
        assert t.rows == (40 if len(state) >= chunk_written or state == after else 35), len(state)
        assert t.data == _rows(0, t.rows)
    assert read_samples(path).data == _rows(0, 40) and read_samples(path).truncated_bytes == 0


def test_damaged_and_hostile_chunks_cost_the_rows_after_them_only(tmp_path, monkeypatch):
    path = tmp_path / "w.samples"
    _write_in_snapshots(path, 30, per_append=10)
    good = path.read_bytes()
    header = len(samplefile._header(BASE_COLUMNS, 1, 0, 0, 0))
    second = header + samplechunks.CHUNK_HEAD.size + samplechunks.CHUNK_HEAD.unpack_from(good, header)[3]
    raw = bytearray(good)
    raw[second + samplechunks.CHUNK_HEAD.size + 3] ^= 0xFF  # a flipped bit in the second chunk's payload
    path.write_bytes(bytes(raw))
    t = read_samples(path)
    assert t.data == _rows(0, 10) and t.truncated_bytes == len(good) - second
    assert t.truncated_what == f"damaged chunk at byte {second - header} of the rows (CRC mismatch)"
    # A chunk whose payload inflates to more than it says (a zip bomb) is refused before it is inflated.
    bomb = zlib.compress(b"\0" * (ROW_BYTES * 10**5))
    chunk = samplechunks.CHUNK_HEAD.pack(samplechunks.CHUNK_MAGIC, 0, 10**5, len(bomb), zlib.crc32(bomb)) + bomb
    path.write_bytes(good[:header] + chunk)
    monkeypatch.setattr(samplefile, "MAX_FILE_BYTES", ROW_BYTES * 1000)
    with pytest.raises(SampleFileError, match="rows would take more than"):
        read_samples(path)
    # One that says it holds fewer rows than it inflates to: damaged, not read past its count.
    chunk = samplechunks.CHUNK_HEAD.pack(samplechunks.CHUNK_MAGIC, 0, 3, len(bomb), zlib.crc32(bomb)) + bomb
    path.write_bytes(good[:header] + chunk)
    t = read_samples(path)
    assert t.rows == 0 and t.truncated_what.startswith("damaged chunk at byte 0")


def test_random_damage_never_raises_anything_but_sample_file_error(tmp_path):
    path = tmp_path / "w.samples"
    _write_in_snapshots(path, 60, per_append=6)
    good = path.read_bytes()
    rng = random.Random(77)
    for _ in range(400):
        raw = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        path.write_bytes(bytes(raw[: rng.randint(0, len(raw))]))
        try:
            t = read_samples(path)
        except SampleFileError as error:
            assert "\n" not in str(error)
            continue
        assert len(t.data) == t.rows * len(t.columns) and t.data == _rows(0, 60)[: len(t.data)]


@pytest.mark.parametrize("failing", [1, 2, 3])
def test_a_failed_write_or_seal_is_done_again_whole(tmp_path, monkeypatch, failing):
    """The append's own chunk failing half-way (a full disk) raises, and the writer is as it
    was: the caller's retry writes those rows. The seal's copy or its rewrite failing half-way
    does not raise (the rows are written): the file still reads whole, and the next append
    seals first."""
    monkeypatch.setattr(samplechunks, "SEAL_ROWS", 20)
    path = tmp_path / "w.samples"
    w = _write_in_snapshots(path, 15)
    real_pwrite = samplefile.os.pwrite
    calls = []

    def pwrite(fd, data, offset):
        calls.append(offset)
        if len(calls) == failing:
            real_pwrite(fd, bytes(data[: len(data) // 2]), offset)
            raise OSError(28, "No space left on device")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(samplefile.os, "pwrite", pwrite)
    if failing == 1:
        with pytest.raises(OSError):
            w.append(_rows(15, 5).tobytes())
        assert w.rows == 15
        retry = _rows(15, 7)  # the caller retries its rows, and newer ones
    else:
        w.append(_rows(15, 5).tobytes())
        assert w.rows == 20 and read_samples(path).data == _rows(0, 20)
        retry = _rows(20, 2)
    monkeypatch.setattr(samplefile.os, "pwrite", real_pwrite)
    w.append(retry.tobytes())
    t = read_samples(path)
    assert t.data == _rows(0, 22) and t.truncated_bytes == 0 and w.size == path.stat().st_size
    assert _heads(path) == ([(0, 22)] if failing == 1 else [(0, 20), (20, 2)]), _heads(path)
