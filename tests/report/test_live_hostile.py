"""A damaged or hostile live file costs its own process's live numbers, nothing else: each shape
the reader once hung or crashed on (a huge node count, a zero-size segment, offsets and bucket
counts past a record, a deeply nested identity, the header's I/O-flag offsets at bytes 120-128)
is read or refused with LiveFileError, and ``report`` and ``top`` on a run holding it exit 0, show
the healthy worker beside it and name the bad file. Also: a worker file whose ``live_file`` is
null keeps none, so a live file beside it is ignored; and a FROZEN (version 2) live file is
merged path by path with the last snapshot.

The live files are real: written by real profiler processes, killed with SIGKILL."""

from __future__ import annotations

import json
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.bounds import time_bound
from helpers.runs import healthy_and_killed
from lineprofiler.report.read.merge import load_run
from lineprofiler.runfiles import histogram, livefile

RUN_ID = "hostile"
STEPS = 100
#: Far more than any case needs; only a hang (a reader looping on a bad count) reaches it.
HANG_S = 30

# Byte offsets of the header's fields (the layout livefile._HEADER reads).
VERSION_AT, SEGMENT_BYTES_AT, N_BUCKETS_AT = 8, 16, 36
N_NODES_AT, N_COUNTERS_AT = 64, 68
NODE_OFFSETS_AT = 80  # 21 uint32, in livefile._NODE_FIELDS order
COUNTER_OFFSETS_AT = 164  # 5 uint32, in livefile._COUNTER_FIELDS order
IDENTITY_LEN_AT, IDENTITY_AT, IDENTITY_BYTES = 184, 188, 2048
FLAGS_AT = IDENTITY_AT + IDENTITY_BYTES  # version 2's flags word
FROZEN = 1
ABANDONED_EPOCH = 2**64 - 1

JOB = """
import os, signal, sys
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role=sys.argv[2], enabled=True, snapshot_interval_s=600.0)
for i in range({steps}):
    with prof.phase("step"):
        with prof.phase(f"p{{i % 70}}"):  # 70 paths and counters: two chunks of each
            prof.count("items", 2)
        with prof.phase("load", io=True):
            pass
prof.count("episodes")
if sys.argv[3] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)  # no final snapshot: only the start file and the live file
prof.close()
""".format(steps=STEPS)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return healthy_and_killed(tmp_path_factory.mktemp("seed"), JOB, RUN_ID)


@pytest.fixture
def run(seed: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A fresh copy of the seed run: ``(run_dir, victim's live file)``."""
    run_dir, live = seed
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy, copy / live.relative_to(run_dir)


def read_or_refuse(path: Path, data: bytes | None = None) -> livefile.LiveFile | None:
    """read_live's whole contract: a LiveFile, or LiveFileError; anything else fails the test."""
    with time_bound(HANG_S):
        try:
            return livefile.read_live(path, data=data)
        except livefile.LiveFileError:
            return None


def put(path: Path, offset: int, fmt: str, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))


def report_json(run_dir: Path) -> dict:
    """``lineprofiler report --json``: it must exit 0 and print one JSON document."""
    done = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "report", str(run_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def assert_reported_beside(run_dir: Path, live: Path) -> list[str]:
    """The run's report: the healthy worker's numbers whole, a CAVEATS line naming the bad file."""
    doc = report_json(run_dir)
    entries = {r["role"]: r["entries"] for r in doc["iterations"]["roles"]}
    assert entries["healthy"] == STEPS, entries
    lines = [line for line in doc["caveats"] if live.name in line]
    assert lines, doc["caveats"]
    return lines


def first_segment(path: Path) -> int:
    (header_bytes,) = struct.unpack_from("<I", path.read_bytes(), 12)
    return header_bytes


def node_offset_at(field: str) -> int:
    return NODE_OFFSETS_AT + 4 * livefile._NODE_FIELDS.index(field)


def counter_offset_at(field: str) -> int:
    return COUNTER_OFFSETS_AT + 4 * livefile._COUNTER_FIELDS.index(field)


def test_the_seed_is_whole(run: tuple[Path, Path]) -> None:
    run_dir, live = run
    read = read_or_refuse(live)
    assert read is not None and read.usable and not read.problems
    assert read.total_entries == 3 * STEPS and read.version == livefile.VERSION
    assert assert_reported_beside(run_dir, live)  # its caveat: killed before its first snapshot


@pytest.mark.parametrize("where", [N_NODES_AT, N_COUNTERS_AT])
def test_a_huge_count_reads_what_the_file_holds(run: tuple[Path, Path], where: int) -> None:
    run_dir, live = run
    put(live, where, "<i", 2**31 - 1)
    read = read_or_refuse(live)
    assert read is not None and any("cut short" in p for p in read.problems), read and read.problems
    lines = assert_reported_beside(run_dir, live)
    assert any("cut short" in line for line in lines), lines


@pytest.mark.parametrize("header_too", [False, True])
def test_a_zero_size_segment_ends_the_walk(run: tuple[Path, Path], header_too: bool) -> None:
    run_dir, live = run
    put(live, first_segment(live) + 12, "<I", 0)
    if header_too:
        put(live, SEGMENT_BYTES_AT, "<I", 0)
    read = read_or_refuse(live)
    assert read is not None and read.problems
    assert_reported_beside(run_dir, live)


@pytest.mark.parametrize(
    "where, value",
    [
        (node_offset_at("hist"), 2**32 - 1),
        (node_offset_at("entries"), 10**6),
        (node_offset_at("lname"), 2**31),
        (counter_offset_at("total"), 2**32 - 8),
        (N_BUCKETS_AT, 2**32 - 1),
        (N_BUCKETS_AT, 10**6),
        (N_BUCKETS_AT, 0),
    ],
    ids=["hist", "entries", "lname", "counter-total", "buckets-max", "buckets-million", "buckets-zero"],
)
def test_offsets_and_bucket_counts_past_a_record_are_refused(run: tuple[Path, Path], where: int, value: int) -> None:
    run_dir, live = run
    put(live, where, "<I", value)
    read = read_or_refuse(live)
    assert read is not None and not read.usable and read.problems
    lines = assert_reported_beside(run_dir, live)
    assert any("not used" in line for line in lines), lines


@pytest.mark.parametrize("length", [IDENTITY_BYTES, 4096])
def test_a_deeply_nested_identity_is_refused_not_recursed(run: tuple[Path, Path], length: int) -> None:
    run_dir, live = run
    data = bytearray(live.read_bytes())
    data[IDENTITY_AT:FLAGS_AT] = b"[" * IDENTITY_BYTES
    data[FLAGS_AT : FLAGS_AT + 2048] = b"[" * 2048  # what a reader past the identity area would see
    struct.pack_into("<I", data, IDENTITY_LEN_AT, length)
    read = read_or_refuse(live, bytes(data))
    assert read is not None and read.identity == {}
    assert any("identity" in p for p in read.problems), read.problems
    live.write_bytes(bytes(data))
    assert_reported_beside(run_dir, live)


@pytest.mark.parametrize("offset", range(120, 128))
def test_the_flag_offsets_at_bytes_120_to_128(run: tuple[Path, Path], offset: int) -> None:
    """The offsets of the nodes' ``io`` and ``sync`` bytes: a high byte set puts them past a
    node (refused), a low one inside it (read, its flags garbage)."""
    run_dir, live = run
    data = bytearray(live.read_bytes())
    data[offset] = 0xFF
    live.write_bytes(bytes(data))
    read = read_or_refuse(live)
    assert read is not None
    if offset % 4 == 3:
        assert not read.usable
    assert_reported_beside(run_dir, live)


def test_a_null_live_file_field_means_the_live_file_beside_is_not_its_own(run: tuple[Path, Path]) -> None:
    """The victim's worker file says it keeps no live file: the one beside it (another
    process's, or copied over) must not give it numbers."""
    run_dir, live = run
    worker = live.with_suffix(".json")
    document = json.loads(worker.read_text())
    assert document["live_file"] == live.name
    document["live_file"] = None
    worker.write_text(json.dumps(document))
    (victim,) = [w for w in load_run(run_dir).workers if w.role == "victim"]
    assert victim.numbers_from.startswith("json: ") and "not its own" in victim.numbers_from
    assert victim.document["phases"] == []
    lines = assert_reported_beside(run_dir, live)
    assert any("not its own" in line for line in lines), lines


FROZEN_JOB = """
import os, signal, sys
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role="frozen", enabled=True, snapshot_interval_s=600.0)
def step(name):
    with prof.phase(name):
        prof.count("n")
for _ in range(10):
    step("a")
for _ in range(5):
    step("b")
for _ in range(3):
    step("c")
prof.flush()  # the last snapshot: a 10, b 5, c 3
for _ in range(2):
    step("a")  # after it: in the live file only
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_frozen_live_file_is_merged_with_the_snapshot(tmp_path: Path) -> None:
    """Version 2, FROZEN: the writer could not grow the file after ``a`` and ``b``; ``c`` (made
    after) is in the snapshot only. The live file is the real one, its version and flags set, and
    its published counts cut back to what it held when it froze."""
    script = tmp_path / "job.py"
    script.write_text(FROZEN_JOB)
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, str(script), str(run_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    (live,) = run_dir.glob("workers/*/*.live")
    before = livefile.read_live(live)
    by_path = {p["path"]: p for p in before.phases}
    assert {path: p["entries"] for path, p in by_path.items()} == {"a": 12, "b": 5, "c": 3}
    c_node = by_path["c"]["id"]
    data = bytearray(live.read_bytes())
    assert struct.unpack_from("<i", data, N_NODES_AT) == (c_node + 1,)  # c is the newest node
    struct.pack_into("<i", data, N_NODES_AT, c_node)
    struct.pack_into("<i", data, N_COUNTERS_AT, 2)  # counters "n" under a and b; c's is later
    struct.pack_into("<I", data, FLAGS_AT, FROZEN)
    live.write_bytes(bytes(data))
    frozen = livefile.read_live(live)
    assert frozen.usable and frozen.frozen and frozen.version == livefile.VERSION
    assert sorted(p["path"] for p in frozen.phases) == ["a", "b"]

    (worker,) = load_run(run_dir).workers
    assert worker.numbers_from == "live"
    entries = {p["path"]: p["entries"] for p in worker.document["phases"]}
    assert entries == {"a": 12, "b": 5, "c": 3}  # a from the live file, c from the snapshot
    counters = {(c["phase"], c["name"]): c["total"] for c in worker.document["counters"]}
    assert counters == {("a", "n"): 12, ("b", "n"): 5, ("c", "n"): 3}
    # Its paths: every node it holds but the root (the overflow node, a and b).
    assert any(f"stopped growing at {c_node - 1} paths" in note for note in worker.live_notes), worker.live_notes
    doc = report_json(run_dir)
    assert any("stopped growing" in line and live.name in line for line in doc["caveats"]), doc["caveats"]


def test_version_1_abandoned_stays_unusable(run: tuple[Path, Path]) -> None:
    _, live = run
    put(live, VERSION_AT, "<I", 1)
    put(live, N_BUCKETS_AT, "<I", histogram.N_BUCKETS_1US)  # version 1's scheme
    put(live, 72, "<Q", ABANDONED_EPOCH)
    read = read_or_refuse(live)
    assert read is not None and not read.usable and "abandoned" in read.problems[0]


def _top_once(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", "top", str(run_dir), "--once"],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


def _zero_segment(live: Path) -> None:
    put(live, first_segment(live) + 12, "<I", 0)
    put(live, SEGMENT_BYTES_AT, "<I", 0)


BREAKERS: dict[str, Callable[[Path], None]] = {
    "huge-n-nodes": lambda live: put(live, N_NODES_AT, "<i", 2**31 - 1),
    "zero-segment": _zero_segment,
    "hist-offset": lambda live: put(live, node_offset_at("hist"), "<I", 2**32 - 1),
    "byte-123": lambda live: put(live, 123, "<B", 0xFF),
    "not-a-live-file": lambda live: live.write_bytes(b"\x01" * 64),
}


@pytest.mark.parametrize("breaker", sorted(BREAKERS))
def test_top_shows_the_healthy_workers_and_names_the_bad_file(run: tuple[Path, Path], breaker: str) -> None:
    run_dir, live = run
    BREAKERS[breaker](live)
    start = time.monotonic()
    done = _top_once(run_dir)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert time.monotonic() - start < HANG_S
    out = done.stdout
    assert "role healthy" in out and "  step " in out, out
    assert "could not be read" in out and live.name in out, out  # a file read in part is named too
