"""The report's LINES block: a line's ``% window`` is a share of the window, never above 100 %.

A line that runs in several threads at once adds up, over the threads, to more than the window
it ran in (four threads sleeping 0.1 s on one line: 0.4 s of line time in a 0.1 s window). Its
share counts, per process, at most that process's window time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from helpers.cli import run_cli
from helpers.env import clean_env

SCRIPT = textwrap.dedent(
    """
    import sys, threading, time

    from lineprofiler.accounting import Profiler


    def nap():
        time.sleep(0.1)


    def spread():
        threads = [threading.Thread(target=nap) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


    if __name__ == "__main__":
        p = Profiler(run_dir=sys.argv[1], role="actor", backend="lines", backend_window=(1, 2),
                     window_phase="iteration", snapshot_interval_s=None, lines_project=sys.argv[2])
        for _ in range(3):
            with p.phase("iteration"):
                spread()
        p.close()
    """
)


@pytest.mark.slow
def test_a_line_run_by_four_threads_at_once_is_at_most_the_whole_window(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "threads.py").write_text(SCRIPT)
    run_dir = tmp_path / "run"
    argv = [sys.executable, str(folder / "threads.py"), str(run_dir), str(folder)]
    done = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), cwd=folder, timeout=300)
    assert done.returncode == 0, done.stderr
    result = run_cli("report", run_dir, "--lines", "--json", "--lines-top", "50")
    assert result.returncode == 0, result.stderr
    (role,) = json.loads(result.stdout)["lines"]["roles"]
    rows = {(row["function"], row["source"].strip()): row for row in role["rows"]}
    nap = rows[("nap", "time.sleep(0.1)")]
    assert nap["hits"] == 4
    assert nap["time_ns"] > role["wall_ns"]  # four threads' worth of the one line: more than the window
    for row in role["rows"]:
        assert row["window_share"] is not None
        assert 0 <= row["window_share"] <= 1.0, row
