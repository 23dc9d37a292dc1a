"""0.10.0 code that runs on 0.11.0 means what it meant, or fails (or warns) saying what changed.

Each test runs one 0.10.0 idiom against the real profilers or the real command line, and checks
the row of docs/migrating-from-0.10.md that describes it, so the guide and the behaviour agree.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from helpers.cli import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "migrating-from-0.10.md"


def row(first_cell: str) -> tuple[str, str]:
    """(status, note) of the guide's row whose first cell starts with ``first_cell``."""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if line.startswith("|") and cells[0].startswith(first_cell):
            return cells[2], cells[3]
    raise AssertionError(f"no row {first_cell!r} in {DOC.name}")


def work(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


class Shape:
    def area(self) -> int:
        return 6


# ------------------------------------------------------------------ get_stats() keys


def test_get_stats_keys_unpack_in_0_10_0s_order(tmp_path):
    from lineprofiler import LineProfiler
    from lineprofiler.lines.saved import SavedProfile

    profiler = LineProfiler(project_folder=Path(__file__).parent)
    with profiler:
        with profiler.region("shapes"):
            work(10)
            Shape().area()
    live = profiler.get_stats()
    # 0.10.0's README idiom: (filename, function_name, first_line).
    names = {name: first for (_, name, first), _stats in live.items()}
    assert names["work"] == work.__code__.co_firstlineno
    assert names["Shape.area"] == Shape.area.__code__.co_firstlineno
    for key, stats in live.items():
        assert key == (stats.filename, stats.qualname, stats.first_lineno) == stats.key
        assert (key.filename, key.qualname, key.first_lineno) == tuple(key)
    region_names = {name for (_, name, _), _stats in profiler.region_stats()["shapes"].items()}
    assert {"work", "Shape.area"} <= region_names
    saved = SavedProfile.load(profiler.dump(tmp_path / "lines.json"))
    assert {name for (_, name, _), _stats in saved.get_stats().items()} >= {"work", "Shape.area"}
    status, note = row("`.get_stats()`")
    assert status == "different" and "the key's order is 0.10.0's" in note


# ------------------------------------------------------------------ Profiler's positional arguments


@pytest.mark.parametrize("extra", [(None, False), ("run-1",), (None,)])
def test_profiler_refuses_0_10_0s_third_and_fourth_positional_arguments(tmp_path, extra):
    from lineprofiler.accounting import Profiler

    run_dir = tmp_path / "run"
    with pytest.raises(TypeError, match="by keyword") as raised:
        Profiler(run_dir, "actor", *extra)
    assert "run_id" in str(raised.value) and "enabled" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not run_dir.exists()  # refused before anything was written
    assert "LINEPROFILER_PROFILE" not in os.environ
    with Profiler(run_dir, "actor", run_id="run-1", enabled=False) as profiler:
        assert not profiler.enabled and profiler.role == "actor"
    assert row("`enabled=` (fourth positional)")[0] == "different"
    assert "passed by position it raises a `TypeError`" in row("`run_id=` (third positional)")[1]


# ------------------------------------------------------------------ the command line's formats

TRACED = """
    import sys
    from lineprofiler.accounting import Profiler

    with Profiler(sys.argv[1], "learner", trace=True, snapshot_interval_s=None, sample_interval_s=None) as p:
        for _ in range(20):
            with p.phase("iteration"):
                with p.phase("step"):
                    sum(range(1000))
"""


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("traced")
    run_dir = folder / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRACED), str(run_dir)], check=True, timeout=120, env=env, cwd=folder
    )
    return run_dir


def is_page(text: str) -> bool:
    return text.lstrip().startswith("<!DOCTYPE html>")


def test_trace_o_page_html_writes_the_page_as_0_10_0_did(traced_run, tmp_path):
    page = tmp_path / "page.html"
    done = run_cli("trace", traced_run, "-o", page, "-q")
    assert done.code == 0, done.err
    assert done.out.strip() == str(page) and is_page(page.read_text(encoding="utf-8"))
    limited = tmp_path / "limited.html"
    done = run_cli("trace", traced_run, "--max-spans", 5, "-o", limited, "-q")
    assert done.code == 0, done.err
    text = limited.read_text(encoding="utf-8")
    assert is_page(text) and "Drawn: 5 span(s)" in text and "35 left out" in text
    story = tmp_path / "story.json"
    assert run_cli("trace", traced_run, "-o", story, "-q").code == 0
    assert json.loads(story.read_text(encoding="utf-8"))["kind"] == "lineprofiler-story"
    named = tmp_path / "story.txt"  # no format in the name: the text story, as without -o
    assert run_cli("trace", traced_run, "-o", named, "-q").code == 0
    assert not is_page(named.read_text(encoding="utf-8"))
    forced = tmp_path / "forced.html"  # a format asked for wins over the name
    assert run_cli("trace", traced_run, "--format", "text", "-o", forced, "-q").code == 0
    assert not is_page(forced.read_text(encoding="utf-8"))
    assert row("`trace --format html")[0] == "different"


def test_trace_max_spans_with_the_text_story_is_refused_naming_html(traced_run):
    done = run_cli("trace", traced_run, "--max-spans", 5, "-q")
    assert done.code == 2 and done.out == ""
    assert "--html" in done.err and len(done.err.strip().splitlines()) == 1
    assert run_cli("trace", traced_run, "--max-spans", 5, "--json", "-q").code == 0  # ignored, as in 0.10.0
    status, note = row("`trace --max-spans N`")
    assert status == "different" and "refused" in note


def test_report_format_html_prints_the_page_as_0_10_0_did(traced_run, tmp_path):
    printed = run_cli("report", traced_run, "--format", "html", "-q")
    assert printed.code == 0, printed.err
    assert is_page(printed.out)
    assert not (traced_run / "report.html").exists()  # printed, not written
    page = tmp_path / "report.html"
    done = run_cli("report", traced_run, "-o", page, "-q")
    assert done.code == 0 and done.out.strip() == str(page)
    assert page.read_text(encoding="utf-8").rstrip() == printed.out.rstrip()  # the same page, printed or written
    status, note = row("`report --format text")
    assert status == "different" and "prints the page" in note


# ------------------------------------------------------------------ environment, windows, regions


@pytest.fixture
def fresh_warnings(monkeypatch):
    """The once-per-process warnings of these modules, as in a new process."""
    from lineprofiler import _env_switch
    from lineprofiler.accounting import _options
    from lineprofiler.lines import regions

    monkeypatch.setattr(_env_switch, "_warned", set())
    monkeypatch.setattr(_options, "_warned", set())
    monkeypatch.setattr(regions, "_nested_warned", False)


@pytest.mark.parametrize("value", ["no", "off", "OFF", "FALSE", " 0"])
def test_lineprofiler_enabled_no_warns_that_it_now_turns_profiling_off(monkeypatch, fresh_warnings, value):
    from lineprofiler import start_profiling, stop_profiling

    monkeypatch.setenv("LINEPROFILER_ENABLED", value)
    with pytest.warns(RuntimeWarning, match="0.10.0 read it as on") as caught:
        profiler = start_profiling(Path(__file__).parent)
    assert stop_profiling(print_stats=False) is None  # nothing was started
    assert profiler.get_stats() == {}
    assert sum("LINEPROFILER_ENABLED" in str(w.message) for w in caught) == 1
    for quiet in ("0", "false", "False"):  # off in both versions: no warning
        monkeypatch.setenv("LINEPROFILER_ENABLED", quiet)
        monkeypatch.setattr("lineprofiler._env_switch._warned", set())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            start_profiling(Path(__file__).parent)
        assert stop_profiling(print_stats=False) is None
    assert row("`LINEPROFILER_ENABLED` (turns")[0] == "different"


def test_lineprofiler_profile_off_warns_and_records_nothing(monkeypatch, fresh_warnings, tmp_path):
    from lineprofiler.accounting import Profiler

    monkeypatch.setenv("LINEPROFILER_PROFILE", "off")
    with pytest.warns(RuntimeWarning, match="LINEPROFILER_PROFILE='off' turns profiling off"):
        profiler = Profiler(tmp_path / "run")
    assert not profiler.enabled and not (tmp_path / "run").exists()
    assert "warns once" in row("`LINEPROFILER_PROFILE`")[1]


def test_backend_window_warns_that_its_stop_is_not_profiled(fresh_warnings, tmp_path):
    from lineprofiler.accounting import Profiler

    project = tmp_path / "project"
    project.mkdir()
    with pytest.warns(RuntimeWarning, match=r"entries 2 to 3: the stop entry is not profiled.*\(2, 5\)"):
        profiler = Profiler(
            tmp_path / "run", backend="lines", backend_window=(2, 4), window_phase="iteration",
            lines_project=project, snapshot_interval_s=None, sample_interval_s=None,
        )
    profiler.close()
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        Profiler(tmp_path / "run", backend="lines", backend_window=(3, 3), window_phase="iteration")
    assert "warns once" in row("`backend_window=(start, end)`")[1]


def test_a_nested_region_warns_once_that_the_outer_table_leaves_it_out(fresh_warnings):
    from lineprofiler import LineProfiler

    profiler = LineProfiler(project_folder=Path(__file__).parent)
    with pytest.warns(RuntimeWarning, match="'inner' opened inside region 'outer'") as caught:
        with profiler:
            for _ in range(3):
                with profiler.region("outer"):
                    work(5)
                    with profiler.region("inner"):
                        work(50)
    assert len([w for w in caught if "inside region" in str(w.message)]) == 1
    regions = profiler.region_stats()
    outer = {name for (_, name, _), _stats in regions["outer"].items()}
    inner = regions["inner"]
    assert "work" in outer and any(name == "work" for (_, name, _) in inner)
    assert profiler.region_entries() == {"outer": 3, "inner": 3}
    with warnings.catch_warnings():  # the same region entered again inside itself is no nesting
        warnings.simplefilter("error")
        other = LineProfiler(project_folder=Path(__file__).parent)
        with other, other.region("a"), other.region("a"):
            work(1)
    assert "warns once" in row("`.region(name)`")[1]
    assert row("`.region_entries()`")[0] == "same"


def test_line_profiler_takes_config_second_as_0_10_0_did(tmp_path):
    from lineprofiler import LineProfiler
    from lineprofiler.config import ProfilerConfig

    config = ProfilerConfig(enabled=True, functions=("work",))
    profiler = LineProfiler(Path(__file__).parent, config)
    with profiler:
        work(3)
        Shape().area()
    assert {name for (_, name, _) in profiler.get_stats()} == {"work"}
    with pytest.raises(TypeError, match="ProfilerConfig"):
        LineProfiler(Path(__file__).parent, "work")
    status, note = row("`config=` (second positional")
    assert status == "works" and "the same place" in note
