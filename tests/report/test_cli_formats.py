"""``report`` and ``compare`` take ``--format text|json|html`` and ``-o PATH`` (the spelling of
0.10.0 and most tools) beside ``--json`` and ``--html``: the same bytes either way, a file
written where ``-o`` says, and one line with exit status 2 when the two spellings disagree."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.cli import run_cli

JOB = textwrap.dedent(
    """
    import sys
    from lineprofiler.accounting import Profiler

    with Profiler(sys.argv[1], role="worker", enabled=True) as prof:
        for _ in range(50):
            with prof.phase("step"):
                prof.count("items", 3)
    """
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("formats") / "run"
    subprocess.run([sys.executable, "-c", JOB, str(folder)], check=True, timeout=120)
    return folder


@pytest.mark.parametrize("fmt, ours", [("text", []), ("json", ["--json"])])
def test_format_prints_what_our_flag_prints(run_dir, fmt, ours):
    theirs, mine = run_cli("report", str(run_dir), "--format", fmt), run_cli("report", str(run_dir), *ours)
    assert theirs.returncode == mine.returncode == 0, theirs.stderr
    assert theirs.stdout == mine.stdout
    assert "step" in theirs.stdout


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_output_writes_the_format_to_the_file(run_dir, tmp_path, fmt):
    target = tmp_path / "out" / f"report.{fmt}"
    target.parent.mkdir()
    done = run_cli("report", str(run_dir), "--format", fmt, "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(target)
    body = target.read_text()
    if fmt == "html":
        ours = tmp_path / "ours.html"
        assert run_cli("report", str(run_dir), "--html", str(ours)).returncode == 0
        assert body == ours.read_text()
    else:
        printed = run_cli("report", str(run_dir), *(["--json"] if fmt == "json" else [])).stdout
        assert body == printed


def test_html_without_a_path_is_printed_as_in_0_10_0(run_dir, tmp_path):
    done = run_cli("report", str(run_dir), "--format", "html")
    assert done.returncode == 0, done.stderr
    ours = tmp_path / "ours.html"
    assert run_cli("report", str(run_dir), "--html", str(ours)).returncode == 0
    assert done.stdout.rstrip() == ours.read_text().rstrip()
    assert not (run_dir / "report.html").exists()  # --html alone writes it; --format html prints
    compared = run_cli("compare", str(run_dir), str(run_dir), "--format", "html")
    assert compared.returncode == 0 and compared.stdout.startswith("<!DOCTYPE html>")


def test_compare_takes_the_same_options(run_dir, tmp_path):
    target = tmp_path / "compare.json"
    done = run_cli("compare", str(run_dir), str(run_dir), "--format", "json", "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_text() == run_cli("compare", str(run_dir), str(run_dir), "--json").stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["report", "{run}", "--format", "json", "--html"], "ask for two formats"),
        (["report", "{run}", "--html", "a.html", "-o", "b.html"], "name two files"),
    ],
)
def test_disagreeing_options_are_one_line_and_status_2(run_dir, tmp_path, args, message):
    done = run_cli(*(a.format(run=run_dir) for a in args))
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
