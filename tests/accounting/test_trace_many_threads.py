"""A thread-per-request process keeps its trace: 600 real threads, alive at once, each with a
traced phase, a signal and a wait_on, are all in the worker file's and the live file's thread
table, every span and link placed on its own thread, and ``lineprofiler trace`` reads the run.
Past the table's bound (LP_TRACE_THREADS, 8,192) a thread's spans are counted, not kept, and its
links are kept with thread -1 and counted (``links_unthreaded``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.cli import main
from lineprofiler.runfiles import livefile, tracesection, workerfile

N_THREADS = 600
#: The engine's thread table (phases.h LP_TRACE_THREADS), as docs/accounting.md states it.
THREAD_BOUND = 8192


def _run(run_dir: Path, body: str) -> Path:
    script = textwrap.dedent(
        f"""
        import threading
        from lineprofiler.accounting import Profiler
        prof = Profiler({str(run_dir)!r}, role="server", trace=True, snapshot_interval_s=None)
        """
    ) + textwrap.dedent(body)
    env = dict(os.environ, LINEPROFILER_RUN_ID="threads")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300, env=env)
    (path,) = workerfile.find_worker_files(run_dir)
    return path


def test_600_threads_at_once_each_keep_their_spans_and_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _run(
        tmp_path,
        f"""
        everyone = threading.Barrier({N_THREADS})  # all alive at once, as a server's are
        def request(i):
            everyone.wait(120)
            with prof.phase("request"):
                prof.signal("replies", i)
                prof.wait_on("replies", i)
        threads = [threading.Thread(target=request, args=(i,), name=f"req-{{i}}") for i in range({N_THREADS})]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        prof.close()
        """,
    )
    document = workerfile.read_worker_file(path)
    live = livefile.read_live_retrying(livefile.live_path(path))
    assert live.usable and live.trace is not None
    for trace in (document["trace"], live.trace):
        names = [t["name"] for t in trace["threads"]]
        assert sorted(names) == sorted([f"req-{i}" for i in range(N_THREADS)])
        assert trace["spans_unthreaded"] == 0 and trace["links_unthreaded"] == 0
        links = trace["links"]
        assert len(links) == 2 * N_THREADS
        # each request's signal and wait are on the thread that made them
        for kind, _, key, _, thread, _ in links:
            assert kind in ("signal", "wait") and names[thread] == f"req-{key}"
    rows = tracesection.span_rows(document["trace"], path)
    names = [t["name"] for t in document["trace"]["threads"]]
    assert sorted(names[r[3]] for r in rows) == sorted(names)  # one span on every thread

    assert main(["trace", str(tmp_path), "--json"]) == 0
    story = json.loads(capsys.readouterr().out)
    assert story  # read, not refused ("no worker recorded a usable trace")


@pytest.mark.slow
def test_threads_past_the_bound_are_counted_and_their_links_kept_unplaced(tmp_path: Path) -> None:
    extra = 5
    path = _run(
        tmp_path,
        f"""
        def request(i):
            with prof.phase("request"):
                prof.signal("replies", i)
        for i in range({THREAD_BOUND + extra}):  # one after another: the table keeps every thread seen
            t = threading.Thread(target=request, args=(i,))
            t.start()
            t.join()
        prof.close()
        """,
    )
    trace = workerfile.read_worker_file(path)["trace"]
    assert len(trace["threads"]) == THREAD_BOUND
    assert trace["spans_unthreaded"] == extra
    assert trace["links_unthreaded"] == extra
    assert [link[2] for link in trace["links"] if link[4] == -1] == [str(THREAD_BOUND + k) for k in range(extra)]
    live = livefile.read_live_retrying(livefile.live_path(path))
    assert live.trace is not None and live.trace["links_unthreaded"] == extra
