"""Once the profiler is closed, its live file is final: nothing the process does afterwards,
its exit included, writes into it.

A tool that copies a run directory while the job's processes are still alive (Ray's collect,
rsync from a login node) must get what the report will read. The tree's nodes live in shared
mappings of the file, so a store into a node after close (releasing the node's path string at
the recorder's teardown, for one) would change the file behind the copy.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from lineprofiler.runfiles import layout

SCRIPT = textwrap.dedent(
    """
    import gc, sys
    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=sys.argv[1], role="final", snapshot_interval_s=None)
    for k in range(300):  # several node chunks, each node's path built by the snapshots
        with profiler.phase("step"):
            with profiler.phase(f"p{k}"):
                profiler.count("n")
    profiler.flush()
    profiler.close()
    print(profiler.path, flush=True)
    sys.stdin.readline()  # the test has read the file
    if sys.argv[2] == "del":
        del profiler
        gc.collect()
    print("done", flush=True)
    """
)


def _run(tmp_path, how: str) -> tuple[bytes, bytes]:
    script = tmp_path / "final.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "run"), how],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        worker = proc.stdout.readline().strip()
        assert worker, proc.stderr.read()
        live = layout.live_path(worker)
        before = open(live, "rb").read()
        out, err = proc.communicate("go\n", timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.strip() == "done", err
    return before, open(live, "rb").read()


def test_the_live_file_does_not_change_when_the_profiler_is_released(tmp_path):
    before, after = _run(tmp_path, "del")
    assert len(before) > 8192  # node chunks beyond the header page
    assert after == before


def test_the_live_file_does_not_change_at_the_process_exit(tmp_path):
    before, after = _run(tmp_path, "exit")
    assert after == before
