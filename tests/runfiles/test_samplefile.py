"""The sample file: round trip, appends, a truncated tail, repair after a failed append, bad files."""

from __future__ import annotations

import importlib.util
import os
import time
from array import array
from pathlib import Path

import pytest

from lineprofiler.runfiles import samplefile
from lineprofiler.runfiles.samplefile import (
    BASE_COLUMNS,
    SampleFileError,
    SampleWriter,
    interval_mask,
    read_header,
    read_samples,
)

_SYNTHETIC = Path(__file__).resolve().parents[2] / "benchmarks" / "_synthetic.py"


def write_synthetic_history(*args, **kwargs):
    """The benchmarks' generator of long histories (it writes through the real SampleWriter)."""
    spec = importlib.util.spec_from_file_location("lp_benchmarks_synthetic", _SYNTHETIC)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_synthetic_history(*args, **kwargs)

NCOLS = len(BASE_COLUMNS)


def _rows(first: int, n: int) -> array:
    """n rows whose value at (row r, column c) is (first + r) * 100 + c: every cell checkable."""
    return array("q", [(first + r) * 100 + c for r in range(n) for c in range(NCOLS)])


def test_round_trip_over_several_appends(tmp_path):
    path = tmp_path / "w.samples"
    w = SampleWriter(path, BASE_COLUMNS, 1_000_000_000, monotonic_ref_ns=5, unix_ref_ns=7, pid=99)
    sizes = [w.append(_rows(0, 3).tobytes()), w.append(_rows(3, 1).tobytes()), w.append(_rows(4, 6).tobytes())]
    assert w.rows == 10 and path.stat().st_size == w.size == sum(sizes)
    t = read_samples(path)
    assert t.columns == BASE_COLUMNS and t.rows == 10 and t.truncated_bytes == 0
    assert (t.interval_ns, t.monotonic_ref_ns, t.unix_ref_ns, t.pid) == (1_000_000_000, 5, 7, 99)
    assert t.data == _rows(0, 10)
    assert t.column("rss_bytes").tolist() == [r * 100 + 3 for r in range(10)]
    assert t.to_unix_ns(105) == 107


def test_header_is_little_endian_and_8_byte_aligned(tmp_path):
    path = tmp_path / "w.samples"
    SampleWriter(path, ("t_ns", "x"), 3, monotonic_ref_ns=1, unix_ref_ns=2, pid=4).append(b"")
    raw = path.read_bytes()
    assert raw[:8] == b"LPSAMPLE"
    assert int.from_bytes(raw[8:12], "little") == samplefile.VERSION == 2
    header_size = int.from_bytes(raw[12:16], "little")
    assert header_size == len(raw) and header_size % 8 == 0
    assert b"t_ns\0x\0" in raw


def test_truncated_last_chunk_is_ignored_and_reported(tmp_path):
    path = tmp_path / "w.samples"
    w = SampleWriter(path, BASE_COLUMNS, 1)
    w.append(_rows(0, 5).tobytes())
    whole = path.read_bytes()
    w.append(_rows(5, 3).tobytes())
    second_chunk = path.read_bytes()[len(whole) :]
    path.write_bytes(whole + second_chunk[:13])  # a crash mid-append: 13 bytes of the next chunk
    t = read_samples(path)
    assert t.rows == 5 and t.truncated_bytes == 13 and t.truncated_what == "partial last chunk"
    assert t.data == _rows(0, 5)


def test_append_after_a_partial_chunk_repairs_the_file(tmp_path):
    path = tmp_path / "w.samples"
    w = SampleWriter(path, BASE_COLUMNS, 1)
    w.append(_rows(0, 2).tobytes())
    with open(path, "ab") as handle:
        handle.write(b"\xff" * 29)  # a failed append left part of a chunk
    w.append(_rows(2, 2).tobytes())
    t = read_samples(path)
    assert t.truncated_bytes == 0 and t.data == _rows(0, 4)


def test_file_removed_under_the_writer_begins_again(tmp_path):
    path = tmp_path / "w.samples"
    w = SampleWriter(path, BASE_COLUMNS, 1)
    w.append(_rows(0, 3).tobytes())
    path.unlink()
    w.append(_rows(3, 2).tobytes())
    t = read_samples(path)
    assert w.restarts == 1 and t.rows == w.rows == 2
    assert t.data == _rows(3, 2)


def test_append_refuses_part_of_a_row(tmp_path):
    w = SampleWriter(tmp_path / "w.samples", BASE_COLUMNS, 1)
    with pytest.raises(ValueError):
        w.append(b"\0" * 9)


def test_write_failure_raises_oserror_for_the_caller_to_count(tmp_path):
    w = SampleWriter(tmp_path / "missing-dir" / "w.samples", BASE_COLUMNS, 1)
    with pytest.raises(OSError):
        w.append(_rows(0, 1).tobytes())


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "missing"),
        (b"", "too short"),
        (b"NOTSAMPLE" + b"\0" * 64, "not a lineprofiler sample file"),
        (b"LPSAMPLE" + (99).to_bytes(4, "little") + b"\0" * 60, "version 99, this lineprofiler reads up to 2; upgrade"),
        (b"LPSAMPLE" + (1).to_bytes(4, "little") + (13).to_bytes(4, "little") + b"\0" * 56, "corrupt"),
    ],
)
def test_bad_files_give_one_line_reasons(tmp_path, content, message):
    path = tmp_path / "w.samples"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SampleFileError) as info:
        read_samples(path)
    text = str(info.value)
    assert message in text and str(path) in text and "\n" not in text


def test_corrupt_column_names_are_refused(tmp_path):
    path = tmp_path / "w.samples"
    SampleWriter(path, ("t_ns", "a"), 1).append(b"")
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"t_ns")] = 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(SampleFileError, match="corrupt"):
        read_header(path)


def test_fuzzed_headers_never_raise_anything_but_sample_file_error(tmp_path):
    import random

    path = tmp_path / "w.samples"
    SampleWriter(path, BASE_COLUMNS, 1).append(_rows(0, 3).tobytes())
    good = path.read_bytes()
    rng = random.Random(1234)
    for _ in range(500):
        raw = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            raw[rng.randrange(0, 200)] = rng.randrange(256)
        path.write_bytes(bytes(raw[: rng.randint(0, len(raw))]))
        try:
            t = read_samples(path)
        except SampleFileError:
            continue
        assert t.rows * len(t.columns) == len(t.data)


def test_interval_mask_chunked_equals_whole():
    rchar = [10, 20, -1, 40, 50, 60, -1, -1, 90, 100, 110]
    flags = [1, 0, 0, 0, 2, 4, 0, 0, 4, 1, 0]
    whole_mask, whole = interval_mask(rchar, flags)
    total = samplefile.IntervalCounts()
    previous = None
    masks = []
    for a, b in ((0, 3), (3, 4), (4, 9), (9, 11)):
        m, c = interval_mask(rchar[a:b], flags[a:b], previous)
        total.add(c)
        masks += m
        previous = rchar[b - 1] >= 0
    assert masks == whole_mask and total == whole
    # Intervals end at rows 1..10. Rows 2, 3 (after -1), 6, 7, 8: a failed read at an end (that
    # wins over row 8's flag); row 4: a child reaped; row 5: reaping unknown; row 9 restarts (a
    # gap, not a drop); rows 1 and 10 are clean.
    assert whole_mask == [False, True, False, False, False, False, False, False, False, False, True]
    assert (whole.valid, whole.failed, whole.reaped, whole.unknown, whole.gaps) == (2, 5, 1, 1, 1)


def test_synthetic_history_is_read_back_whole(tmp_path):
    start = time.time_ns()
    doc = write_synthetic_history(tmp_path / "s.samples", start_unix_ns=start, hours=0.5, failed_every=100, seed=3)
    t = read_samples(tmp_path / "s.samples")
    assert t.rows == doc["rows"] == 1800
    assert doc["bytes"] == os.path.getsize(tmp_path / "s.samples")
    # Rows 99, 199, ... 1799 failed: two intervals each, but the last row has none after it.
    assert doc["dropped_intervals"] == doc["dropped"]["failed_read"] == 2 * 18 - 1
    assert t.to_unix_ns(t.column("t_ns")[0]) == start
    assert t.column("rchar").count(-1) == 18


def test_classify_agrees_with_the_reference_on_random_rows():
    """classify (sparse, byte scans) against interval_mask (a bool per row), chunk by chunk."""
    import random

    rng = random.Random(5)
    for _ in range(3000):
        n = rng.randint(0, 30)
        values = [rng.choice([-1, -7, 0, 10**12]) if rng.random() < 0.3 else rng.randint(0, 10**15) for _ in range(n)]
        rchar = array("q", values)
        flags = array("q", [rng.choice([0, 0, 0, 1, 2, 4, 6, 3, 5, 7]) for _ in range(n)])
        previous = rng.choice([None, True, False])
        mask, expected = interval_mask(rchar, flags, previous)
        interleaved = array("q", [v for pair in zip(rchar, flags, strict=True) for v in pair])
        table = samplefile.SampleTable(
            path=None, columns=("rchar", "flags"), data=interleaved,
            interval_ns=1, monotonic_ref_ns=0, unix_ref_ns=0, pid=0,
        )
        for signs, low in (
            (samplefile.sign_bytes(rchar), samplefile.low_bytes(flags)),
            (table.byte_of("rchar", 7), table.byte_of("flags", 0)),
        ):
            breaks, counts = samplefile.classify(signs, low, previous)
            assert counts == expected
            assert breaks == [k for k in range(n) if not mask[k]]
