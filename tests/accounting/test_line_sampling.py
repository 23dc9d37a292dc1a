"""``Profiler(line_sampling=...)``: exact lines in short windows spread over the run, by phase.

One program (run once, shared by the tests) samples at 0.2: its main thread runs a phase whose
line time is known (a 3 ms sleep and a 1 ms sleep, each timed by the program itself), a second
thread runs another phase at the same time, and it looks at what is hooked at every iteration
(a tool id of ``sys.monitoring`` on 3.12+, a trace function on 3.11). Then a LineProfiler of its
own records for a while, a ``backend="lines"`` window for one entry, a forked child samples on
its own, and after ``close()`` nothing may be hooked. The tests read its worker files and
``report --lines`` as a user would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from typing import Any

import pytest

from helpers.cli import run_cli
from helpers.env import clean_env

PROGRAM = textwrap.dedent(
    """
    import json, os, sys, threading, time

    from lineprofiler import LineProfiler
    from lineprofiler.accounting import Profiler


    def hooked():
        if hasattr(sys, "monitoring"):
            return any(sys.monitoring.get_tool(t) == "lineprofiler" for t in range(6))
        return sys.gettrace() is not None


    def learner(prof, stop):
        while not stop.is_set():
            with prof.phase("learn"):
                time.sleep(0.002)  # LEARN


    def main(run_dir, folder):
        prof = Profiler(run_dir, role="actor", line_sampling=0.2, snapshot_interval_s=None,
                        backend="lines", backend_window=(1, 2), window_phase="win", lines_project=folder)
        stop = threading.Event()
        other = threading.Thread(target=learner, args=(prof, stop))
        other.start()
        hot = cold = 0.0
        polls = on = 0
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            with prof.phase("act"):
                t0 = time.perf_counter()
                time.sleep(0.003)  # HOT
                t1 = time.perf_counter()
                time.sleep(0.001)  # COLD
                t2 = time.perf_counter()
            hot += t1 - t0
            cold += t2 - t1
            polls += 1
            on += hooked()
        stop.set()
        other.join()
        own = LineProfiler(folder)
        with own:
            with prof.phase("own"):
                mine = time.monotonic() + 0.3
                while time.monotonic() < mine:
                    time.sleep(0.001)  # OWN
        own_hits = sum(line.hits for fn in own.get_stats().values() for line in fn.lines.values())
        win_n = 0
        with prof.phase("win"):  # the backend="lines" window: open for this first entry only
            mine = time.monotonic() + 0.3
            while time.monotonic() < mine:
                time.sleep(0.001)  # WIN
                win_n += 1
        with prof.phase("win"):
            pass
        pid = os.fork()
        if pid == 0:
            with prof.phase("kid"):
                mine = time.monotonic() + 0.6
                while time.monotonic() < mine:
                    time.sleep(0.002)  # KID
            prof.close()
            os._exit(0)
        os.waitpid(pid, 0)
        prof.close()
        after = hooked() or threading.gettrace() is not None
        if hasattr(sys, "monitoring"):
            after = after or any(sys.monitoring.get_events(t) for t in range(6))
        print(json.dumps({"hot": hot, "cold": cold, "polls": polls, "on": on, "own_hits": own_hits, "win_n": win_n,
                          "hooked_after_close": after, "child": pid}))


    main(sys.argv[1], sys.argv[2])
    """
)


def _line_of(marker: str) -> int:
    return next(n for n, text in enumerate(PROGRAM.splitlines(), 1) if text.rstrip().endswith(f"# {marker}"))


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("proj")
    (folder / "actor.py").write_text(PROGRAM)
    run_dir = folder / "run"
    argv = [sys.executable, str(folder / "actor.py"), str(run_dir), str(folder)]
    done = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), cwd=folder, timeout=120)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    sections = {}
    for path in (run_dir / "workers").rglob("w_*.json"):
        document = json.loads(path.read_text())
        sections[document["identity"]["pid"]] = document["line_sampling"]
    return {"run_dir": run_dir, "said": said, "sections": sections, "file": str(folder / "actor.py")}


def _parent(sampled: dict[str, Any]) -> dict[str, Any]:
    (pid,) = [pid for pid in sampled["sections"] if pid != sampled["said"]["child"]]
    return sampled["sections"][pid]


def _lines(section: dict[str, Any], path: str) -> dict[int, list[Any]]:
    (phase,) = [p for p in section["phases"] if p["path"] == path]
    return {row[2]: row for row in phase["lines"]}


def test_windows_open_and_close_and_nothing_stays_hooked(sampled):
    section, said = _parent(sampled), sampled["said"]
    assert section["version"] == 1 and section["error"] is None
    coverage = section["sampled_ns"] / section["wall_ns"]
    assert section["windows"] >= 10
    assert 0.05 < coverage < 0.5, coverage
    # Hooked at about the windows' share of the program's iterations, never all along.
    assert 0 < said["on"] < said["polls"] * 0.6, said
    assert said["hooked_after_close"] is False
    # The loop's own line ran polls times; only the iterations inside windows were counted.
    hot = _lines(section, "act")[_line_of("HOT")]
    assert 0 < hot[3] < said["polls"] * 0.6


def test_each_thread_is_billed_to_its_own_phase(sampled):
    section = _parent(sampled)
    act, learn = _lines(section, "act"), _lines(section, "learn")
    assert _line_of("HOT") in act and _line_of("LEARN") not in act
    assert _line_of("LEARN") in learn and _line_of("HOT") not in learn


def test_the_programs_own_line_profiler_and_a_lines_window_win(sampled):
    section, said = _parent(sampled), sampled["said"]
    assert said["own_hits"] > 0
    assert section["skipped"] >= 2
    assert all(p["path"] != "own" for p in section["phases"])
    assert all(_line_of("WIN") not in _lines(section, p["path"]) for p in section["phases"] if p["path"] == "win")
    (lines_file,) = (sampled["run_dir"] / "lines").rglob("l_*.json")
    recorded = {row[0]: row[1] for fn in json.loads(lines_file.read_text())["functions"] for row in fn["lines"]}
    assert recorded[_line_of("WIN")] == said["win_n"]  # every iteration of the window's entry, none missed


def test_a_fork_child_samples_its_own_lines(sampled):
    child = sampled["sections"][sampled["said"]["child"]]
    assert child["windows"] >= 2 and child["error"] is None
    assert _line_of("KID") in _lines(child, "kid")
    assert all(p["path"] not in ("act", "learn") for p in child["phases"])


def test_report_estimates_the_planted_lines_share_within_its_error(sampled, tmp_path):
    result = run_cli("report", sampled["run_dir"], "--lines", "--json")
    assert result.returncode == 0, result.stderr
    (role,) = json.loads(result.stdout)["lines"]["sampled"]["roles"]
    assert role["role"] == "actor" and role["processes"] == 2
    (act,) = [p for p in role["phases"] if p["path"] == "act"]
    rows = {row["line"]: row for row in act["rows"]}
    said = sampled["said"]
    truth = said["hot"] / (said["hot"] + said["cold"])
    hot = rows[_line_of("HOT")]
    assert hot["error"] < 0.3
    assert abs(hot["share"] - truth) <= hot["error"], (hot, truth)
    text = run_cli("report", sampled["run_dir"], "--lines")
    assert "SAMPLED LINES" in text.out
    assert f"sampled: {role['windows']} windows covering" in text.out
    assert "phase act" in text.out and "phase learn" in text.out and "phase kid" in text.out
    page = tmp_path / "report.html"
    assert run_cli("report", sampled["run_dir"], "--lines", "--html", page).returncode == 0
    assert 'data-phase="act"' in page.read_text()


def test_a_section_of_a_newer_schema_costs_that_process_only(sampled, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(sampled["run_dir"], run_dir)
    child = sampled["said"]["child"]
    for path in (run_dir / "workers").rglob("w_*.json"):
        document = json.loads(path.read_text())
        if document["identity"]["pid"] == child:
            document["line_sampling"]["version"] = 99
            path.write_text(json.dumps(document))
    result = run_cli("report", run_dir, "--lines")
    assert result.returncode == 0, result.err
    assert "sampled lines not shown" in result.out and "version 99" in result.out
    assert "ACTOR  (1 process sampled" in result.out and "phase act" in result.out


def test_a_wrong_fraction_raises_and_a_wrong_variable_only_warns(monkeypatch):
    from lineprofiler.accounting._options import check_line_sampling

    with pytest.raises(ValueError, match=r"within 0 \(off\)\.\.0\.5"):
        check_line_sampling(0.7)
    with pytest.raises(TypeError):
        check_line_sampling("0.1")
    assert check_line_sampling(0) is None
    monkeypatch.setenv("LINEPROFILER_LINE_SAMPLING", "0.03")
    assert check_line_sampling(None) == 0.03
    monkeypatch.setenv("LINEPROFILER_LINE_SAMPLING", "lots")
    with pytest.warns(RuntimeWarning, match="LINEPROFILER_LINE_SAMPLING='lots'"):
        assert check_line_sampling(None) is None


def _damaged(section: Any) -> Any:
    """Each value of ``section`` in turn replaced by values of the wrong kind, one at a time."""
    wrong = (None, -1, "x", [], {}, 1.5, True, 2**70)
    if isinstance(section, dict):
        for key, value in section.items():
            for bad in wrong:
                yield {**section, key: bad}
            for inner in _damaged(value):
                yield {**section, key: inner}
    elif isinstance(section, list) and section:
        for bad in wrong:
            yield [bad, *section[1:]]
        for inner in _damaged(section[0]):
            yield [inner, *section[1:]]


def test_a_damaged_section_is_refused_in_one_line_or_read(sampled):
    from lineprofiler.runfiles.linesampling import LineSamplingError, parse_section

    section = _parent(sampled)
    section = {**section, "phases": section["phases"][:1]}
    section["phases"][0] = {**section["phases"][0], "lines": section["phases"][0]["lines"][:1]}
    tried = refused = 0
    for damaged in _damaged(section):
        tried += 1
        try:
            parse_section(damaged)
        except LineSamplingError as error:
            refused += 1
            assert "\n" not in str(error)
    assert tried > 100 and 0 < refused < tried


COVERED_PROGRAM = textwrap.dedent(
    """
    import json, sys, time
    import coverage
    from lineprofiler.accounting import Profiler

    sys.path.insert(0, sys.argv[2])
    cov = coverage.Coverage(data_file=None, config_file=False, include=[sys.argv[2] + "/*"])
    if sys.version_info >= (3, 12):
        cov.set_option("run:core", "sysmon")
    cov.start()
    import covered  # the program's module: coverage must see every line of it, all run long
    prof = Profiler(sys.argv[1], role="tested", line_sampling=0.3, snapshot_interval_s=None,
                    lines_project=sys.argv[2])
    for name in ("with_coverage", "after_coverage"):
        end = time.monotonic() + 0.8
        while time.monotonic() < end:
            with prof.phase(name):
                covered.work(200)
        if name == "with_coverage":
            holder = sys.monitoring.get_tool(1) if sys.version_info >= (3, 12) else None
            cov.stop()
            lines = sorted(cov.get_data().lines(covered.__file__) or [])
    prof.close()
    print(json.dumps({"covered": lines, "holder": holder}))
    """
)

COVERED_MODULE = textwrap.dedent(
    """\
    def work(n):
        total = 0
        for i in range(n):
            if i % 2:
                total += i
            else:
                total -= 1
        return total
    """
)


def test_coverage_keeps_every_line_while_lines_are_sampled(tmp_path):
    """coverage.py over the whole run: on 3.12+ each tool has its own sys.monitoring id and both
    see every line; on 3.11 a window would take coverage's trace function away for 10 ms, so no
    window opens while coverage traces, and windows open again once it stops."""
    pytest.importorskip("coverage")
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "covered.py").write_text(COVERED_MODULE)
    script = tmp_path / "covered_run.py"
    script.write_text(COVERED_PROGRAM)
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, str(script), str(run_dir), str(folder)], env=clean_env(),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["covered"] == [1, 2, 3, 4, 5, 7, 8]  # coverage missed nothing
    (document,) = [json.loads(p.read_text()) for p in run_dir.glob("workers/*/w_*.json")]
    section = document["line_sampling"]
    windows = {p["path"]: p["windows"] for p in section["phases"]}
    assert windows.get("after_coverage", 0) > 0
    if sys.version_info >= (3, 12):
        assert said["holder"] == "coverage.py" and windows.get("with_coverage", 0) > 0
    else:
        assert "with_coverage" not in windows and section["skipped"] > 0


class _Views(HTMLParser):
    """The annotated page's views (``report --lines-html``): per (role, phase), each source row
    that carries numbers, by line number, as its cells' texts."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.views: dict[tuple[str, str], dict[int, list[str]]] = {}
        self.reasons: list[str] = []
        self._view: dict[int, list[str]] = {}
        self._row: list[str] | None = None
        self._in_source = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        seen = dict(attrs)
        if tag == "section" and seen.get("class") == "view":
            self._view = self.views.setdefault((str(seen["data-role"]), str(seen["data-phase"])), {})
        elif tag == "table":
            self._in_source = seen.get("data-block") == "source"
        elif tag == "tr" and self._in_source and seen.get("data-l") and "also" not in str(seen.get("class")):
            self._row = []
            self._view[int(str(seen["data-l"]))] = self._row
        elif tag == "td" and self._row is not None:
            self._row.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row:
            self._row[-1] += data


def test_the_annotated_page_shows_each_phase_of_the_role_apart(sampled, tmp_path):
    from lineprofiler.lines.render import format_ns

    page = tmp_path / "lines.html"
    result = run_cli("report", sampled["run_dir"], "--lines-html", page)
    assert result.code == 0, result.err
    assert result.out.strip() == str(page)
    views = _Views(page.read_text()).views
    assert {phase for role, phase in views if role == "actor"} >= {"act", "learn", "kid"}
    (role,) = json.loads(run_cli("report", sampled["run_dir"], "--lines", "--json").out)["lines"]["sampled"]["roles"]
    (act,) = [p for p in role["phases"] if p["path"] == "act"]
    expected = {row["line"]: row for row in act["rows"]}[_line_of("HOT")]
    # Line, Hits, Time, Self, Per hit, % func, Share of phase ± 95 %, Source: the report's numbers.
    hot = views[("actor", "act")][_line_of("HOT")]
    assert hot[1:4] == [f"{expected['hits']:,}", format_ns(expected["time_ns"]), format_ns(expected["self_ns"])]
    assert hot[6] == f"{expected['share'] * 100:.1f}% \u00b1 {expected['error'] * 100:.1f}%"
    assert hot[7].strip() == "time.sleep(0.003)  # HOT"  # the file on disk, shown whole
    # Choosing a phase shows its lines only: the other thread's and the child's are elsewhere.
    assert _line_of("LEARN") not in views[("actor", "act")] and _line_of("KID") not in views[("actor", "act")]
    assert _line_of("LEARN") in views[("actor", "learn")] and _line_of("HOT") not in views[("actor", "learn")]
    assert _line_of("KID") in views[("actor", "kid")]


def test_the_annotated_page_says_a_changed_source_and_refuses_a_run_with_no_sampled_line(sampled, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(sampled["run_dir"], run_dir)
    moved = tmp_path / "moved" / "actor.py"
    workers = list((run_dir / "workers").rglob("w_*.json"))
    for path in workers:  # the sections name a copy of the program, which then changes
        document = json.loads(path.read_text())
        for phase in document["line_sampling"]["phases"]:
            for row in phase["lines"]:
                row[0] = str(moved)
        path.write_text(json.dumps(document))
    moved.parent.mkdir()
    moved.write_text("# a line added since the run\n" + PROGRAM)
    page = tmp_path / "changed.html"
    assert run_cli("report", run_dir, "--lines-html", page).code == 0
    text = page.read_text()
    assert "the file on disk changed since the run" in text
    assert _Views(text).views[("actor", "act")][_line_of("HOT")][7].strip() == "time.sleep(0.003)  # HOT"
    moved.unlink()
    assert run_cli("report", run_dir, "--lines-html", page).code == 0
    assert "the file on disk is missing" in page.read_text()

    refused = run_cli("report", run_dir, "--lines-html", page, "-o", tmp_path / "report.html")
    assert refused.code == 2 and refused.err.count("\n") == 1 and "drop -o" in refused.err
    for path in workers:
        document = json.loads(path.read_text())
        del document["line_sampling"]
        path.write_text(json.dumps(document))
    page.unlink()
    result = run_cli("report", run_dir, "--lines-html", page)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert "no process of this run sampled lines" in result.err and "Traceback" not in result.err
    assert not page.exists()


def _chromium() -> Any:
    import importlib.util
    from pathlib import Path

    name = "lp_report_chromium"  # the name tests/lines/test_annotated_browser.py loads it under
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent.parent / "report" / "chromium.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


SHOWN = "[...document.querySelectorAll('section.view')].filter(v => v.offsetHeight > 0).map(v => v.dataset.phase)"


def test_the_annotated_page_shows_the_phase_chosen_in_a_browser(sampled, tmp_path):
    chromium = _chromium()
    executable = chromium.find_chromium()
    if executable is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; CI installs it)")
    page = tmp_path / "lines.html"
    assert run_cli("report", sampled["run_dir"], "--lines-html", page).code == 0
    with chromium.Browser(executable) as browser:
        browser.open(page.as_uri())
        first = browser.evaluate(SHOWN)
        assert len(first) == 1 and first[0] in ("act", "learn")
        other = "learn" if first == ["act"] else "act"
        browser.evaluate(
            "var s = document.getElementById('pick-phase');"
            f"s.value = document.querySelector('section.view[data-phase={other}]').id;"
            "s.dispatchEvent(new Event('change'))"
        )
        assert browser.evaluate(SHOWN) == [other]
        marker = "HOT" if other == "act" else "LEARN"
        assert browser.evaluate(f"document.querySelector('section.view.on tr[data-l=\"{_line_of(marker)}\"]') !== null")
        assert browser.evaluate("location.hash") == browser.evaluate("'#' + document.querySelector('.view.on').id")
        assert browser.errors() == []
