"""Thousands of damaged worker files: each is refused with WorkerFileError or reported, nothing else.

Three families of damage, from a realistic document (real histograms, counters, caveat fields,
an open phase, the sampler's and the GPU attachment's objects: every key a real worker file has):
bytes (truncation, flipped, inserted and deleted bytes: what a crash or a bad disk leaves),
structure (one value anywhere in the document replaced by a value of another type or an extreme
one, a key deleted, a list emptied or duplicated: what a buggy or newer writer leaves), and a
few hand-made hostile texts (NaN, huge integers, deep nesting, lone surrogates).

Every case that validates is merged beside an intact worker and rendered as a report and as a
comparison, so the checks in ``workerfile.validate`` are shown to be enough for the report.
"""

import copy
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lp_report_builders import (
    MS,
    US,
    S,
    SimWorker,
    actor_loop,
    gpu_document,
    key_paths,
    key_shape,
    learner_loop,
    off_cpu_split,
)

from lineprofiler.report.read import merge
from lineprofiler.report.render import compare
from lineprofiler.report.render.blocks import render
from lineprofiler.runfiles import samplefile, workerfile

CASES_PER_FAMILY = 1500
NASTY_VALUES = [
    None, True, False, 0, -1, 1, 2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**200, 0.5, -0.5, 1e308,
    "", "x", "\u00e9t\u00e9", "\ud800", "a/b//c", "\x00\n\x1b", "9" * 50, [], [0], [[0, 1]], [[300, 1]],
    [[-1, 1]], [[1, -1]], [[1, 2, 3]], [["1", 1]], {}, {"a": 1}, {"scheme": "log2x8-1us"},
]

#: A gpu=True phase's GPU time (accounting/gpu_events.py), so every key of it is damaged once.
PHASE_TIME = {
    "available": True, "unavailable_reason": None, "source": "torch.cuda.Event", "pool_pairs": 1024, "ended": False,
    "errors": 0, "last_error": None,
    "phases": [{"path": "iteration/learn", "gpu_ns": 10**6, "pairs": 3, "dropped": 0, "pending": 1}],
}


def baseline_documents(folder):
    actor = SimWorker("actor", rank=0, window_phase="iteration")
    actor_loop(actor, 30, mcts_ns=3 * MS, env_ns=700 * US, mcts_wait_ns=500 * US, jitter=[0, 2 * MS, 9 * MS])
    actor.count("episodes", 2)
    learner = SimWorker("learner", rank=1, host="node08")
    learner.fork_parent_pid = 4000
    learner.run_id_source = "slurm"
    learner_loop(learner, 10, train_ns=20 * MS, wait_ns=5 * MS, checkpoint_every=5, checkpoint_ns=50 * MS)
    learner.open("iteration")
    learner.open("load_batch")
    learner.wait(30 * S)
    split = off_cpu_split([{"path": "iteration/load_batch", "elapsed_ns": 30 * S, "on_cpu_ns": 0, "runqueue_ns": 0,
                            "throttled_ns": 0, "blocked_ns": 30 * S}])
    samples = learner.write_samples(folder, {"rss_bytes": [10**6, 3 * 10**6, 2 * 10**6], "rchar": [0, 10, 20],
                                             "gpu0_busy": [50, 60, 70], "gpu0_mine": [-1, 10, -2]}, off_cpu=split)
    learner.source = {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty_files": 2, "diff_sha": "9b1530cd",
                      "root": "/project", "unavailable_reason": None}
    mutant_source = learner.document(
        status="running", snapshot_failures=1, last_error="disk full", mismatched_exits=2, errors=["e"],
        caps={"max_paths": 10, "paths_overflowed": 1, "max_counters": 10, "counters_overflowed": 0},
        samples=samples,
        gpu=gpu_document(
            devices=[0], vram={"allocated_peak": 10**9, "reserved_peak": 2 * 10**9}, phase_time=PHASE_TIME
        ),
    )
    # As the real writer lays it out: samples last, behind the layout key.
    return actor.document(), json.loads(_writer_bytes(mutant_source))


def all_paths(node, prefix=()):
    """Every (container path, key) in a JSON document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from all_paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield prefix + (index,)
            yield from all_paths(value, prefix + (index,))


def key_path(path):
    """A concrete path's key as :func:`key_paths` spells it: ``("phases", 3, "id")`` is ``phases[].id``."""
    text = ""
    for part in path:
        text += "[]" if isinstance(part, int) else ("." if text else "") + part
    return text


def first_of_each_key(paths):
    """One concrete path per key (``phases[].id`` once, not once per phase), in order."""
    seen = {}
    for path in paths:
        seen.setdefault(key_path(path), path)
    return list(seen.values())


def mutate_structure(rng, document, paths, path=None):
    doc = copy.deepcopy(document)
    path = path if path is not None else rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    action = rng.random()
    if action < 0.7:
        parent[key] = rng.choice(NASTY_VALUES)
    elif action < 0.85:
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    else:
        value = parent[key]
        if isinstance(value, list):
            parent[key] = value + value if rng.random() < 0.5 else []
        elif isinstance(value, int) and not isinstance(value, bool):
            parent[key] = value * rng.choice([0, -1, 10**6, 3])
        else:
            parent[key] = rng.choice(NASTY_VALUES)
    return json.dumps(doc, allow_nan=False).encode()


def mutate_bytes(rng, raw):
    data = bytearray(raw)
    action = rng.random()
    if action < 0.3:
        return bytes(data[: rng.randrange(len(data))])
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        if action < 0.6:
            data[at] = rng.randrange(256)
        elif action < 0.8:
            data[at:at] = bytes(rng.choice([b"0", b"-", b"\"", b"]", b"}", b",", b"9999999999999999999999", b"e5"]))
        else:
            del data[at : at + rng.randint(1, 20)]
    return bytes(data)


HOSTILE = [
    b"NaN", b"[" * 100_000 + b"]" * 100_000, b'{"kind": "lineprofiler-worker", "schema_version": 1e400}',
    b"1" * 5000, b'"\\ud800"', b"\xef\xbb\xbf{}", b"null", b"[]", b"{}",
]


def check(raw, intact, results):
    """Parse ``raw`` both ways the report does; merge and render whatever is accepted."""
    path = Path("/fuzz/workers/node07/w_run_1_0000abcd.json")
    # skip_samples: how merge reads (stopping before the samples where the layout allows);
    # whole: how a block reads the samples.
    for skip_samples in (True, False):
        try:
            document = workerfile.parse_worker_bytes(raw, path, skip_samples=skip_samples)
        except workerfile.WorkerFileError as error:
            assert str(error).startswith(str(path)) and "\n" not in str(error)
            if not skip_samples:
                results["refused"] += 1
            continue
        worker = merge.worker_from_document(path, document, size=len(raw))
        run = merge.merge_workers(path.parent.parent.parent, [intact, worker])
        assert render(run).startswith("Runtime ")
        json.dumps(compare.compare_runs(run, run), allow_nan=False)
        compare.render_compare(compare.compare_runs(run, run))
        if not skip_samples:
            results["reported"] += 1


def test_the_structure_damage_reaches_every_key_of_a_real_worker_file(tmp_path, real_document):
    _, source = baseline_documents(tmp_path)
    mutated = {key_path(path) for path in first_of_each_key(list(all_paths(source)))}
    real = key_paths(key_shape(real_document))
    unmutated = sorted(real - mutated)
    assert not unmutated, f"keys of real files the fuzz test never damages: {unmutated}"
    for key in ("phases[].id", "phases[].open_ns", "phases[].cpu_missing", "own_io_excluded.wchar",
                "own_io_subtracted", "identity.run_id_source", "identity.fork_parent_pid", "repairs.stale_exits",
                "repairs.dropped_entries", "config.cpu_clock", "config.max_paths", "samples.gpu.devices"):
        assert key in mutated


@pytest.mark.parametrize("family", ["bytes", "structure", "hostile"])
def test_damaged_worker_files_are_refused_cleanly_or_reported(family, tmp_path):
    rng = random.Random(f"lineprofiler-{family}")
    intact_doc, source = baseline_documents(tmp_path)
    intact = merge.worker_from_document(Path("/fuzz/workers/node07/w_intact.json"), intact_doc)
    raw = _writer_bytes(source)
    results = {"refused": 0, "reported": 0}
    if family == "bytes":
        cases = (mutate_bytes(rng, raw) for _ in range(CASES_PER_FAMILY))
    elif family == "structure":
        paths = list(all_paths(source))
        # Every key once (whatever the draw), then random places.
        every_key = [mutate_structure(rng, source, paths, path) for path in first_of_each_key(paths)]
        cases = itertools.chain(every_key, (mutate_structure(rng, source, paths) for _ in range(CASES_PER_FAMILY)))
    else:
        cases = iter(HOSTILE)
    for case in cases:
        check(case, intact, results)
    if family == "structure":
        # Both outcomes are exercised: the damage reaches merge and render, not only the reader.
        assert results["reported"] > CASES_PER_FAMILY // 5
        assert results["refused"] > CASES_PER_FAMILY // 5
    if family == "hostile":
        assert results["reported"] == 0


def test_a_directory_of_damaged_files_is_reported_from_the_intact_ones(tmp_path):
    rng = random.Random("lineprofiler-dir")
    intact_doc, source = baseline_documents(tmp_path / "sources")
    raw = json.dumps(source).encode()
    folder = workerfile.worker_dir(tmp_path, "node07")
    folder.mkdir(parents=True)
    workerfile.write_worker_file(folder / "w_run_1_00000001.json", intact_doc)
    for i in range(200):
        (folder / f"w_run_{i + 2}_{i + 2:08x}.json").write_bytes(mutate_bytes(rng, raw))
    run = merge.load_run(tmp_path)
    report = render(run)
    assert len(run.workers) + len(run.unreadable) + sum(a.files for a in run.superseded) <= 201
    assert len(run.unreadable) > 100
    assert "CAVEATS" in report


# -- what else a run directory can hold ----------------------------------------------------------


def _lineprofiler(*args):
    """``python -m lineprofiler`` in a subprocess; the timeout is what a hang would hit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", *map(str, args)], capture_output=True, timeout=300, env=env
    )


def _caveats(stdout):
    text = stdout.decode("utf-8")
    return [line for line in text[text.index("\nCAVEATS\n"):].splitlines() if line.startswith("  - ")]


def test_special_files_oversized_files_odd_names_and_copies_cost_only_themselves(tmp_path):
    """FIFOs, symbolic links to /dev/zero, directories and oversized files where worker and
    sample files belong, names that are not UTF-8, and a copied worker file: each is one CAVEATS
    line (or counted once), never a hang, a MemoryError or a traceback, and the rest is reported."""
    run_dir = tmp_path / "run"
    host = workerfile.worker_dir(run_dir, "node07")
    sims = []
    for rank in range(5):
        sim = SimWorker("actor", rank=rank)
        actor_loop(sim, 5, mcts_ns=2 * MS, env_ns=1 * MS)
        sim.write(run_dir, samples=sim.write_samples(run_dir, {"rss_bytes": [10**6, 2 * 10**6, 3 * 10**6]}))
        sims.append(sim)

    # Where worker files belong: a FIFO (reading it would wait forever), a symbolic link to an
    # endless device, a directory, a sparse file far over the limit.
    os.mkfifo(host / "w_run_1_000000f1.json")
    os.symlink("/dev/zero", host / "w_run_2_000000f2.json")
    (host / "w_run_3_000000f3.json").mkdir()
    with open(host / "w_run_4_000000f4.json", "wb") as handle:
        handle.truncate(3 * 1024**3)
    # Where sample files belong: the same, for four of the five actors.
    samples = [sim.path_in(run_dir).with_suffix(".samples") for sim in sims]
    for path in samples[:4]:
        path.unlink()
    os.mkfifo(samples[0])
    os.symlink("/dev/zero", samples[1])
    samples[2].mkdir()
    with open(samples[3], "wb") as handle:
        handle.truncate(samplefile.MAX_FILE_BYTES + 1)
    # Names that are not UTF-8 (a file and a host folder), each holding a good worker file.
    odd_name = SimWorker("learner", rank=10)
    learner_loop(odd_name, 3, train_ns=5 * MS, wait_ns=1 * MS)
    (host / os.fsdecode(b"w_r\xffun_7_000000e7.json")).write_bytes(_writer_bytes(odd_name.document()))
    odd_host = SimWorker("learner", rank=11)
    learner_loop(odd_host, 3, train_ns=5 * MS, wait_ns=1 * MS)
    odd_dir = run_dir / "workers" / os.fsdecode(b"node\xfe")
    odd_dir.mkdir()
    (odd_dir / "w_run_8_000000e8.json").write_bytes(_writer_bytes(odd_host.document()))
    # ... and a damaged one with such a name: its caveat names it, escaped.
    (host / os.fsdecode(b"w_bad\xff_9_000000e9.json")).write_bytes(b"{")
    # A copy of a worker file (a host folder duplicated): the same process, twice.
    copy_dir = run_dir / "workers" / "node07-copy"
    copy_dir.mkdir()
    shutil.copy(sims[4].path_in(run_dir), copy_dir / sims[4].path_in(run_dir).name)

    result = _lineprofiler("report", run_dir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    text = result.stdout.decode("utf-8")
    assert text.startswith("Runtime ") and "Processes 7   Roles actor x5, learner x2" in text
    caveats = _caveats(result.stdout)

    def named(fragment):
        found = [line for line in caveats if fragment in line]
        assert len(found) == 1, (fragment, caveats)
        return found[0]

    assert "not a regular file (a FIFO)" in named("w_run_1_000000f1.json")
    assert "a symbolic link (not followed)" in named("w_run_2_000000f2.json")
    assert "not a regular file (a directory)" in named("w_run_3_000000f3.json")
    assert "larger than the 67,108,864-byte limit for this file (3,221,225,472 bytes)" in named("w_run_4_000000f4")
    for path, reason in zip(samples, ["(a FIFO)", "(not followed)", "(a directory)", "-byte limit"], strict=False):
        line = named(path.name)
        assert reason in line and "is left out of I/O and MEMORY" in line
    copies = named("hold the same process")
    assert copies.startswith("  - 2 worker files hold the same process (actor pid") and "node07-copy" in copies
    # Names that are not UTF-8 are never printed raw: the good files are reported, the bad one
    # is named with the undecodable byte escaped.
    assert "corrupt or truncated JSON" in named("w_bad\\udcff_9_000000e9.json")
    assert "\udcff" not in text and "\udcfe" not in text
    # The sampled blocks cover the one actor whose sample file is intact, and the learners' none.
    assert "actor  x1 " in text

    compared = _lineprofiler("compare", run_dir, run_dir)
    assert compared.returncode == 0 and compared.stderr == b""


def test_a_run_of_nothing_but_special_files_is_one_clean_refusal(tmp_path):
    host = workerfile.worker_dir(tmp_path, "node07")
    host.mkdir(parents=True)
    os.mkfifo(host / "w_run_1_000000f1.json")
    os.symlink("/dev/zero", host / "w_run_2_000000f2.json")
    result = _lineprofiler("report", tmp_path)
    assert result.returncode == 2
    assert result.stdout == b"" and b"Traceback" not in result.stderr
    assert result.stderr.count(b"\n") == 1 and b"none of the 2 worker files" in result.stderr


def test_duplicate_identities_are_counted_once(tmp_path):
    sim = SimWorker("actor", rank=0)
    actor_loop(sim, 10, mcts_ns=2 * MS, env_ns=1 * MS)
    early = sim.document(status="running", flush_at_ns=sim.clock_ns // 2)
    final = sim.document()
    other = SimWorker("actor", rank=1)
    actor_loop(other, 10, mcts_ns=2 * MS, env_ns=1 * MS)
    other.write(tmp_path)
    for host, document in (("a", early), ("b", final), ("c", final)):
        folder = workerfile.worker_dir(tmp_path, host)
        folder.mkdir(parents=True)
        workerfile.write_worker_file(folder / sim.path_in(tmp_path).name, document)
    run = merge.load_run(tmp_path)
    assert len(run.workers) == 2 and run.roles["actor"].phases["iteration"].entries == 20
    # The newest snapshot is the one counted: the final flush, from the first of its paths.
    (duplicate,) = run.duplicates
    assert duplicate.kept.path.parent.name == "b" and duplicate.kept.status == "exited"
    assert sorted(w.path.parent.name for w in duplicate.dropped) == ["a", "c"]
    (line,) = [c for c in run.caveats if "same process" in c]
    assert line.startswith(f"3 worker files hold the same process (actor pid {sim.pid} on node07 (rank 0), uuid ")
    assert "counted once, from workers/b/" in line
    assert "CAVEATS" in render(run)


def _writer_bytes(document):
    """The bytes the real writer writes for ``document`` (samples last, behind the layout key)."""
    ordered = {k: v for k, v in document.items() if k != "samples"}
    return json.dumps({**ordered, "layout": "samples-last", "samples": document["samples"]},
                      separators=(",", ":")).encode()


def test_absurd_in_range_values_print_readably(tmp_path):
    """Every value the reader accepts prints as something a person can read (no '7686143h')."""
    for _ in range(6):
        sim = SimWorker("actor")
        with sim.phase("forever"):
            sim.work(2**62)
            sim.count("items", 2**62)
        sim.write(tmp_path)
    report = render(merge.load_run(tmp_path))
    assert "forever                       100.0%       876.8y" in report  # six processes of 2**62 ns
    assert "  mean     146.1y   p50     146.1y   p95     146.1y   p99     146.1y" in report
    assert "27,670,116,110,564,327,424" in report  # the counter total
    assert re.search(r"\d{5,}h", report) is None, report
