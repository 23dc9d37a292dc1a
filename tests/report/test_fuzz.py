"""Thousands of damaged worker files: each is refused with WorkerFileError or reported, nothing else.

Three families of damage, from a realistic document (real histograms, counters, caveat fields):
bytes (truncation, flipped, inserted and deleted bytes: what a crash or a bad disk leaves),
structure (one value anywhere in the document replaced by a value of another type or an extreme
one, a key deleted, a list emptied or duplicated: what a buggy or newer writer leaves), and a
few hand-made hostile texts (NaN, huge integers, deep nesting, lone surrogates).

Every case that validates is merged beside an intact worker and rendered as a report and as a
comparison, so the checks in ``workerfile.validate`` are shown to be enough for the report.
"""

import copy
import json
import random

import pytest
from lp_report_builders import MS, US, S, SimWorker, actor_loop, learner_loop

from lineprofiler.report import compare, merge
from lineprofiler.report.text import render
from lineprofiler.runfiles import workerfile

CASES_PER_FAMILY = 1500
NASTY_VALUES = [
    None, True, False, 0, -1, 1, 2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**200, 0.5, -0.5, 1e308,
    "", "x", "\u00e9t\u00e9", "\ud800", "a/b//c", "\x00\n\x1b", "9" * 50, [], [0], [[0, 1]], [[300, 1]],
    [[-1, 1]], [[1, -1]], [[1, 2, 3]], [["1", 1]], {}, {"a": 1}, {"scheme": "log2x8-1us"},
]


def baseline_documents():
    actor = SimWorker("actor", rank=0, window_phase="iteration")
    actor_loop(actor, 30, mcts_ns=3 * MS, env_ns=700 * US, mcts_wait_ns=500 * US, jitter=[0, 2 * MS, 9 * MS])
    actor.count("episodes", 2)
    learner = SimWorker("learner", rank=1, host="node08")
    learner_loop(learner, 10, train_ns=20 * MS, wait_ns=5 * MS, checkpoint_every=5, checkpoint_ns=50 * MS)
    learner.wait(30 * S)
    mutant_source = learner.document(
        status="running", snapshot_failures=1, last_error="disk full", mismatched_exits=2, errors=["e"],
        caps={"max_paths": 10, "paths_overflowed": 1, "max_counters": 10, "counters_overflowed": 0},
        samples={"sidecar": "s.bin", "rows": 3}, gpu={"devices": []},
    )
    return actor.document(), mutant_source


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


def mutate_structure(rng, document, paths):
    doc = copy.deepcopy(document)
    path = rng.choice(paths)
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
    path = workerfile.Path("/fuzz/workers/node07/w_run_1_0000abcd.json")
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


@pytest.mark.parametrize("family", ["bytes", "structure", "hostile"])
def test_damaged_worker_files_are_refused_cleanly_or_reported(family):
    rng = random.Random(f"lineprofiler-{family}")
    intact_doc, source = baseline_documents()
    intact = merge.worker_from_document(workerfile.Path("/fuzz/workers/node07/w_intact.json"), intact_doc)
    # The real writer's bytes: samples last, behind the layout key.
    raw = json.dumps({**{k: v for k, v in source.items() if k != "samples"}, "layout": "samples-last",
                      "samples": source["samples"]}, separators=(",", ":")).encode()
    results = {"refused": 0, "reported": 0}
    if family == "bytes":
        cases = (mutate_bytes(rng, raw) for _ in range(CASES_PER_FAMILY))
    elif family == "structure":
        paths = list(all_paths(source))
        cases = (mutate_structure(rng, source, paths) for _ in range(CASES_PER_FAMILY))
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
    intact_doc, source = baseline_documents()
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
