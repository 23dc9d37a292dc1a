"""Byte mutations of a real live file: every header field, the identity, version 2's flags word,
every segment header and the first records of each chunk, each flipped, zeroed, set to 0xff, to
random bytes or to boundary integers (0, 1, -1, 2**31-1, 2**32-1, the file's size, huge), alone
or several at once, and the file cut at random lengths.

Every case: ``read_live`` returns a LiveFile (whatever its problems) or raises LiveFileError,
nothing else, within a bound that only a loop that never ends reaches. A smaller number of cases
goes through the whole ``report`` command, beside a healthy worker: exit 0, the healthy worker's
numbers whole, a CAVEATS line naming the mutated file.

Fixed seeds; the main fuzz stops after :data:`CASES` cases or :data:`BUDGET_S` seconds, whichever
comes first, and must have run at least :data:`MIN_CASES`."""

from __future__ import annotations

import json
import random
import shutil
import struct
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.bounds import time_bound
from helpers.cli import run_cli
from helpers.runs import healthy_and_killed
from lineprofiler.runfiles import livefile

CASES = 12_000
MIN_CASES = 10_000
BUDGET_S = 300.0
REPORT_CASES = 60
#: Per case: far more than any read takes; only a read that never ends reaches it.
CASE_BOUND_S = 10.0
SEED = 20240523
STEPS = 40

JOB = """
import os, signal, sys
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role=sys.argv[2], enabled=True, snapshot_interval_s=600.0)
for i in range({steps}):
    with prof.phase("step"):
        with prof.phase(f"p{{i % 66}}" if i < 66 else "p0"):  # 66 paths and counters: two chunks of each
            prof.count("items", 2)
        with prof.phase("load", io=True):
            pass
for i in range(66):
    with prof.phase(f"q{{i}}"):
        prof.count(f"c{{i}}")
if sys.argv[3] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
prof.close()
""".format(steps=STEPS)

# The header's fields, in order: (name, struct code), as the writer lays them out (packed, little-endian).
_HEADER_FIELDS = (
    [("magic", "8s"), ("version", "I"), ("header_bytes", "I"), ("segment_bytes", "I"), ("node_bytes", "I")]
    + [("counter_bytes", "I"), ("chunk_nodes", "I"), ("chunk_counters", "I"), ("n_buckets", "I")]
    + [("name_bytes", "I"), ("measure_cpu", "I"), ("pid", "q"), ("created", "q"), ("n_nodes", "i")]
    + [("n_counters", "i"), ("epoch", "Q")]
    + [(f"off_{name}", "I") for name in livefile._NODE_FIELDS]
    + [(f"coff_{name}", "I") for name in livefile._COUNTER_FIELDS]
    + [("identity_len", "I")]
)
IDENTITY_AT, IDENTITY_BYTES = 188, 2048
FLAGS_AT = IDENTITY_AT + IDENTITY_BYTES
_NODE_WIDTHS = {"io_delta": 40, "io": 1, "sync": 1, "overflow": 1, "lname_cut": 1, "lname_len": 2}
_FOUR = {"seq", "id", "parent", "depth", "node"}


def _targets(data: bytes) -> list[tuple[str, int, int]]:
    """``(what, offset, width)`` of every field worth mutating in this real file."""
    targets = []
    offset = 0
    for name, code in _HEADER_FIELDS:
        width = struct.calcsize("<" + code)
        targets.append((f"header.{name}", offset, width))
        offset += width
    assert offset == IDENTITY_AT
    targets += [(f"identity[{i}]", IDENTITY_AT + i, 1) for i in (0, 1, 2, 10, 50, 100)]
    targets += [("identity.area", IDENTITY_AT, IDENTITY_BYTES), ("flags", FLAGS_AT, 4)]
    values = struct.unpack_from("<" + "".join(code for _, code in _HEADER_FIELDS), data, 0)
    header = dict(zip([name for name, _ in _HEADER_FIELDS], values, strict=True))
    node_off = {name: header[f"off_{name}"] for name in livefile._NODE_FIELDS}
    counter_off = {name: header[f"coff_{name}"] for name in livefile._COUNTER_FIELDS}
    seg = header["header_bytes"]
    n_segments = 0
    while seg + 16 <= len(data):
        magic, kind, index, size = struct.unpack_from("<IIiI", data, seg)
        if magic != livefile.SEGMENT_MAGIC or size == 0:
            break
        for i, part in enumerate(("magic", "kind", "index", "bytes")):
            targets.append((f"segment{n_segments}.{part}", seg + 4 * i, 4))
        first = seg + header["segment_bytes"]
        size_of, offsets = (
            (header["node_bytes"], node_off) if kind == livefile.SEG_NODES else (header["counter_bytes"], counter_off)
        )
        for record in (0, 1, 2, 5) if n_segments < 2 else (0,):
            base = first + record * size_of
            for name, at in offsets.items():
                width = _NODE_WIDTHS.get(name, 4 if name in _FOUR else 8)
                if name == "hist":
                    width, at = 8, at + 8 * (record + 3)  # one bucket of it
                elif name == "lname":
                    width = 4
                targets.append((f"segment{n_segments}.record{record}.{name}", base + at, width))
        seg += size
        n_segments += 1
    assert n_segments >= 4  # two chunks of nodes, two of counters
    return targets


def _boundaries(width: int, size: int, original: int) -> list[int]:
    """Integers a field of ``width`` bytes is set to (as unsigned, two's complement)."""
    bits = 8 * width
    mask = (1 << bits) - 1
    values = {0, 1, 2, mask, mask - 1, (1 << (bits - 1)) - 1, 1 << (bits - 1), size, size + 1, size - 1}
    values |= {size // 2, size * 2, original + 1, original - 1, original * 2, original // 2, 16, 64, 4096}
    if bits > 32:
        values |= {2**31 - 1, 2**32 - 1, 2**32, 2**40}
    return sorted(v & mask for v in values)


def _mutate(data: bytearray, offset: int, width: int, kind: str, rng: random.Random) -> str:
    end = min(offset + width, len(data))
    if offset >= len(data):
        return "past the end"
    if kind == "flip":
        bit = rng.randrange(8 * (end - offset))
        data[offset + bit // 8] ^= 1 << (bit % 8)
        return f"flip bit {bit}"
    if kind == "zero":
        data[offset:end] = bytes(end - offset)
        return "zero"
    if kind == "ff":
        data[offset:end] = b"\xff" * (end - offset)
        return "0xff"
    if kind == "random":
        data[offset:end] = rng.randbytes(end - offset)
        return "random"
    raise AssertionError(kind)


def _set_int(data: bytearray, offset: int, width: int, value: int) -> None:
    if offset + width <= len(data):
        data[offset : offset + width] = value.to_bytes(width, "little")


def cases(seed: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """Mutated copies of ``seed``: each field with each kind and boundary value first, then random
    combinations of several, and cuts, for ever (the caller stops)."""
    targets = _targets(seed)
    for what, offset, width in targets:
        for kind in ("flip", "zero", "ff", "random"):
            data = bytearray(seed)
            how = _mutate(data, offset, width, kind, rng)
            yield f"{what}: {how}", bytes(data)
        if width in (1, 2, 4, 8):
            original = int.from_bytes(seed[offset : offset + width], "little")
            for value in _boundaries(width, len(seed), original):
                data = bytearray(seed)
                _set_int(data, offset, width, value)
                yield f"{what} = {value}", bytes(data)
    while True:
        data = bytearray(seed)
        done = []
        for _ in range(rng.choice((1, 2, 3, 4))):
            what, offset, width = rng.choice(targets)
            if width in (1, 2, 4, 8) and rng.random() < 0.5:
                original = int.from_bytes(seed[offset : offset + width], "little")
                value = rng.choice(_boundaries(width, len(seed), original))
                _set_int(data, offset, width, value)
                done.append(f"{what} = {value}")
            else:
                done.append(
                    f"{what}: {_mutate(data, offset, width, rng.choice(('flip', 'zero', 'ff', 'random')), rng)}"
                )
        if rng.random() < 0.1:
            cut = rng.randrange(len(data))
            del data[cut:]
            done.append(f"cut at {cut}")
        if rng.random() < 0.1:
            at = rng.randrange(len(data) or 1)
            data[at : at + 1] = rng.randbytes(1)
            done.append(f"random byte at {at}")
        yield "; ".join(done), bytes(data)


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return healthy_and_killed(tmp_path_factory.mktemp("fuzz-seed"), JOB, "fuzz")


def _check(live: livefile.LiveFile) -> None:
    """What a caller may rely on in any LiveFile read_live returns."""
    assert all(isinstance(p, str) for p in live.problems)
    assert isinstance(live.identity, dict)
    for phase in live.phases:
        assert isinstance(phase["path"], str) and phase["path"]
        assert phase["entries"] > 0 and phase["wall_ns"] >= 0
    for counter in live.counters:
        assert isinstance(counter["name"], str) and isinstance(counter["total"], int)


@pytest.mark.slow
def test_read_live_survives_every_mutation(seed_run: tuple[Path, Path]) -> None:
    _, victim = seed_run
    seed = victim.read_bytes()
    whole = livefile.read_live(victim, data=seed)
    assert whole.usable and not whole.problems and whole.total_entries > 0
    rng = random.Random(SEED)
    started = time.monotonic()
    ran = refused = unusable = with_problems = 0
    failures: list[str] = []
    kinds: Counter[str] = Counter()
    for what, data in cases(seed, rng):
        if ran >= CASES or time.monotonic() - started > BUDGET_S:
            break
        ran += 1
        try:
            with time_bound(CASE_BOUND_S):
                live = livefile.read_live(victim, data=data)
                _check(live)
        except livefile.LiveFileError:
            refused += 1
            continue
        except Exception as error:  # Hang included: anything but LiveFileError is a failure
            kinds[error.__class__.__name__] += 1
            failures.append(f"{what}: {error.__class__.__name__}: {error}"[:300].replace("\n", " "))
            continue
        unusable += not live.usable
        with_problems += bool(live.problems)
    elapsed = time.monotonic() - started
    print(
        f"\nlive-file fuzz: {ran} cases in {elapsed:.1f}s: {refused} refused (LiveFileError), "
        f"{unusable} read as unusable, {with_problems} read with problems, {len(failures)} failures"
        + (f" ({', '.join(f'{n} {kind}' for kind, n in kinds.most_common())})" if failures else "")
    )
    assert not failures, failures[:20]
    assert ran >= MIN_CASES, f"only {ran} cases ran in {BUDGET_S}s"
    assert refused and unusable and with_problems  # the mutations reached every kind of outcome


def _report(run_dir: Path) -> tuple[int, str, str]:
    result = run_cli("report", run_dir, "--json")
    return result.code, result.out, result.err


@pytest.mark.slow
def test_report_survives_a_mutated_live_file(
    seed_run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole ``report`` on a run with one healthy worker and one mutated live file. With
    LINEPROFILER_DEBUG set, a reader's bug would raise here instead of becoming a caveat."""
    monkeypatch.setenv("LINEPROFILER_DEBUG", "1")
    run_dir, victim = seed_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    live = copy / victim.relative_to(run_dir)
    seed = victim.read_bytes()
    rng = random.Random(SEED + 1)
    # Take the cases from across the generator: the systematic ones, then random combinations.
    chosen = [case for i, case in zip(range(6000), cases(seed, rng), strict=False) if i % 100 == 0]
    chosen += [case for _, case in zip(range(REPORT_CASES - len(chosen)), cases(seed, rng), strict=False)]
    status, out, err = _report(copy)
    assert status == 0, err
    (healthy,) = [role for role in json.loads(out)["roles"] if role["name"] == "healthy"]
    ran = 0
    for what, data in chosen[:REPORT_CASES]:
        live.write_bytes(data)
        with time_bound(CASE_BOUND_S * 3):
            status, out, err = _report(copy)
        assert status == 0, (what, err)
        doc = json.loads(out)
        # The healthy role, every number of it, as it is with the victim's file whole.
        assert [role for role in doc["roles"] if role["name"] == "healthy"] == [healthy], what
        assert any(live.name in line for line in doc["caveats"]), (what, doc["caveats"])
        ran += 1
    assert ran == REPORT_CASES
