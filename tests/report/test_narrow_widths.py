"""The three HTML pages at a laptop's half screen (800 px) and a wide one (1400 px), in
headless Chromium: the accounting report, the trace page's lanes and the annotated source.

Nothing may be cut off: every cell and label lies inside the window or inside a box that
scrolls sideways (a wide table scrolls, it is never clipped), no text overflows a box that hides
its overflow (bar an ellipsis, which says so), and no SVG label runs past its chart's edge.
Skipped only when no Chromium is installed (CI installs Debian's ``chromium``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from lineprofiler.cli import main

from . import chromium, html_runs
from .test_story_path import slow_actor_run

EXECUTABLE = chromium.find_chromium()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None, reason="no Chromium on this machine (apt-get install chromium; CI installs it)"
)
WIDTHS = (800, 1400)

# What is cut off, as [what, text, how]: an element past the window's right edge outside any
# sideways-scrolling box, text cut by overflow:hidden without an ellipsis, an SVG label past
# its chart.
CLIPPED = """
(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  const scrolls = e => {
    for (let p = e.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") return true;
    }
    return false;
  };
  const text = e => (e.textContent || "").trim().slice(0, 40);
  for (const e of document.querySelectorAll("th, td, p, h1, h2, li, svg, svg text")) {
    const box = e.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right > width + 1 && !scrolls(e)) out.push([e.tagName, text(e), "past the window"]);
    const style = getComputedStyle(e);
    if (e.scrollWidth > e.clientWidth + 1 && style.overflowX === "hidden" && style.textOverflow !== "ellipsis")
      out.push([e.tagName, text(e), "hidden overflow"]);
    if (e.tagName === "text") {
      const chart = e.ownerSVGElement.getBoundingClientRect();
      if (box.left < chart.left - 1 || box.right > chart.right + 1) out.push([e.tagName, text(e), "past its chart"]);
    }
  }
  return out;
})()
"""


def _annotated_page(folder: Path) -> Path:
    name = "lp_annotated_pages"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "lines" / "test_annotated_html.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    profiler = sys.modules[name].profile_project(folder / "proj")
    return profiler.to_html(folder / "annotated.html")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("narrow")
    report, trace = root / "report.html", root / "trace.html"
    assert main(["report", str(html_runs.write_run(root / "profile")), "--html", str(report)]) == 0
    slow_actor_run(root / "run")
    assert main(["trace", str(root / "run"), "--html", str(trace), "-q"]) == 0
    return {"report": report, "trace": trace, "annotated": _annotated_page(root)}


@pytest.fixture(scope="module")
def browser():
    with chromium.Browser(EXECUTABLE, width=WIDTHS[0], height=900) as b:
        yield b


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", ["report", "trace", "annotated"])
def test_nothing_is_cut_off(browser, pages, page, width):
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
    browser.open(pages[page].as_uri())
    assert browser.evaluate("window.innerWidth") == width
    clipped = browser.evaluate(CLIPPED)
    assert clipped == [], clipped
    assert browser.errors() == []
