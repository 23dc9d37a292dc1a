"""``report --html`` and ``compare --html``: one self-contained page whose numbers are the text's.

Runs are written by the real writers (``html_runs.py``); the commands run through
``lineprofiler.cli.main``. The page is read back with the standard library's HTML parser; the
browser test (``test_html_browser.py``) checks the same page in Chromium.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser

import pytest
from lp_report_builders import MS, SimWorker

from helpers.cli import run_cli
from lineprofiler.report import format as fmt
from lineprofiler.report.compute.blocks import timeline
from lineprofiler.report.model import Lane, Span
from lineprofiler.report.render import blocks
from lineprofiler.report.render.html import page

from . import html_runs

CHARTS = ("phase-share", "process-busy", "latency", "counter-rates", "io-by-phase", "io-rates", "rss", "gpu")


class Page(HTMLParser):
    """The parts of a page the tests read: tables (rows of cell texts, with the row's
    attributes), chart kinds with their mark counts, external references, scripts."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.charts: list[dict] = []
        self.references: list[str] = []
        self.scripts = 0
        self._cell: list[str] | None = None
        self._row: dict | None = None
        self._items: list[str] | None = None
        self.items: dict[str, list[str]] = {}
        self._block: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if key in a and not a[key].startswith("#"):
                self.references.append(a[key])
        if tag == "link":
            self.references.append(a.get("href", "link"))
        if tag == "script":
            self.scripts += 1
        if tag == "table":
            self.tables.append({"attrs": a, "rows": []})
        elif tag == "tr" and self.tables:
            self._row = {"attrs": a, "cells": []}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "svg":
            self.charts.append({"kind": a.get("data-chart"), "marks": 0})
        elif a.get("class", "").split()[:1] == ["mark"] and self.charts:
            self.charts[-1]["marks"] += 1
        elif tag == "section" and "data-block" in a:
            self._block = a["data-block"]
            self.items[self._block] = []
        elif tag == "li" and self._block is not None:
            self._items = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row["cells"].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1]["rows"].append(self._row)
            self._row = None
        elif tag == "li" and self._items is not None and self._block is not None:
            self.items[self._block].append("".join(self._items))
            self._items = None
        elif tag == "section":
            self._block = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._items is not None:
            self._items.append(data)

    def table(self, block: str, **attrs: str) -> list[dict]:
        for t in self.tables:
            wanted = {"data-block": block, **{f"data-{k}": v for k, v in attrs.items()}}
            if all(t["attrs"].get(k) == v for k, v in wanted.items()):
                return [r for r in t["rows"] if r["cells"] and r["attrs"]]
        raise AssertionError(f"no table {block} {attrs}")


@pytest.fixture
def demo(tmp_path, capsys):
    run_dir = html_runs.write_run(tmp_path / "profile")
    code, text, err = run_cli("report", run_dir)
    assert code == 0, err
    out = tmp_path / "report.html"
    code, printed, err = run_cli("report", run_dir, "--html", out)
    assert code == 0 and err == "" and printed.strip() == str(out)
    return run_dir, text, out.read_text(encoding="utf-8")


def text_block(text: str, title: str) -> list[str]:
    """The block whose first line is ``title``, or starts with it and two spaces."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == title or line.startswith(title + "  "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_the_page_is_self_contained_and_has_every_chart_with_data(demo):
    _, _, html = demo
    parsed = Page(html)
    assert parsed.references == []
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)
    assert "@import" not in html and "url(" not in html and "@font-face" not in html
    assert parsed.scripts == 1
    for kind in CHARTS:
        charts = [c for c in parsed.charts if c["kind"] == kind]
        assert charts and all(c["marks"] > 0 for c in charts), kind


def test_every_number_of_the_text_report_is_the_pages(demo):
    _, text, html = demo
    parsed = Page(html)
    # Role blocks: name, share, self, row for row.
    for role in ("actor", "learner"):
        title = next(line for line in text.splitlines() if line.startswith(role.upper() + "  ("))
        rows = [line for line in text_block(text, title)[2:] if not line.startswith(("  ", "("))]
        cells = [r["cells"][:3] for r in parsed.table("role", role=role)]
        assert [[line[:30].strip(), line[30:36].strip(), line[36:49].strip()] for line in rows] == cells[: len(rows)]
    # DOMINANT PHASES: self, wait, p50, p99 per phase; the counters' total, rate, each under them.
    dominant = text_block(text, "DOMINANT PHASES")[1:]
    table = [r for r in parsed.table("dominant")]
    assert len(table) == len(dominant)
    for line, row in zip(dominant, table, strict=True):
        if line.startswith("    + "):
            expected = [line[30:38].strip(), line[38:52].strip(), line[52:65].strip()]
            assert row["cells"][1:4] == expected, line
        else:
            expected = [line[30:40].strip(), line[40:48].strip(), line[48:58].strip(), line[58:68].strip(),
                        line[68:79].strip()]
            cells = row["cells"]
            assert [cells[2], cells[3], cells[4], cells[6], cells[-1]] == expected, line
            assert cells[0] == line[:30].strip() and cells[1] == line[79:].strip()
    # ITERATIONS: mean, p50, p95, p99 per role.
    stats = [line.split() for line in text_block(text, "ITERATIONS") if line.startswith("  mean")]
    rows = parsed.table("iterations")
    assert [[s[1], s[3], s[5], s[7]] for s in stats] == [r["cells"][2:6] for r in rows]
    # I/O BY PHASE, I/O, MEMORY, GPU.
    io_phase = [line for line in text_block(text, "I/O BY PHASE (measured exactly)") if line.startswith("  ")
                and " r " in line]
    assert len(io_phase) == 2
    for line, row in zip(io_phase, parsed.table("io-by-phase"), strict=True):
        name, rest = line[2:27].strip(), line[27:]
        read, write, rate = re.match(r"\s*r\s+(.+?)\s+w\s+(.+?B)\s+(\S+ \S+)$", rest).groups()
        assert row["cells"][:4] == [name, read, write, rate]
    io = {r["cells"][0]: r["cells"][1:] for r in parsed.table("io")}
    for line in text_block(text, "I/O")[2:5]:
        assert io[line[:26].strip()] == [line[26:42].strip(), line[42:58].strip()]
    memory = {r["cells"][0]: r["cells"][1:] for r in parsed.table("memory")}
    for line in text_block(text, "MEMORY (RSS, sampled)")[3:]:
        if line.startswith("  "):
            continue
        label = " ".join(line[:26].split())
        assert memory[label][0] == line[26:42].strip()
        if label != "all processes (PSS)":
            assert memory[label][1] == line[42:58].strip()
    gpu = {r["cells"][0]: r["cells"][1:4] for r in parsed.table("gpu")}
    devices = [line for line in text_block(text, "GPU")[3:] if line.startswith("node")]
    assert len(devices) == len(gpu) == 2
    for line in devices:
        assert gpu[line[:29].strip()] == line[29:].split()
    # CAVEATS at the top, the same lines; the header's lines about attempts too.
    caveats = [line[4:] for line in text_block(text, "CAVEATS")[2:]]
    assert caveats and parsed.items["caveats"] == caveats
    attempts = text.split("\n\n")[0].splitlines()[3:]
    assert attempts[0].startswith("Superseded attempt") and parsed.items["attempts"] == attempts
    assert html.index('id="caveats"') < html.index('id="roles"')


def test_the_default_path_is_in_the_run_directory(tmp_path, capsys):
    run_dir = html_runs.write_run(tmp_path / "profile")
    code, printed, _ = run_cli("report", run_dir, "--html")
    assert code == 0 and printed.strip() == str(run_dir / "report.html")
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_bad_input_is_one_line_and_an_unwritable_path_says_so(tmp_path, capsys):
    code, out, err = run_cli("report", tmp_path / "missing", "--html", tmp_path / "x.html")
    assert code == 2 and out == "" and err == f"lineprofiler: no such directory: {tmp_path / 'missing'}\n"
    assert not (tmp_path / "x.html").exists()
    run_dir = html_runs.write_run(tmp_path / "profile")
    for target, why in ((tmp_path / "no" / "such" / "dir.html", "No such file or directory"),
                        (tmp_path, "Is a directory")):
        code, out, err = run_cli("report", run_dir, "--html", target)
        assert code == 2 and out == ""
        assert err == f"lineprofiler: cannot write {target}: {why}\n"
    code, _, err = run_cli("compare", run_dir, run_dir, "--html", tmp_path / "nope" / "c.html")
    assert code == 2 and err.startswith("lineprofiler: cannot write") and err.count("\n") == 1
    code, _, err = run_cli("report", run_dir, "--html", "--json")
    assert code == 2 and "not allowed with argument" in err and err.count("\n") == 1
    assert list(tmp_path.glob("**/.*.tmp")) == []


def test_a_failing_section_costs_that_section_and_is_named_at_the_top(demo, monkeypatch):
    run_dir, _, _ = demo

    def broken(*args):
        raise ValueError("boom")

    monkeypatch.setattr(page, "memory_html", broken)
    from lineprofiler.report.compute.build import build_report
    from lineprofiler.report.read.merge import load_run

    html = blocks.render_html(build_report(load_run(run_dir)))
    parsed = Page(html)
    assert "the html section memory failed and is missing: ValueError: boom" in parsed.items["caveats"]
    assert 'id="memory"' not in html and 'id="gpu"' in html


def test_lanes_are_drawn_when_the_run_has_a_timeline(tmp_path, capsys, monkeypatch):
    run_dir = html_runs.write_run(tmp_path / "profile")
    from lineprofiler.report.compute.build import process
    from lineprofiler.report.read.merge import load_run

    run = load_run(run_dir)

    def lanes(run, options):
        worker = run.workers[0]
        return [Lane(process(worker), [Span("iteration", worker.start_ns, worker.start_ns + 5 * MS)])]

    monkeypatch.setattr(timeline, "lanes", lanes)
    code, _, err = run_cli("report", run_dir, "--html", tmp_path / "lanes.html")
    assert code == 0, err
    parsed = Page((tmp_path / "lanes.html").read_text())
    (lane_chart,) = [c for c in parsed.charts if c["kind"] == "lanes"]
    assert lane_chart["marks"] == 1
    assert run.workers


def test_compare_marks_exactly_the_changes_beyond_the_bucket_error(tmp_path, capsys):
    for name, step_ns in (("a", 10 * MS), ("b", 13 * MS)):
        worker = SimWorker("actor")
        for _ in range(20):
            with worker.phase("step"):
                worker.work(step_ns)
            with worker.phase("same"):
                worker.work(5 * MS)
        worker.write(tmp_path / name)
    out = tmp_path / "diff.html"
    code, printed, err = run_cli("compare", tmp_path / "a", tmp_path / "b", "--html", out)
    assert code == 0 and printed.strip() == str(out), err
    code, text, _ = run_cli("compare", tmp_path / "a", tmp_path / "b")
    html = out.read_text()
    rows = {r["attrs"]["data-phase"]: r["cells"] for r in Page(html).table("compare", role="actor")}
    assert rows["step"][6].endswith(" *") and rows["step"][9].endswith(" *")
    assert not rows["same"][6].endswith("*") and not rows["same"][9].endswith("*")
    assert html.count('class="real"') == 2
    # The same numbers as the text comparison.
    for line in text.splitlines():
        if line.startswith(("step ", "same ")):
            assert " ".join(rows[line.split()[0]][1:]).replace(" *", "*") == " ".join(line.split()[1:]).replace(
                " *", "*")
    assert Page(html).references == []


def test_formatting_is_the_text_reports(demo):
    _, _, html = demo
    # Spot-check that every duration and size in the tables uses the one formatter's spelling.
    parsed = Page(html)
    for row in parsed.table("dominant"):
        for cell in row["cells"][2:]:
            assert re.fullmatch(r"(n/a|[\d,.]+(ns|us|ms|s)|\d+m \d\ds|\d+m|\d+h \d\dm|\d+%|[\d,.]+/s|[\d,.]+|"
                                r"[\d,.]+(ns|us|ms|s)/ea|)", cell), cell
    assert fmt.NA == "n/a"


BLOCKED = """
import sys
for name in ("lineprofiler.accounting", "lineprofiler.lines", "lineprofiler.lines._tracer",
             "lineprofiler.accounting._phases", "lineprofiler.accounting._sampler"):
    sys.modules[name] = None  # importing any of these now raises ImportError
from lineprofiler.cli import main
run_dir, out = sys.argv[1], sys.argv[2]
codes = [main(["report", run_dir, "--html", out + "/r.html"]), main(["report", run_dir, "--json"]),
         main(["compare", run_dir, run_dir, "--html", out + "/c.html"]),
         main(["export", run_dir, "--perfetto", out + "/t.json"])]
loaded = sorted(m for m, v in sys.modules.items()
                if v is not None and m.startswith(("lineprofiler.accounting", "lineprofiler.lines")))
print(codes, loaded, file=sys.stderr)
"""


def test_the_new_outputs_need_no_profiler_and_no_c_module(tmp_path):
    import subprocess

    run_dir = html_runs.write_run(tmp_path / "profile")
    result = subprocess.run([sys.executable, "-c", BLOCKED, str(run_dir), str(tmp_path)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[0, 0, 0, 0] []"
    for name in ("r.html", "c.html", "t.json"):
        assert (tmp_path / name).stat().st_size > 0


def test_a_role_of_many_processes_is_one_rss_envelope_and_its_largest_process(tmp_path, capsys):
    # Twelve actors (more than RSS_BANDS_PER_ROLE), RSS rising by index; two learners (fewer).
    run_dir = tmp_path / "profile"
    peaks = {}
    for role, count in (("actor", 12), ("learner", 2)):
        for index in range(count):
            worker = SimWorker(role, rank=len(peaks))
            with worker.phase("step"):
                worker.work(5 * MS)
            worker.wait(html_runs.ROWS * html_runs.S - worker.clock_ns)
            samples = html_runs._samples(worker, run_dir, index)
            worker.write(run_dir, samples=samples)
            peaks[(role, index)] = samples
    code, _, err = run_cli("report", run_dir, "--html", tmp_path / "r.html")
    assert code == 0, err
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    chart = html[html.index('data-chart="rss"') : html.index("</svg>", html.index('data-chart="rss"'))]
    actor_bands = re.findall(r'data-group="rss:actor" data-tip="([^"]*)"', chart)
    learner_bands = re.findall(r'data-group="rss:learner" data-tip="([^"]*)"', chart)
    assert len(learner_bands) == 2  # a band each, as before
    assert len(actor_bands) == 2
    envelope, largest = actor_bands
    # Index 11 grows fastest: its peak (with the one-sample spike) is the role's highest.
    top = 200_000_000 + 39 * 2_000_000 * 12
    spike = 200_000_000 + 17 * 2_000_000 * 12 + 300_000_000
    assert envelope.startswith("actor  x12: from its lowest to its highest process")
    assert fmt.size(max(top, spike)) in envelope
    assert f"peak {fmt.size(max(top, spike))}" in largest
    assert "Drawn as one band from the lowest to the highest process" in html


def test_the_rss_envelope_is_the_lowest_and_highest_of_each_column():
    from lineprofiler.report.compute import series
    from lineprofiler.report.model import Series

    a = Series(0, 10.0, [1.0, None, 5.0], [2.0, None, 6.0])
    b = Series(0, 10.0, [3.0, 4.0], [9.0, 4.0])
    assert series.envelope([a, b]) == Series(0, 10.0, [1.0, 4.0, 5.0], [9.0, 4.0, 6.0])
    assert series.envelope([a, Series(5, 10.0, [1.0], [1.0])]) is None  # columns that do not line up
