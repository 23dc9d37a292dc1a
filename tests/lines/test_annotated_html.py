"""The annotated source page: ``LineProfiler.to_html``, ``lineprofiler run --html`` (a real
subprocess) and ``lineprofiler view --html`` from a dumped file.

The page's numbers are read back with an HTML parser and compared with the text table
``print_stats`` prints for the same profile; hostile text (markup in a comment, control
characters, markup in file names and qualnames) must come back as text; the source is the file
on disk only when it is the one that ran; a big project's page stays within its bounds and
lists what it left out. The same page in Chromium: ``test_annotated_browser.py``.
"""

from __future__ import annotations

import io
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers.cli import run_cli_process
from lineprofiler import LineProfiler
from lineprofiler.cli import main
from lineprofiler.lines.annotate import Limits, render_annotated
from lineprofiler.lines.render import format_ns
from lineprofiler.lines.stats import FunctionStats, LineStats
from lineprofiler.runfiles import linesfile

#: A module with a comment that is markup, a tab, a control character in a string, a
#: generator expression (a second code object on its caller's line) and a nested function.
MODULE = '''\
"""A module whose text is hostile to an HTML page."""


def work(n):
    # </td></tr><script>window.pwned = 1</script> & "quotes" 'too'
    total = 0\t# a tab before this comment
    for i in range(n):
        total += sum(j * j for j in range(i % 7))
    label = "bell\\x07 <b>bold</b>"
    return total, label


def outer(n):
    def inner(k):
        return k + 1

    return [inner(i) for i in range(n)]


def never_called():
    return "this line never runs"
'''


def write_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hostile.py").write_text(MODULE)
    return root / "hostile.py"


def profile_project(root: Path) -> LineProfiler:
    """A real profile of the project's module (imported from ``root``)."""
    import importlib.util

    path = write_project(root)
    spec = importlib.util.spec_from_file_location("lp_hostile_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["lp_hostile_module"] = module
    spec.loader.exec_module(module)
    profiler = LineProfiler(project_folder=root)
    with profiler:
        module.work(40)
        module.outer(25)
    return profiler


TIME = r"(\S+ \S+|-)"
GAP = r"\s{2}\s*"
ROW = re.compile(rf"^\s*(\d+){GAP}([\d,]+){GAP}{TIME}{GAP}{TIME}{GAP}{TIME}{GAP}(\d+\.\d)  (.*)$")
HEAD = re.compile(r"^Function: (.*) at (.*):(\d+)$")
TOTAL = re.compile(r"^Total time: (.*?)   Self: (.*?)   Calls: ([\d,]+|-)$")


def text_tables(print_stats) -> dict[tuple[str, str], dict]:
    """``print_stats()``'s output as ``(qualname, file:line) -> {total, self, calls, hits, lines:
    {lineno: (hits, time, self, per hit, % func, source)}}`` (``hits``: the lines' summed)."""
    out = io.StringIO()
    print_stats(file=out)
    tables: dict[tuple[str, str], dict] = {}
    current: dict | None = None
    for line in out.getvalue().splitlines():
        if match := HEAD.match(line):
            current = tables[(match.group(1), f"{match.group(2)}:{match.group(3)}")] = {"lines": {}}
        elif (match := TOTAL.match(line)) and current is not None:
            current["total"], current["self"], current["calls"] = match.groups()
        elif (match := ROW.match(line)) and current is not None:
            lineno, *numbers, source = match.groups()
            current["lines"][int(lineno)] = (*numbers, source)
    for table in tables.values():
        table["hits"] = f"{sum(int(row[0].replace(',', '')) for row in table['lines'].values()):,}"
    return tables


class PageRows(HTMLParser):
    """The rows of every ``<table data-block=...>``: ``tables[block]`` is a list of (row
    attributes, cell texts); also the page's text outside tags, and every tag name seen."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[tuple[dict[str, str | None], list[str]]]] = {}
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.block: str | None = None
        self.row: tuple[dict[str, str | None], list[str]] | None = None
        self.cell: list[str] | None = None
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "table":
            self.block = attributes.get("data-block")
            self.tables.setdefault(self.block or "", [])
        elif tag == "tr" and self.block is not None:
            self.row = (attributes, [])
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.row is not None and self.cell is not None:
            self.row[1].append("".join(self.cell))
            self.cell = None
        elif tag == "tr" and self.row is not None and self.block is not None:
            self.tables[self.block].append(self.row)
            self.row = None
        elif tag == "table":
            self.block = None

    def handle_data(self, data):
        self.texts.append(data)
        if self.cell is not None:
            self.cell.append(data)

    def source_rows(self) -> list[tuple[dict[str, str | None], list[str]]]:
        return [row for row in self.tables.get("source", []) if row[0].get("data-f") is not None]


def compare_with_text(page: PageRows, tables: dict[tuple[str, str], dict]) -> set[tuple[str, int]]:
    """Assert every numbered row of the page equals the text table's row of the same function
    and line; returns the (qualname, line) pairs seen."""
    names = {attrs["data-f"]: (cells[0], cells[1]) for attrs, cells in page.tables["functions"] if attrs.get("data-f")}
    for attrs, cells in page.tables["functions"]:
        if attrs.get("data-f"):
            table = tables[(cells[0], cells[1])]
            assert (cells[2], cells[4], cells[5]) == (table["calls"], table["total"], table["self"])
            if len(table["lines"]) == int(cells[6]):  # every line of it is in the text table
                assert cells[3] == table["hits"]
    seen = set()
    for attrs, cells in page.source_rows():
        name, lineno = names[attrs["data-f"]], int(attrs["data-l"] or 0)
        hits, time, own, per_hit, share = cells[1:6]
        expected = tables[name]["lines"][lineno]
        assert (hits, time, own, per_hit, share) == expected[:5], (name, lineno)
        if "also" not in (attrs.get("class") or ""):
            assert cells[6] == expected[5], (name, lineno)
        seen.add((name[0], lineno))
    return seen


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotated") / "proj"
    return root, profile_project(root)


def test_every_line_of_the_profile_with_the_numbers_print_stats_prints(recorded, tmp_path):
    root, profiler = recorded
    written = profiler.to_html(tmp_path / "page.html", title="hostile <project>")
    assert written == tmp_path / "page.html"
    html = written.read_text(encoding="utf-8")
    page = PageRows(html)
    tables = text_tables(profiler.print_stats)
    expected = {"work", "work.<locals>.<genexpr>", "outer", "outer.<locals>.inner"}
    if sys.version_info < (3, 12):
        expected.add("outer.<locals>.<listcomp>")  # a code object of its own before PEP 709
    assert {name for name, _ in tables} == expected
    seen = compare_with_text(page, tables)
    assert seen == {(name, lineno) for (name, _), table in tables.items() for lineno in table["lines"]}
    # The file on disk is the source that ran: every line of it is on the page, run or not.
    source = [cells[-1] for attrs, cells in page.tables["source"] if attrs.get("id", "").startswith("L0-")]
    assert source == [line.expandtabs().replace("\x07", "\\x07") for line in MODULE.splitlines()]
    assert "Source: the file on disk, the same source that ran" in "".join(page.texts)
    assert "<title>hostile &lt;project&gt;</title>" in html


def test_markup_in_the_source_is_text_and_the_page_fetches_nothing(recorded, tmp_path):
    _, profiler = recorded
    html = profiler.to_html(tmp_path / "page.html").read_text(encoding="utf-8")
    page = PageRows(html)
    assert [tag for tag, _ in page.tags if tag == "script"] == ["script"]  # the page's own, at its end
    assert not [tag for tag, _ in page.tags if tag == "b"]
    text = "".join(page.texts)
    assert "# </td></tr><script>window.pwned = 1</script> & \"quotes\" 'too'" in text
    assert 'label = "bell\\x07 <b>bold</b>"' in text
    # Self-contained: nothing to load from anywhere.
    for tag, attrs in page.tags:
        assert not {"src", "href"} & set(attrs) or (attrs.get("href") or "").startswith("#"), (tag, attrs)
    assert "@import" not in html and "url(" not in html


def write_saved(path: Path, functions, files=None, process_extra=None) -> Path:
    process = {
        "pid": 7,
        "parent_pid": 1,
        "host": "n1",
        "argv": ["x.py"],
        "python": "3.12.1",
        "role": None,
        "label": "main",
        "start_unix_ns": 1,
        "status": "exited",
        **(process_extra or {}),
    }
    profile = {"project_folder": str(path.parent), "clock": "tsc", "wall_ns": 5_000_000, "codes_outside": 0}
    doc = linesfile.build_document(process=process, profile=profile, functions=functions, files=files or {})
    path.write_text(json.dumps(doc))
    return path


#: Every tag the page itself writes: a hostile text that became markup would add one.
PAGE_TAGS = set(
    "html head meta title style body main h1 h2 p pre nav a section div table thead tbody tr th td span".split()
)
PAGE_TAGS |= {"footer", "code", "script"}


def test_hostile_names_from_a_saved_file_are_text(tmp_path, capsys):
    name = str(tmp_path / 'evil<img src=x onerror="alert(1)">\x1b]0;pwn\x07.py')
    lines = [(3, 5, 4_000, "x = '<script>alert(2)</script>'\x1b[2J"), (4, 1, 10, None)]
    saved = write_saved(tmp_path / "l.json", [(name, 2, "f<iframe>\u202e", lines)])
    out = tmp_path / "page.html"
    assert main(["view", str(saved), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    page = PageRows(out.read_text(encoding="utf-8"))
    assert {tag for tag, _ in page.tags} <= PAGE_TAGS
    text = "".join(page.texts)
    assert "x = '<script>alert(2)</script>'\\x1b[2J" in text
    assert 'evil<img src=x onerror="alert(1)">\\x1b]0;pwn\\x07.py' in text
    assert "f<iframe>\\u202e" in text
    assert "<source unavailable>" in text  # line 4 has no text: said so, not left blank
    assert "only the recorded lines" in text


def test_source_from_disk_only_when_its_hash_is_the_recorded_one(recorded, tmp_path, capsys):
    root, profiler = recorded
    dumped = profiler.dump(tmp_path / "lines.json")
    same = tmp_path / "same.html"
    assert main(["view", str(dumped), "--html", str(same)]) == 0
    assert "this line never runs" in same.read_text(encoding="utf-8")  # from disk: unrun lines too
    source = root / "hostile.py"
    original = source.read_text()
    try:
        source.write_text(original.replace("this line never runs", "an edit made later"))
        changed = tmp_path / "changed.html"
        assert main(["view", str(dumped), "--html", str(changed)]) == 0
        html = changed.read_text(encoding="utf-8")
    finally:
        source.write_text(original)
    assert "an edit made later" not in html and "this line never runs" not in html
    page = PageRows(html)
    assert "only the recorded lines: the file on disk changed since the run" in "".join(page.texts)
    compare_with_text(page, text_tables(LineProfiler.load(dumped).print_stats))


def test_a_name_alone_never_shows_a_file(tmp_path, capsys):
    """A saved file naming a file of this machine, with no hash and no line text, must not put
    that file's contents on the page."""
    secret = tmp_path / "secret.py"
    secret.write_text("password = 'hunter2'\n")
    saved = write_saved(tmp_path / "l.json", [(str(secret), 1, "f", [(1, 1, 100, None)])])
    out = tmp_path / "page.html"
    assert main(["view", str(saved), "--html", str(out)]) == 0
    assert "hunter2" not in out.read_text(encoding="utf-8")


def test_self_time_and_calls_where_measured_and_a_dash_where_not(tmp_path):
    measured = FunctionStats("/p/a.py", 1, "f", 3_000, {2: LineStats(2, 3, 3_000, "g()", self_ns=500)}, calls=3)
    unmeasured = FunctionStats("/p/a.py", 5, "h", 1_000, {6: LineStats(6, 1, 1_000, "pass")})
    page = PageRows(render_annotated({m.key: m for m in (measured, unmeasured)}))
    functions = {cells[0]: cells for attrs, cells in page.tables["functions"] if attrs.get("data-f")}
    assert functions["f"][2] == "3" and functions["f"][5] == "500 ns"
    assert functions["h"][2] == "-" and functions["h"][5] == "-"
    rows = {attrs["data-l"]: cells for attrs, cells in page.source_rows()}
    assert rows["2"][3] == "500 ns" and rows["6"][3] == "-"


def _shades(page: str) -> dict[str, int]:
    """Line number -> its heat class (0 to 10), from the source rows of a one-file page."""
    found = re.findall(r'<tr id="L\d+-(\d+)" data-f="\d+" data-l="\d+" class="h(\d+)"', page)
    return {line: int(heat) for line, heat in found}


def test_shading_is_by_self_time_unless_asked_for_the_inclusive_time():
    # main()'s call line holds all the time, callees included, but almost none of its own; the
    # hot line is the loop inside work().
    main_ = FunctionStats("/p/a.py", 1, "main", 10_000, {2: LineStats(2, 1, 10_000, "work()", self_ns=100)})
    work = FunctionStats("/p/a.py", 4, "work", 9_900, {5: LineStats(5, 50, 9_900, "x += 1", self_ns=9_900)})
    stats = {f.key: f for f in (main_, work)}
    by_self = render_annotated(stats)
    assert _shades(by_self) == {"2": 1, "5": 10}
    assert "self time" in by_self.split("Shading:", 1)[1].split("</p>", 1)[0]
    by_time = render_annotated(stats, shade="inclusive")
    assert _shades(by_time) == {"2": 10, "5": 10}
    with pytest.raises(ValueError, match="shade"):
        render_annotated(stats, shade="hot")


def test_view_html_shades_by_self_time_or_as_asked(tmp_path, capsys):
    profiler = profile_project(tmp_path / "project")
    saved = tmp_path / "lines.json"
    profiler.dump(str(saved))
    pages = {}
    for shade in ("self", "inclusive"):
        out = tmp_path / f"{shade}.html"
        assert main(["view", str(saved), "--html", str(out), "--shade", shade]) == 0
        pages[shade] = out.read_text(encoding="utf-8")
    assert "the lines where the time goes are darkest" in pages["self"]
    assert "the callers are darkest" in pages["inclusive"]
    api = profiler.to_html(tmp_path / "api.html", shade="inclusive").read_text(encoding="utf-8")
    assert "the callers are darkest" in api


def big_project(folder: Path, n_files: int, n_lines: int) -> dict:
    """``n_files`` files of ``n_lines`` lines on disk, each line recorded in one function."""
    stats = {}
    for i in range(n_files):
        text = [f"    x_{i}_{n} = {n}  # file {i}" for n in range(1, n_lines + 1)]
        path = folder / f"mod_{i:03d}.py"
        path.write_text("\n".join(text) + "\n")
        lines = {n: LineStats(n, 1 + n % 5, 1_000 * (i + 1), text[n - 1]) for n in range(1, n_lines + 1)}
        f = FunctionStats(str(path), 1, f"f{i}", sum(x.time_ns for x in lines.values()), lines)
        stats[f.key] = f
    return stats


def test_a_big_project_stays_within_the_bounds_and_lists_the_rest(tmp_path):
    stats = big_project(tmp_path, 60, 450)  # 27,000 lines: more than a page holds, and not a multiple
    limits = Limits()
    html = render_annotated(stats, root=tmp_path, limits=limits)
    page = PageRows(html)
    shown = {attrs["data-file"] for tag, attrs in page.tags if tag == "section" and attrs.get("data-file")}
    rows = [attrs for attrs, _ in page.tables["source"] if attrs.get("id")]
    assert len(rows) <= limits.lines and 0 < len(shown) <= limits.files
    left = {cells[0]: cells for attrs, cells in page.tables["left-out"] if attrs.get("data-file")}
    assert len(shown) + len(left) == 60
    # Slowest files first: the shown files are the slower ones; each left-out file has its totals.
    by_name = {Path(f.filename).name: f for f in stats.values()}
    assert min(by_name[Path(n).name].time_ns for n in shown) > max(by_name[n].time_ns for n in left)
    for name, cells in left.items():
        f = by_name[name]
        assert cells[1:] == ["1", f"{f.hits:,}", format_ns(f.time_ns)]
    assert f"{len(left)} of 60 files are not shown" in "".join(page.texts)
    assert len(html.encode()) < 8 * 1024 * 1024


def test_a_long_file_shows_its_functions_and_a_long_line_is_cut(tmp_path):
    path = tmp_path / "long.py"
    text = ["pass"] * 5_000
    text[4_000] = "y = '" + "z" * 2_000 + "'"
    path.write_text("\n".join(text) + "\n")
    lines = {n: LineStats(n, 1, 100, text[n - 1]) for n in (4_000, 4_001, 4_002)}
    f = FunctionStats(str(path), 3_999, "late", 300, lines)
    page = PageRows(render_annotated({f.key: f}))
    numbers = [int(attrs["id"].split("-")[1]) for attrs, _ in page.tables["source"] if attrs.get("id")]
    assert numbers == list(range(3_997, 4_005))  # the function, two lines either side
    text_shown = "".join(page.texts)
    assert "lines 1\u20133996 not shown" in text_shown and "lines 4005\u20135000 not shown" in text_shown
    assert "1,606 more characters" in text_shown  # 2,006 characters, 400 kept


def test_an_unwritable_path_is_an_oserror_for_the_api_and_one_line_for_view(recorded, tmp_path, capsys):
    _, profiler = recorded
    assert profiler.to_html(tmp_path / "made" / "for" / "it.html").is_file()  # folders made, as 0.10.0 did
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OSError):
        profiler.to_html(tmp_path / "a-file" / "page.html")
    with pytest.raises(IsADirectoryError):
        profiler.to_html(tmp_path)
    dumped = profiler.dump(tmp_path / "lines.json")
    capsys.readouterr()
    assert main(["view", str(dumped), "--html", str(tmp_path / "missing" / "page.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err and "Traceback" not in err
    assert main(["view", str(dumped), "--html", str(tmp_path / "p.html"), "--by-role"]) == 2
    assert "--by-role" in capsys.readouterr().err


SCRIPT = """\
import sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import helper

helper.work(300)
open(sys.argv[1], "w").write("ran")
"""

HELPER = """\
def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
"""


def test_run_html_writes_the_page_of_the_run(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(SCRIPT)
    (tmp_path / "app" / "helper.py").write_text(HELPER)
    proc = run_cli_process("run", "--project", tmp_path, "--html", "page.html", "app/main.py", "marker", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"annotated source written to {tmp_path / 'page.html'}" in proc.stderr
    page = PageRows((tmp_path / "page.html").read_text(encoding="utf-8"))
    tables = text_tables(lambda file: file.write(proc.stdout))
    assert ("work", "app/helper.py:1") in tables
    seen = compare_with_text(page, tables)
    assert {("work", n) for n in (2, 3, 4, 5)} <= seen
    assert "    for i in range(n):" in "".join(page.texts)


def test_run_html_into_a_missing_folder_runs_nothing(tmp_path):
    (tmp_path / "main.py").write_text(SCRIPT.replace("import helper\n\nhelper.work(300)\n", ""))
    proc = run_cli_process("run", "--html", tmp_path / "no" / "page.html", "main.py", "marker", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr
    assert not (tmp_path / "marker").exists()
