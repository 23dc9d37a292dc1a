"""A run that counts thousands of distinct counters: the text report prints a bounded number of them
and says how many it left out and where to see them; ``--json`` keeps every one.

The run is written by a real ``Profiler`` in its own interpreter: 10,000 distinct counters counted
with no phase open (the COUNTERS block) and 500 inside the run's only phase (which DOMINANT
PHASES lists, with its counters under it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.cli import run_cli as lineprofiler
from lineprofiler.report.render.html.page import CHART_COUNTERS
from lineprofiler.report.render.text import COUNTER_ROWS

OUTSIDE = 10_000
INSIDE = 500

MANY_COUNTERS = textwrap.dedent(
    f"""
    import sys
    from lineprofiler.accounting import Profiler

    with Profiler(run_dir=sys.argv[1], role="loader", max_counters=20_000) as profiler:
        with profiler.phase("load"):
            for i in range({INSIDE}):
                profiler.count(f"shard_{{i:05d}}", i + 1)
        for i in range({OUTSIDE}):
            profiler.count(f"file_{{i:05d}}", 1)
    """
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("many-counters") / "profile"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    subprocess.run([sys.executable, "-c", MANY_COUNTERS, str(run_dir)], check=True, env=env, timeout=120)
    return run_dir


def block(text: str, title: str) -> list[str]:
    for chunk in text.split("\n\n"):
        if chunk.startswith(title):
            return chunk.splitlines()
    raise AssertionError(f"no {title} block in:\n{text}")


def test_the_text_report_prints_a_bounded_number_of_counters_and_counts_the_rest(run_dir):
    result = lineprofiler("report", run_dir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert len(result.stdout.splitlines()) < 120  # not one line per counter

    counters = block(result.stdout, "COUNTERS")
    assert counters[1] == "  (no phase open)"
    rows = [line for line in counters if line.startswith("    + ")]
    assert [row.split()[1] for row in rows] == [f"file_{i:05d}" for i in range(COUNTER_ROWS)]
    assert counters[-1] == f"  ... {OUTSIDE - COUNTER_ROWS:,} more counters (--json lists every one)"
    assert len(counters) == 2 + COUNTER_ROWS + 1

    dominant = block(result.stdout, "DOMINANT PHASES")
    assert dominant[1].startswith("load ")
    rows = [line for line in dominant if line.startswith("    + ")]
    assert [row.split()[1] for row in rows] == [f"shard_{i:05d}" for i in range(COUNTER_ROWS)]
    assert dominant[-1] == f"    ... {INSIDE - COUNTER_ROWS:,} more counters (--json lists every one)"


def test_json_lists_every_counter(run_dir):
    result = lineprofiler("report", run_dir, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    (group,) = document["counters"]["groups"]
    assert group["phase"] == "" and len(group["counters"]) == OUTSIDE
    assert {c["name"] for c in group["counters"]} == {f"file_{i:05d}" for i in range(OUTSIDE)}
    (load,) = document["dominant"]["phases"]
    assert [c["total"] for c in load["counters"]] == list(range(1, INSIDE + 1))


def test_the_html_chart_draws_the_highest_rates_and_the_table_keeps_every_counter(run_dir, tmp_path):
    page = tmp_path / "report.html"
    result = lineprofiler("report", run_dir, "--html", page)
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    svg_start = html.index('data-chart="counter-rates"')
    chart = html[svg_start : html.index("</svg>", svg_start)]
    labels = re.findall(r'class="label">([^<]*)</text>', chart)
    assert len(labels) == CHART_COUNTERS
    # The shards counted inside the short phase have the highest rates, the largest totals first.
    document = json.loads(lineprofiler("report", run_dir, "--json").stdout)
    (load,) = document["dominant"]["phases"]
    fastest = sorted(load["counters"], key=lambda c: -c["per_s"])[:CHART_COUNTERS]
    assert {label.split()[0] for label in labels} == {c["name"] for c in fastest}
    section = html[html.index('id="counters"') :]
    table = section[: section.index("</table>")]
    assert table.count("<tr data-role=") == OUTSIDE + INSIDE
    assert f"highest rates of {OUTSIDE + INSIDE:,} counters" in section
