"""A traced process's live file costs what it holds: the rings' part of the file (15 MB at the
default capacities) is a hole that takes disk blocks as records are written, so a process with a
handful of spans, and its fork child (whose trace starts over), each have a live file of a few
hundred kilobytes on disk (``st_blocks``, what ``du`` counts) that still reads back whole."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from lineprofiler.runfiles import livefile, workerfile

#: Today's figure was 15.2 MB allocated for every traced process, whatever it held.
ALLOCATED_BOUND = 1_000_000
#: The default rings: 200,000 spans of 40 bytes and 50,000 links of 136 bytes.
RINGS_BYTES = 200_000 * 40 + 50_000 * 136


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_a_traced_process_with_a_handful_of_spans_has_a_small_live_file_on_disk(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os
        from lineprofiler.accounting import Profiler
        prof = Profiler({str(tmp_path)!r}, role="small", trace=True, snapshot_interval_s=None)
        for i in range(5):
            with prof.phase("step"):
                prof.signal("done", i)
        prof.flush()
        pid = os.fork()
        if pid == 0:  # the child's own live file, its trace started over
            for i in range(3):
                with prof.phase("child"):
                    pass
            prof.close()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        prof.close()
        """
    )
    env = dict(os.environ, LINEPROFILER_RUN_ID="cost")
    subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", script], check=True, timeout=120, env=env)
    paths = workerfile.find_worker_files(tmp_path)
    assert len(paths) == 2
    spans_by_role = {}
    for path in paths:
        live_path = livefile.live_path(path)
        assert live_path.stat().st_size > RINGS_BYTES  # the rings are all there, as a hole
        assert _allocated(live_path) < ALLOCATED_BOUND
        live = livefile.read_live_retrying(live_path)
        assert live.usable and not live.problems and live.trace is not None
        names = {p["id"]: p["path"] for p in live.phases}
        spans_by_role[tuple(sorted({names[s[2]] for s in live.trace["spans"]}))] = len(live.trace["spans"])
    assert spans_by_role == {("step",): 5, ("child",): 3}
