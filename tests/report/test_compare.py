"""compare: shares and quantiles side by side; a change is real only beyond the bucket error."""

import json

import pytest
from lp_report_builders import MS, SimWorker, expected_quantile

from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import compare
from lineprofiler.runfiles import histogram

EDGES = histogram.EDGES


def record(run_dir, role, phases):
    """One worker of ``role`` whose phase ``name`` has the given entry durations."""
    worker = SimWorker(role)
    for name, durations in phases.items():
        for d in durations:
            with worker.phase(name):
                worker.work(d)
    worker.write(run_dir)


def compared(tmp_path, a_phases, b_phases, role="actor"):
    record(tmp_path / "a", role, a_phases)
    record(tmp_path / "b", role, b_phases)
    return compare.compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))


def row(document, path, role="actor"):
    (r,) = [r for r in document["roles"] if r["role"] == role]
    return next(p for p in r["phases"] if p["path"] == path)


def test_the_threshold_is_the_widest_bucket():
    # Wider than one side's error: a change must exceed what one bucket step can produce.
    assert compare.REAL_HIGH - 1 > histogram.RELATIVE_ERROR
    widest = max(EDGES[k] / EDGES[k - 1] for k in range(1, histogram.LAST_EDGE + 1))
    assert compare.REAL_HIGH == widest
    assert compare.REAL_LOW == pytest.approx(1 / widest)


def test_a_move_to_the_next_bucket_is_not_marked_two_buckets_are(tmp_path):
    k = 120

    def in_bucket(b):
        return [EDGES[b - 1], EDGES[b] - 1, EDGES[b] - 1, EDGES[b] - 1]

    doc = compared(tmp_path, {"step": in_bucket(k)}, {"step": in_bucket(k + 1)})
    one = row(doc, "step")
    moved = expected_quantile(in_bucket(k + 1), 0.5) / expected_quantile(in_bucket(k), 0.5) - 1
    assert one["p50_change"] == pytest.approx(moved)
    assert one["p50_change"] > 0.09 and one["p50_real"] is False

    doc = compared(tmp_path / "2", {"step": in_bucket(k)}, {"step": in_bucket(k + 2)})
    two = row(doc, "step")
    assert two["p50_change"] > 0.18 and two["p50_real"] is True
    doc = compared(tmp_path / "3", {"step": in_bucket(k + 2)}, {"step": in_bucket(k)})
    assert row(doc, "step")["p50_change"] < -0.15 and row(doc, "step")["p50_real"] is True


def test_p99_and_p50_are_judged_separately(tmp_path):
    a = [10 * MS] * 99 + [20 * MS]
    b = [10 * MS] * 99 + [40 * MS]
    r = row(compared(tmp_path, {"step": a}, {"step": b}), "step")
    assert r["p50_change"] == pytest.approx(0.0) and r["p50_real"] is False
    assert r["p99_real"] is False  # p99 of 100 entries is the 99th: still 10 ms on both sides
    c = [10 * MS] * 90 + [40 * MS] * 10
    r = row(compared(tmp_path / "c", {"step": a}, {"step": c}), "step")
    assert r["p99_real"] is True and r["p99_change"] > 0.5


def test_shares_and_phases_or_roles_on_one_side_only(tmp_path):
    record(tmp_path / "a", "actor", {"mcts": [8 * MS] * 10, "env": [2 * MS] * 10})
    record(tmp_path / "b", "actor", {"mcts": [8 * MS] * 10, "reset": [8 * MS] * 10})
    record(tmp_path / "b", "learner", {"train": [5 * MS] * 3})
    doc = compare.compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    assert [r["role"] for r in doc["roles"]] == ["actor", "learner"]
    mcts = row(doc, "mcts")
    assert (mcts["a"]["share"], mcts["b"]["share"]) == (pytest.approx(0.8), pytest.approx(0.5))
    assert mcts["share_change"] == pytest.approx(-0.3)
    env = row(doc, "env")
    assert env["b"] is None and env["share_change"] is None and env["p50_change"] is None
    assert row(doc, "reset")["a"] is None
    learner = doc["roles"][1]
    assert learner["a_processes"] == 0 and learner["b_processes"] == 1 and learner["a_imbalance"] is None
    text = compare.render_compare(doc)
    assert "LEARNER  (A 0 processes; B 1 process, imbalance 1.00)" in text
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc


def test_documented_json_keys(tmp_path):
    doc = compared(tmp_path, {"step": [MS] * 3}, {"step": [MS] * 3})
    assert set(doc) == {"kind", "version", "bucket_relative_error", "real_change_above", "real_change_below",
                        "a", "b", "roles"}
    assert set(doc["a"]) == {"run_dir", "run", "run_id", "attempt", "runtime_ns", "processes", "roles",
                             "superseded", "concurrent", "merged", "caveats"}
    (role,) = doc["roles"]
    assert set(role) == {"role", "a_processes", "b_processes", "a_imbalance", "b_imbalance", "a_busy_ns",
                         "b_busy_ns", "phases"}
    (phase,) = role["phases"]
    assert set(phase) == {"path", "a", "b", "share_change", "p50_change", "p50_real", "p99_change", "p99_real"}
    assert set(phase["a"]) == {"entries", "self_ns", "share", "p50_ns", "p99_ns"}
    for key in doc:
        assert f"``{key}``" in compare.__doc__
