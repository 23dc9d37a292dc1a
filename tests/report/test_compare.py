"""compare: shares and quantiles side by side; a change is real only beyond the bucket error."""

import json

import pytest
from lp_report_builders import MS, SimWorker, expected_quantile, off_cpu_split

from lineprofiler.cli import main
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
                         "b_busy_ns", "a_off_cpu", "b_off_cpu", "a_off_cpu_reason", "b_off_cpu_reason", "phases"}
    (phase,) = role["phases"]
    assert set(phase) == {"path", "a", "b", "share_change", "p50_change", "p50_real", "p99_change", "p99_real"}
    assert set(phase["a"]) == {"entries", "self_ns", "share", "p50_ns", "p99_ns", "off_cpu", "off_cpu_reason"}
    for key in [*doc, *role, *phase, *phase["a"]]:
        assert f"``{key}``" in compare.__doc__ or f"``{key.removeprefix('a_')}``" in compare.__doc__, key


def off_cpu_actor(run_dir, rows):
    """An actor whose ``step`` (with ``step/forward``) has the given off-CPU rows, in ms."""
    worker = SimWorker("actor")
    with worker.phase("step"):
        worker.work(10 * MS)
        with worker.phase("forward"):
            worker.work(10 * MS)
    split = [
        {"path": path, "elapsed_ns": (on + queue + blocked) * MS, "on_cpu_ns": on * MS, "runqueue_ns": queue * MS,
         "throttled_ns": 0, "blocked_ns": blocked * MS}
        for path, on, queue, blocked in rows
    ]
    samples = worker.write_samples(run_dir, {"rss_bytes": [10**8, 10**8]}, off_cpu=off_cpu_split(split))
    worker.write(run_dir, samples=samples)


def test_the_off_cpu_split_of_each_phase_and_of_the_role_side_by_side(tmp_path, capsys):
    # A: four threads on two CPUs (step waits for a CPU 60 % of its sampled time); B: one per CPU.
    off_cpu_actor(tmp_path / "a", [("step", 100, 300, 100), ("step/forward", 100, 300, 100), ("", 0, 0, 900)])
    off_cpu_actor(tmp_path / "b", [("step", 400, 0, 100), ("step/forward", 450, 50, 0)])
    doc = compare.compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    step = row(doc, "step")
    assert step["a"]["off_cpu"] == {"on_cpu_ns": 200 * MS, "runqueue_ns": 600 * MS, "throttled_ns": 0,
                                    "blocked_ns": 200 * MS, "sampled_ns": 1000 * MS}
    assert step["b"]["off_cpu"]["runqueue_ns"] == 50 * MS and step["b"]["off_cpu_reason"] is None
    forward = row(doc, "step/forward")
    assert forward["a"]["off_cpu"]["sampled_ns"] == 500 * MS  # its own rows only, not its parent's
    (role,) = doc["roles"]
    # Every phase of the role (time outside all phases, path "", is left out).
    assert role["a_off_cpu"] == step["a"]["off_cpu"] and role["b_off_cpu"] == step["b"]["off_cpu"]
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    line = ("off-CPU in phases (of the sampled thread-time): waiting for a CPU A 60.0% \u2192 B 5.0%; "
            "throttled A 0.0% \u2192 B 0.0%; blocked A 20.0% \u2192 B 10.0%")
    assert line in text
    page = tmp_path / "diff.html"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(page)]) == 0
    assert f'<p data-block="off-cpu">{line}</p>' in page.read_text(encoding="utf-8")


def test_a_run_without_samples_says_off_cpu_was_not_measured(tmp_path, capsys):
    doc = compared(tmp_path, {"step": [MS] * 3}, {"step": [MS] * 3})
    assert row(doc, "step")["a"]["off_cpu"] is None and row(doc, "step")["a"]["off_cpu_reason"]
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "off-CPU in phases: not measured (A: " in capsys.readouterr().out
