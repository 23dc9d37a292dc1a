"""Phases shorter than a microsecond get their own buckets (from 31 ns), and files written with
the scheme that started at 1 us still read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.cli import run_cli
from lineprofiler.accounting import _phases
from lineprofiler.runfiles import histogram, workerfile


def test_a_100ns_phase_has_a_p50_within_the_stated_error() -> None:
    ticks = iter(range(0, 10**9, 100))  # every clock read 100 ns after the one before
    rec = _phases.Recorder(measure_cpu=False, clock=lambda: next(ticks))
    for _ in range(1000):
        with rec.phase("short"):
            pass
    (node,) = [p for p in rec.snapshot()["phases"] if p["path"] == "short"]
    assert node["entries"] == 1000 and node["min_ns"] == node["max_ns"] == 100
    counts = dict(node["hist"])
    assert counts == {histogram.bucket_index(100): 1000}
    p50 = histogram.quantile(counts, 0.5)  # unclamped: the bucket's own figure
    assert p50 is not None and abs(p50 - 100) / 100 <= histogram.RELATIVE_ERROR
    assert 0 < histogram.bucket_index(100) < histogram.BELOW_1US


def test_the_c_and_python_edges_are_one_table() -> None:
    assert _phases.bucket_edges() == histogram.EDGES
    for ns in (0, 62, 63, 64, 99, 100, 101, 999, 1000, 1001, 10**6, 10**13, 2**62):
        assert _phases.bucket_index(ns) == histogram.bucket_index(ns), ns


EMPTY_PHASES = """
import json, sys
from lineprofiler.accounting import Profiler
prof = Profiler(sys.argv[1], role="r", enabled=True, measure_cpu=False)
with prof:
    for _ in range(20000):
        with prof.phase("empty"):
            pass
"""


def test_the_report_shows_a_sub_microsecond_p50(tmp_path: Path) -> None:
    """An empty phase lasts what two clock reads take: the report's p50 says so, where the
    histogram's first bucket used to make it "1.0us" whatever the phase took."""
    done = subprocess.run([sys.executable, "-c", EMPTY_PHASES, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = run_cli("report", tmp_path, "--json", "--no-samples")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    (phase,) = [p for p in doc["dominant"]["phases"] if p["path"] == "empty"]
    assert phase["entries"] == 20000
    text = json.dumps(phase)
    assert phase["min_ns"] <= phase["p50_ns"] < 1000, text
    # The median entry's bucket ends well below 1 us: the histogram resolves what the phase
    # took. (An empty phase can take about 30 ns, under the first edge, so most entries may
    # share bucket 0; the old scheme's bucket 0 ran to 1 us.)
    seen = 0
    for bucket in sorted(phase["histogram"], key=lambda b: b["index"]):
        seen += bucket["count"]
        if seen >= 20000 / 2:
            assert bucket["high_ns"] is not None and bucket["high_ns"] < 1000, text
            break


def test_a_worker_file_of_the_1us_scheme_reads_as_the_new_one(tmp_path: Path) -> None:
    from lp_report_builders import SimWorker

    worker = SimWorker("old")
    with worker.phase("p"):
        worker.work(5000)
    path = worker.write(tmp_path)
    document = json.loads(path.read_text())
    document["histogram"] = {"scheme": histogram.SCHEME_1US, "n_buckets": histogram.N_BUCKETS_1US}
    (phase,) = document["phases"]
    phase["hist"] = [[0, 2], [8, 3], [267, 1]]  # below 1 us, [1.9, 2.0) us, overflow
    path.write_text(json.dumps(document))
    read = workerfile.read_worker_file(path)
    assert read["histogram"]["scheme"] == histogram.SCHEME
    (phase,) = read["phases"]
    assert phase["hist"] == [[histogram.BELOW_1US, 2], [8 + histogram.BELOW_1US, 3], [histogram.N_BUCKETS - 1, 1]]
    old_low, old_high = histogram.EDGES[7 + histogram.BELOW_1US], histogram.EDGES[8 + histogram.BELOW_1US]
    assert (old_low, old_high) == (round(1000 * 2 ** (7 / 8)), round(1000 * 2 ** (8 / 8)))
