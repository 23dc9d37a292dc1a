"""``report --json``: the report's model, field for field, with the schema docs/report.md gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lineprofiler.cli import main
from lineprofiler.report import model
from lineprofiler.report.compute import build
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import compare
from lineprofiler.report.render import json as report_json
from lineprofiler.runfiles import histogram

from . import html_runs

DOCS = Path(__file__).resolve().parents[2] / "docs" / "report.md"


def report_json_of(run_dir, capsys, *flags) -> dict:
    assert main(["report", str(run_dir), "--json", *flags]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_the_document_is_the_model(tmp_path, capsys):
    run_dir = html_runs.write_run(tmp_path / "profile")
    doc = report_json_of(run_dir, capsys)
    assert doc["kind"] == model.KIND == "lineprofiler-report" and doc["version"] == model.VERSION == 1
    assert doc["histogram"] == {"scheme": histogram.SCHEME, "relative_error": histogram.RELATIVE_ERROR}
    run = load_run(run_dir)
    report = build.build_report(run)
    assert doc == json.loads(json.dumps(report_json.document(report, run.caveats), allow_nan=False))
    # The numbers are the merged histograms' and sums, unformatted.
    mcts = next(p for p in doc["dominant"]["phases"] if p["path"] == "iteration/self_play/mcts")
    stats = run.roles["actor"].phases["iteration/self_play/mcts"]
    assert mcts["p50_ns"] == stats.quantile(0.5) and mcts["p99_ns"] == stats.quantile(0.99)
    assert mcts["self_ns"] == stats.self_ns and mcts["wait"] == stats.wait_fraction
    assert sum(b["count"] for b in mcts["histogram"]) == stats.entries
    (counter,) = mcts["counters"]
    assert counter["total"] == run.roles["actor"].counters[("iteration/self_play/mcts", "mcts_simulations")]
    assert counter["per"] == "phase" and counter["per_s"] == counter["total"] / (stats.wall_ns / 1e9)
    actor = doc["roles"][0]
    # The actors ran at the same speed, some more iterations than others: uneven work, no straggler.
    assert actor["name"] == "actor" and actor["straggler"] is None and actor["uneven_work"]["most"] > 0
    assert abs(sum(p["share"] for p in actor["phases"]) - 1.0) < 1e-9
    assert doc["gpu"]["devices"][0]["idle"] == 100 - doc["gpu"]["devices"][0]["busy"]
    assert doc["caveats"] and doc["header"]["superseded"][0]["run_id"] == "20260813T2010-aa12bc"
    assert doc["memory"]["members"][0]["rss"]["high"]


def test_report_and_compare_describe_a_run_with_the_same_object(tmp_path, capsys):
    run_dir = html_runs.write_run(tmp_path / "profile")
    doc = report_json_of(run_dir, capsys)
    comparison = compare.compare_runs(load_run(run_dir, no_samples=True), load_run(run_dir, no_samples=True))
    assert comparison["a"] == doc["run"]
    # Phase numbers carry the same names and units in both.
    role = next(r for r in comparison["roles"] if r["role"] == "actor")
    row = next(p for p in role["phases"] if p["path"] == "iteration/self_play/mcts")
    mcts = next(p for p in doc["dominant"]["phases"] if p["path"] == "iteration/self_play/mcts")
    for key in ("entries", "self_ns", "p50_ns", "p99_ns"):
        assert row["a"][key] == mcts[key]


def test_no_samples_leaves_the_sampled_blocks_null(tmp_path, capsys):
    run_dir = html_runs.write_run(tmp_path / "profile")
    doc = report_json_of(run_dir, capsys, "--no-samples")
    assert doc["io"] is None and doc["memory"] is None and doc["gpu"] is None
    assert doc["io_by_phase"] is not None and doc["dominant"] is not None


def test_every_key_is_documented():
    documented = DOCS.read_text()
    section = documented[documented.index("## `report --json`"):]
    keys = {"kind", "version", "histogram", "relative_error", "scheme", "run", "idle", "straggler"}
    for name in model.__all__:
        keys.update(getattr(getattr(model, name), "__dataclass_fields__", {}))
    missing = sorted(k for k in keys if not re.search(rf"\b{k}\b", section))
    assert missing == []
