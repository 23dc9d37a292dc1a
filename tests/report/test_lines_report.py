"""``lineprofiler report --lines``: the line stats of ``backend="lines"`` windows, per role.

The runs are real: a learner and spawn actors, each actor's ``Profiler(backend="lines")``
line-profiling a window of its ``iteration`` phase; the report then runs as the user runs it.
A function called once per iteration has, summed over the role, its in-process hits per call
times the window's entries times the actors.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

ACTORS = 3
WINDOW = (2, 5)

SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing, os, signal, sys, time

    from lineprofiler.accounting import Profiler


    def work(n=7):
        total = 0
        for i in range(n):
            if i % 2:
                total += i
        return total


    def actor(i, window, iterations, ready):
        p = Profiler(role="actor", backend="lines", backend_window=window, window_phase="iteration",
                     snapshot_interval_s=None)
        for k in range(iterations):
            with p.phase("iteration"):
                with p.phase("step"):
                    work()
            if k == 3 and ready is not None:
                ready.put(os.getpid())
        p.close()


    def reference():
        from lineprofiler import LineProfiler
        lp = LineProfiler(os.path.dirname(os.path.abspath(__file__)))
        with lp:
            work()
        (stats,) = [s for s in lp.get_stats().values() if s.qualname == "work"]
        return {str(k): v.hits for k, v in stats.lines.items()}


    if __name__ == "__main__":
        run_dir, hang = sys.argv[1], sys.argv[5]
        actors, start, stop = map(int, sys.argv[2:5])
        ref = reference()
        learner = Profiler(run_dir=run_dir, role="learner", snapshot_interval_s=None)
        ctx = multiprocessing.get_context("spawn")
        ready = ctx.Queue()
        procs = [ctx.Process(target=actor, args=(i, (start, stop), 8, None)) for i in range(actors)]
        if hang == "hang":  # one more actor whose window is still open when it is sent SIGTERM
            procs.append(ctx.Process(target=actor, args=(actors, (start, 10**9), 10**9, ready)))
        for proc in procs:
            proc.start()
        if hang == "hang":
            ready.get(timeout=120)
            procs[-1].terminate()
        for proc in procs:
            proc.join()
        learner.close()
        print(json.dumps({"reference": ref, "exitcodes": [p.exitcode for p in procs]}))
    """
)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}


def make_run(folder: Path, run_dir: Path, actors: int = ACTORS, hang: bool = False) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "pipeline.py"
    script.write_text(SCRIPT)
    argv = [sys.executable, str(script), str(run_dir), str(actors), *map(str, WINDOW), "hang" if hang else "-"]
    result = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=folder, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def report(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", "report", str(run_dir), *args],
        capture_output=True, text=True, env=_env(), timeout=120,
    )


def lines_json(run_dir: Path, *args: str) -> dict:
    result = report(run_dir, "--lines", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """One real run: a learner and three spawn actors, each with a lines window (2, 5)."""
    folder = tmp_path_factory.mktemp("lines_pipeline")
    run_dir = folder / "run"
    out = make_run(folder, run_dir)
    return run_dir, out["reference"]


def work_rows(role: dict) -> dict[str, dict]:
    return {str(row["line"]): row for row in role["rows"] if row["function"] == "work"}


def test_the_report_merges_each_roles_windows_line_by_line(pipeline):
    run_dir, reference = pipeline
    document = lines_json(run_dir, "--lines-top", "50")
    block = document["lines"]
    (actor,) = block["roles"]  # the learner ran no lines window
    assert (actor["role"], actor["processes"], actor["files"], actor["partial"]) == ("actor", ACTORS, ACTORS, 0)
    assert (actor["phase"], actor["start"], actor["stop"]) == ("iteration", *WINDOW)
    entries = WINDOW[1] - WINDOW[0]
    assert actor["entries"] == ACTORS * entries and actor["missing"] == [] and block["other_attempts"] == 0
    rows = work_rows(actor)
    # Hits summed over the role: the in-process hits of one call x the window's entries x the actors.
    assert {line: row["hits"] for line, row in rows.items()} == {
        line: hits * entries * ACTORS for line, hits in reference.items()
    }
    for row in rows.values():
        assert row["processes"] == ACTORS
        assert 0 < row["min_ns"] <= row["max_ns"] <= row["time_ns"]
        assert row["path"] == "pipeline.py" and row["source"] is not None
    assert [row["rank"] for row in actor["rows"]] == list(range(1, len(actor["rows"]) + 1))
    times = [row["time_ns"] for row in actor["rows"]]
    assert times == sorted(times, reverse=True)


def test_the_text_names_the_window_and_shows_the_spread(pipeline):
    run_dir, _ = pipeline
    result = report(run_dir, "--lines")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    text = result.stdout
    block = text[text.index("LINES  ("):]
    assert f"ACTOR  ({ACTORS} of {ACTORS} processes left line stats; entries 2..4 of iteration, 9 profiled in" in block
    assert "Per process" in block and "pipeline.py:" in block and "work" in block
    assert "LEARNER" not in block
    top = len([line for line in block.splitlines() if line[:4].strip().isdigit()])
    assert top == 10  # the default --lines-top
    # Without --lines the block is not there and no line-stats file is read.
    plain = report(run_dir)
    assert plain.returncode == 0 and "LINES  (" not in plain.stdout


def test_a_sigterm_during_a_window_leaves_a_partial_file_the_report_says_so(tmp_path):
    run_dir = tmp_path / "run"
    out = make_run(tmp_path / "src", run_dir, actors=1, hang=True)
    assert out["exitcodes"] == [0, -signal.SIGTERM]
    (actor,) = lines_json(run_dir)["lines"]["roles"]
    assert (actor["processes"], actor["files"], actor["partial"]) == (2, 2, 1)
    text = report(run_dir, "--lines").stdout
    assert "1 window was cut short (the process ended while it was open)" in text


def test_an_unusable_or_newer_lines_file_is_a_caveat_not_a_failure(pipeline, tmp_path):
    source, reference = pipeline
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    files = sorted((run_dir / "lines").rglob("l_*.json"))
    assert len(files) == ACTORS
    files[0].write_text("{not json")
    newer = json.loads(files[1].read_text())
    newer["schema_version"] = 99
    files[1].write_text(json.dumps(newer))
    result = report(run_dir, "--lines")
    assert result.returncode == 0, result.stderr
    caveats = result.stdout[result.stdout.index("CAVEATS"):]
    assert f"line stats not shown: {files[0]}: corrupt or truncated JSON" in caveats
    assert f"line stats not shown: {files[1]}: written with schema version 99" in caveats
    (actor,) = lines_json(run_dir)["lines"]["roles"]
    assert (actor["processes"], actor["files"]) == (ACTORS, 1)
    assert actor["missing"] == [{"reason": "its line-stats file could not be used (see CAVEATS)", "processes": 2}]
    rows = work_rows(actor)
    assert {line: row["hits"] for line, row in rows.items()} == {
        line: hits * (WINDOW[1] - WINDOW[0]) for line, hits in reference.items()
    }
    # A link or a FIFO where a file should be is refused, never followed or waited on.
    files[0].unlink()
    os.mkfifo(files[0])
    files[1].unlink()
    files[1].symlink_to(files[2])
    result = report(run_dir, "--lines")
    assert result.returncode == 0, result.stderr
    assert "not a regular file (a FIFO)" in result.stdout and "a symbolic link (not followed)" in result.stdout


def test_only_the_reported_attempts_files_are_read(pipeline, tmp_path):
    source, _ = pipeline
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    make_run(tmp_path / "again", run_dir, actors=1)  # a second run into the same directory: the newest
    block = lines_json(run_dir)["lines"]
    (actor,) = block["roles"]
    assert (actor["processes"], actor["files"]) == (1, 1)
    assert block["other_attempts"] == ACTORS
    text = report(run_dir, "--lines").stdout
    assert f"{ACTORS} line-stats files of other attempts under lines/ not shown" in text
    # The older attempt, chosen by name, shows its own three.
    older = json.loads(next((source / "workers").rglob("w_*.json")).read_text())["identity"]["run_id"]
    (actor,) = lines_json(run_dir, "--attempt", older)["lines"]["roles"]
    assert (actor["processes"], actor["files"]) == (ACTORS, ACTORS)


def test_a_run_without_lines_windows_says_so(tmp_path):
    run_dir = tmp_path / "run"
    code = (
        "import sys\nfrom lineprofiler.accounting import Profiler\n"
        "with Profiler(run_dir=sys.argv[1], snapshot_interval_s=None) as p:\n"
        "    with p.phase('iteration'):\n        pass\n"
    )
    made = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True, text=True, env=_env())
    assert made.returncode == 0, made.stderr
    result = report(run_dir, "--lines")
    assert result.returncode == 0, result.stderr
    assert 'no process of this attempt ran a lines window (Profiler(backend="lines", ...))' in result.stdout
    assert lines_json(run_dir)["lines"]["roles"] == []


def test_a_bad_lines_top_is_one_line_and_exit_2(pipeline):
    run_dir, _ = pipeline
    for value in ("0", "x"):
        result = report(run_dir, "--lines", "--lines-top", value)
        assert result.returncode == 2 and result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and "--lines-top" in result.stderr


class _LinesTables(HTMLParser):
    """The rows of every ``data-block="lines"`` table: ``(role, [data-v of each cell], share)``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str | None], float | None]] = []
        self._role: str | None = None
        self._row: list[str | None] | None = None
        self._share: float | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("data-block") == "lines":
            self._role = a.get("data-role")
        elif tag == "tr" and self._role is not None and "data-line" in a:
            self._row, self._share = [], None
        elif tag == "td" and self._row is not None:
            self._row.append(a.get("data-v"))
            if "data-share" in a:
                self._share = float(a["data-share"])

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append((self._role, self._row, self._share))
            self._row = None
        elif tag == "table":
            self._role = None


def test_the_html_and_json_carry_the_same_lines(pipeline, tmp_path):
    run_dir, _ = pipeline
    out = tmp_path / "report.html"
    result = report(run_dir, "--lines", "--html", str(out))
    assert result.returncode == 0 and result.stdout.strip() == str(out), result.stderr
    page = out.read_text()
    assert '<section id="lines">' in page and '<a href="#lines">Lines</a>' in page
    (actor,) = lines_json(run_dir)["lines"]["roles"]
    rows = _LinesTables(page).rows
    assert [role for role, _, _ in rows] == ["actor"] * len(actor["rows"])
    top = actor["rows"][0]["time_ns"]
    for (_, cells, share), row in zip(rows, actor["rows"], strict=True):
        assert int(cells[0]) == row["rank"] and int(cells[1]) == row["time_ns"] and int(cells[3]) == row["hits"]
        assert share == pytest.approx(row["time_ns"] / top, abs=1e-4)  # the heat bar's width
    # Without --lines the page has no such section.
    plain = tmp_path / "plain.html"
    assert report(run_dir, "--html", str(plain)).returncode == 0
    assert 'id="lines"' not in plain.read_text()
