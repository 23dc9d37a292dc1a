"""The HTML report in a real browser: headless Chromium, driven over the DevTools protocol.

Loads the demo-sized report (``html_runs.py``) and checks what a person would see: no console
error, every chart drawn with visible data marks, a hover showing a histogram bucket's range
and count, a click on a column head sorting the table, the per-role toggles hiding their
bands, the numbers in the DOM equal to the text report's, and a page that still shows its
tables and charts with scripts off. Skipped only when no Chromium is installed (CI installs
Debian's ``chromium``).
"""

from __future__ import annotations

import json

import pytest

from lineprofiler.cli import main
from lineprofiler.report import format as fmt

from . import chromium, html_runs

EXECUTABLE = chromium.find_chromium()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None, reason="no Chromium on this machine (apt-get install chromium; CI installs it)"
)

CHARTS = ("phase-share", "process-busy", "latency", "counter-rates", "io-by-phase", "io-rates", "rss", "gpu")

# Per chart kind: per chart, how many of its data marks have a visible box.
CHART_MARKS = """
(() => {
  const out = {};
  for (const svg of document.querySelectorAll("svg.chart")) {
    const marks = [...svg.querySelectorAll(".mark")];
    const shown = marks.filter(m => { const b = m.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
    (out[svg.dataset.chart] = out[svg.dataset.chart] || []).push(shown.length);
  }
  return out;
})()
"""

# Every table's rows as cell texts, with the row's data attributes.
TABLES = """
[...document.querySelectorAll("table[data-block]")].map(t => ({
  block: t.dataset.block, role: t.dataset.role || null,
  rows: [...t.querySelectorAll("tbody tr")].map(r => ({
    attrs: Object.assign({}, r.dataset), cells: [...r.cells].map(c => c.textContent.trim().replace(/\\s+/g, " ")),
  })),
}))
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("html-browser")
    run_dir = html_runs.write_run(root / "profile")
    out = root / "report.html"
    assert main(["report", str(run_dir), "--html", str(out)]) == 0
    from lineprofiler.report.compute.build import build_report
    from lineprofiler.report.read.merge import load_run
    from lineprofiler.report.render.blocks import render_report
    from lineprofiler.report.render.json import document

    run = load_run(run_dir)
    report = build_report(run)
    return out, render_report(report), json.loads(json.dumps(document(report, run.caveats)))


@pytest.fixture(scope="module")
def browser(demo):
    with chromium.Browser(EXECUTABLE, width=1280, height=900) as b:
        b.open(demo[0].as_uri())
        yield b


def centre(browser, selector: str) -> tuple[float, float]:
    box = browser.evaluate(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
        " const b = e.getBoundingClientRect(); return [b.left + b.width / 2, b.top + b.height / 2]; })()"
    )
    return box[0], box[1]


def test_no_console_errors_and_every_chart_has_visible_marks(browser):
    assert browser.evaluate("document.documentElement.classList.contains('js')") is True
    charts = browser.evaluate(CHART_MARKS)
    for kind in CHARTS:
        assert kind in charts, kind
        assert all(shown > 0 for shown in charts[kind]), (kind, charts[kind])
    assert browser.errors() == []


def test_hovering_a_histogram_bar_shows_its_bucket_range_and_count(browser, demo):
    _, _, doc = demo
    x, y = centre(browser, 'svg[data-chart="latency"] .mark')
    browser.mouse("mouseMoved", x, y)
    shown = browser.evaluate("[getComputedStyle(tip).display, tip.textContent]")
    first = doc["dominant"]["phases"][0]["histogram"][0]
    high = "and above" if first["high_ns"] is None else f"to {fmt.duration(first['high_ns'])}"
    assert shown == ["block", f"{fmt.duration(first['low_ns'])} {high}: {fmt.count(first['count'])} entries"]
    # Moving off every mark hides it.
    browser.mouse("mouseMoved", 2, 2)
    assert browser.evaluate("getComputedStyle(tip).display") == "none"
    assert browser.errors() == []


def test_a_click_on_a_column_head_sorts_its_table(browser):
    column = 'table[data-block="dominant"] th:nth-child(7)'  # p99

    def p99s():
        return browser.evaluate(
            "[...document.querySelectorAll('table[data-block=dominant] tbody')]"
            ".map(g => parseFloat(g.rows[0].cells[6].dataset.v))"
        )

    before = p99s()
    for expected in (sorted(before, reverse=True), sorted(before)):
        x, y = centre(browser, column)
        browser.mouse("mousePressed", x, y, "left")
        browser.mouse("mouseReleased", x, y, "left")
        assert p99s() == expected
    # Counters move with their phase: every counter row still follows its phase's row.
    groups = browser.evaluate(
        "[...document.querySelectorAll('table[data-block=dominant] tbody')].map(g => g.rows[0].dataset.phase + ' ' +"
        " [...g.rows].slice(1).map(r => r.dataset.counter).join(','))"
    )
    assert "iteration/self_play/mcts mcts_simulations" in groups
    assert browser.errors() == []


def test_a_role_toggle_hides_its_bands(browser):
    visible = (
        "[...document.querySelectorAll('[data-group=\"rss:actor\"]')]"
        ".filter(e => e.getBoundingClientRect().width > 0).length"
    )
    assert browser.evaluate(visible) == 3
    x, y = centre(browser, 'input[data-toggle="rss:actor"]')
    browser.mouse("mousePressed", x, y, "left")
    browser.mouse("mouseReleased", x, y, "left")
    assert browser.evaluate(visible) == 0
    browser.mouse("mousePressed", x, y, "left")
    browser.mouse("mouseReleased", x, y, "left")
    assert browser.evaluate(visible) == 3


def test_the_numbers_in_the_dom_are_the_text_reports(browser, demo):
    browser.reload()  # the order the text prints, undoing the sorting test's clicks
    _, text, _ = demo
    tables = browser.evaluate(TABLES)
    lines = text.splitlines()

    def block(title):
        start = next(i for i, line in enumerate(lines) if line == title or line.startswith(title + "  "))
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
        return lines[start:end]

    def table(name, role=None):
        return next(t["rows"] for t in tables if t["block"] == name and (role is None or t["role"] == role))

    for role in ("actor", "learner"):
        title = next(line for line in lines if line.startswith(role.upper() + "  ("))
        rows = [line for line in block(title)[2:] if not line.startswith(("  ", "("))]
        assert [[line[:30].strip(), line[30:36].strip(), line[36:49].strip()] for line in rows] == [
            r["cells"][:3] for r in table("role", role)
        ][: len(rows)]
    dominant = [r for r in table("dominant")]
    text_rows = block("DOMINANT PHASES")[1:]
    assert len(dominant) == len(text_rows)
    for line, row in zip(text_rows, dominant, strict=True):
        cells = row["cells"]
        if line.startswith("    + "):
            assert cells[1:4] == [line[30:38].strip(), line[38:52].strip(), line[52:65].strip()]
        else:
            assert [cells[0], cells[2], cells[3], cells[4], cells[6], cells[-1], cells[1]] == [
                line[:30].strip(), line[30:40].strip(), line[40:48].strip(), line[48:58].strip(),
                line[58:68].strip(), line[68:79].strip(), line[79:].strip()]
    io = {r["cells"][0]: r["cells"][1:] for r in table("io")}
    for line in block("I/O")[2:5]:
        assert io[line[:26].strip()] == [line[26:42].strip(), line[42:58].strip()]
    memory = {r["cells"][0]: r["cells"][1] for r in table("memory")}
    for line in block("MEMORY (RSS, sampled)")[3:]:
        if not line.startswith("  "):
            assert memory[" ".join(line[:26].split())] == line[26:42].strip()
    gpu = {r["cells"][0]: r["cells"][1:4] for r in table("gpu")}
    assert {line[:29].strip(): line[29:].split() for line in block("GPU")[3:] if line.startswith("node")} == gpu
    caveats = browser.evaluate("[...document.querySelectorAll('#caveats li')].map(li => li.textContent)")
    assert caveats == [line[4:] for line in block("CAVEATS")[2:]]
    header = browser.evaluate("document.querySelector('[data-key=runtime] dd').textContent")
    assert lines[0].startswith(f"Runtime {header}   ")
    assert browser.errors() == []


def test_with_scripts_off_the_page_still_shows_its_tables_and_charts(demo):
    with chromium.Browser(EXECUTABLE) as b:
        b.call("Emulation.setScriptExecutionDisabled", value=True)
        b.open(demo[0].as_uri())
        state = b.evaluate(
            "({js: document.documentElement.classList.contains('js'), charts: document.querySelectorAll('svg.chart')"
            ".length, tables: document.querySelectorAll('table').length, titles: document.querySelectorAll("
            "'.mark > title').length, toggles: getComputedStyle(document.querySelector('.toggles')).display})"
        )
        assert state["js"] is False and state["charts"] >= len(CHARTS) and state["tables"] >= 8
        assert state["titles"] > 0  # the native tips stand in for the script's
        assert state["toggles"] == "none"
