"""The annotated source page in a real browser: headless Chromium, driven over the DevTools
protocol by the report's helper (``tests/report/chromium.py``).

Checks what a person would see: no console error, nothing fetched, the markup in the source
shown as text (its script never ran), every line of the file on screen, the numbers in the DOM
equal to ``print_stats``'s table, a click on a column head sorting the function table, and a big
project's page holding no more than its bounds with the files left out listed. Skipped only
when no Chromium is installed (CI installs Debian's ``chromium``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from lineprofiler.lines.annotate import Limits, write_annotated


def _load(name: str, path: Path):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


HERE = Path(__file__).resolve().parent
chromium = _load("lp_report_chromium", HERE.parent / "report" / "chromium.py")
pages = _load("lp_annotated_pages", HERE / "test_annotated_html.py")

EXECUTABLE = chromium.find_chromium()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None, reason="no Chromium on this machine (apt-get install chromium; CI installs it)"
)

# Every table's rows as cell texts (as rendered: innerText keeps the source's spaces), with
# the row's data attributes and whether it has a box on screen.
TABLES = """
[...document.querySelectorAll("table[data-block]")].map(t => ({
  block: t.dataset.block,
  rows: [...t.tBodies[0].rows].map(r => ({
    attrs: Object.assign({id: r.id, cls: r.className}, r.dataset),
    cells: [...r.cells].map(c => c.innerText),
    seen: r.getBoundingClientRect().height > 0,
  })),
}))
"""


@pytest.fixture(scope="module")
def browser():
    with chromium.Browser(EXECUTABLE, width=1280, height=900) as b:
        yield b


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotated-browser") / "proj"
    profiler = pages.profile_project(root)
    return profiler, profiler.to_html(root.parent / "page.html")


def tables(browser) -> dict[str, list[dict]]:
    return {t["block"]: t["rows"] for t in browser.evaluate(TABLES)}


def scroll_through_files(browser) -> list[bool]:
    """Bring each file's section on screen once, as a reader scrolling down would, and say
    whether its text was there while on screen; then keep every section laid out for reading.

    Sections are ``content-visibility: auto``: one off screen is not laid out, so its text reads
    as empty until it comes near the viewport. Where the first one starts depends on the fonts
    installed (one CI machine put it below a 900-pixel window), so the test scrolls rather than
    relying on the window's height.
    """
    return browser.evaluate(
        "(async () => { const shown = []; for (const s of document.querySelectorAll('section.file')) {"
        " s.scrollIntoView(); await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));"
        " shown.push(s.innerText.trim() !== ''); s.style.contentVisibility = 'visible'; }"
        " scrollTo(0, 0); return shown; })()"
    )


def test_the_page_shows_the_source_and_the_text_tables_numbers(browser, profiled):
    profiler, page = profiled
    browser.open(page.as_uri())
    assert browser.errors() == []
    assert browser.evaluate("window.pwned") is None  # the <script> in the comment is text
    assert browser.evaluate("performance.getEntriesByType('resource').length") == 0
    assert all(scroll_through_files(browser))
    shown = tables(browser)
    source = [row for row in shown["source"] if row["attrs"]["id"].startswith("L0-")]
    assert all(row["seen"] for row in source)
    assert [row["cells"][-1] for row in source] == [
        line.expandtabs().replace("\x07", "\\x07") for line in pages.MODULE.splitlines()
    ]
    expected = pages.text_tables(profiler.print_stats)
    names = {row["attrs"]["f"]: (row["cells"][0], row["cells"][1]) for row in shown["functions"]}
    for row in shown["functions"]:
        table = expected[(row["cells"][0], row["cells"][1])]
        assert (row["cells"][2], row["cells"][4], row["cells"][5]) == (table["calls"], table["total"], table["self"])
    seen = set()
    for row in shown["source"]:
        if "f" not in row["attrs"]:
            continue
        key, lineno = names[row["attrs"]["f"]], int(row["attrs"]["l"])
        text_row = expected[key]["lines"][lineno]
        assert tuple(row["cells"][1:6]) == text_row[:5]
        if "also" not in row["attrs"]["cls"]:
            assert row["cells"][6] == text_row[5]
        seen.add((key, lineno))
    assert seen == {(key, n) for key, table in expected.items() for n in table["lines"]}


def test_a_click_on_a_column_head_sorts_the_function_table(browser, profiled):
    _, page = profiled
    browser.open(page.as_uri())
    before = [row["cells"][0] for row in tables(browser)["functions"]]
    browser.evaluate(
        "(() => { const th = [...document.querySelectorAll('table[data-block=functions] th')]"
        ".find(h => h.textContent === 'Hits'); th.click(); })()"
    )
    hits = [int(row["cells"][3].replace(",", "")) for row in tables(browser)["functions"]]
    assert hits == sorted(hits, reverse=True)
    after = [row["cells"][0] for row in tables(browser)["functions"]]
    assert sorted(after) == sorted(before) and after != before
    assert browser.errors() == []


def test_a_big_projects_page_holds_its_bounds_and_lists_the_rest(browser, tmp_path):
    stats = pages.big_project(tmp_path, 60, 450)
    limits = Limits()
    page = write_annotated(tmp_path / "big.html", stats, root=tmp_path, limits=limits)
    browser.open(page.as_uri())
    assert browser.errors() == []
    count = "(selector => document.querySelectorAll(selector).length)"
    numbered = browser.evaluate(f"{count}('table[data-block=source] tr[id]')")
    files = browser.evaluate(f"{count}('section.file')")
    assert numbered <= limits.lines and 0 < files <= limits.files
    left = browser.evaluate(
        "[...document.querySelectorAll('table[data-block=left-out] tbody tr')]"
        ".map(r => r.getBoundingClientRect().height > 0 ? r.cells[0].innerText : null)"
    )
    assert files + len(left) == 60 and None not in left
    note = browser.evaluate("document.querySelector('#left-out p').innerText")
    assert f"{len(left)} of 60 files are not shown" in note
    # The function table still has every function, and links only to the files shown.
    assert browser.evaluate(f"{count}('table[data-block=functions] tbody tr')") == 60
    assert browser.evaluate(f"{count}('table[data-block=functions] a')") == files
    # A link into a file far down the page lands on its line.
    browser.evaluate("[...document.querySelectorAll('table[data-block=functions] a')].pop().click()")
    target = browser.evaluate(
        "(() => { const r = document.querySelector(':target'); const b = r.getBoundingClientRect();"
        " return [r.id, b.top >= 0 && b.top < innerHeight]; })()"
    )
    assert target[0].startswith("L") and target[1] is True
