"""Long commands say what they are reading, on a terminal only; --quiet and pipes stay silent.

Each command runs as a real subprocess whose stderr is a pseudo-terminal (or a pipe), over a
real run directory; LINEPROFILER_PROGRESS_AFTER_S=0 shows the line at once instead of after a
second, so the test does not depend on how fast the machine reads.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from lp_report_builders import SimWorker

WORKERS = 12


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("progress") / "run"
    for i in range(WORKERS):
        worker = SimWorker("actor" if i else "learner", pid=1000 + i)
        with worker.phase("iteration"):
            worker.work(5_000_000)
        worker.write(folder)
    return folder


def _run(args, *, stderr_tty: bool, env_extra=None):
    """(stdout, what reached stderr, exit status)."""
    env = {**os.environ, "LINEPROFILER_PROGRESS_AFTER_S": "0", **(env_extra or {})}
    env.pop("LINEPROFILER_DEBUG", None)
    command = [sys.executable, "-m", "lineprofiler", *map(str, args)]
    if not stderr_tty:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        return done.stdout, done.stderr, done.returncode
    master, slave = os.openpty()
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=env, text=True)
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        out, _ = child.communicate(timeout=120)
        return out, seen.decode("utf-8", "replace"), child.returncode
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_report_on_a_terminal_shows_each_file_read_then_erases_the_line(run_dir):
    out, err, status = _run(["report", run_dir], stderr_tty=True)
    assert status == 0, err
    assert f"reading the worker files of {run_dir}: {WORKERS}/{WORKERS}" in err
    assert f"building the report of {WORKERS} workers" in err
    assert err.endswith("\r\x1b[K")  # erased before the report was printed
    assert "ROLES" in out or "learner" in out
    assert "\r" not in out and "reading the worker files" not in out  # never in the report itself


def test_json_output_is_untouched_by_progress(run_dir):
    import json

    out, err, status = _run(["report", run_dir, "--json"], stderr_tty=True)
    assert status == 0
    json.loads(out)  # stdout is the document alone
    assert "reading the worker files" in err


@pytest.mark.parametrize("quiet", ["-q", "--quiet"])
def test_quiet_silences_it(run_dir, quiet):
    out, err, status = _run(["report", run_dir, quiet], stderr_tty=True)
    assert status == 0 and out
    assert err == ""


def test_a_pipe_never_gets_it(run_dir):
    out, err, status = _run(["report", run_dir], stderr_tty=False)
    assert status == 0 and out
    assert err == ""


def test_a_fast_command_shows_nothing_by_default(run_dir):
    # The default waits a second before the first line: a small run is done before that.
    out, err, status = _run(["report", run_dir], stderr_tty=True, env_extra={"LINEPROFILER_PROGRESS_AFTER_S": "30"})
    assert status == 0 and out
    assert err == ""


def test_compare_and_export_show_it_too(run_dir, tmp_path):
    _, err, status = _run(["compare", run_dir, run_dir], stderr_tty=True)
    assert status == 0
    assert err.count(f"reading the worker files of {run_dir}: {WORKERS}/{WORKERS}") == 2  # A and B
    trace = tmp_path / "trace.json"
    out, err, status = _run(["export", run_dir, "--perfetto", trace], stderr_tty=True)
    assert status == 0 and trace.exists()
    assert f"writing the trace of {WORKERS} workers" in err
    _, err, status = _run(["export", run_dir, "--perfetto", trace, "-q"], stderr_tty=True)
    assert status == 0 and err == ""


def test_view_says_what_it_reads(tmp_path):
    from lineprofiler import LineProfiler

    profiler = LineProfiler(project_folder=Path(__file__).parent)
    with profiler:
        sum(i for i in range(100))
    saved = profiler.dump(tmp_path / "lines.json")
    out, err, status = _run(["view", saved], stderr_tty=True)
    assert status == 0, err
    assert f"reading the line profiles in {saved}" in err
    _, err, _ = _run(["view", saved, "--quiet"], stderr_tty=True)
    assert err == ""


def test_errors_still_reach_a_terminal_on_a_clean_line(tmp_path):
    out, err, status = _run(["report", tmp_path / "missing"], stderr_tty=True)
    assert status == 2 and out == ""
    assert "no such directory" in err
