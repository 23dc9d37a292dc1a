"""The frame that forks, and every local in it, dies when its function returns, profiler or not.

3.11 kept it: the fork hook held the calling frame until the next fork, so a DataLoader made in
``main()`` outlived ``main()``, and its persistent workers were terminated at exit instead of
shut down (an atexit traceback, and workers reported as killed by SIGTERM)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import gc, os, sys, weakref
    from lineprofiler.accounting import Profiler

    class Thing:
        pass

    def forks():
        local = Thing()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return weakref.ref(local)

    profiled = sys.argv[2] == "profiled"
    prof = Profiler(sys.argv[1], role="p", enabled=profiled, snapshot_interval_s=3600)
    with prof.phase("work"):
        ref = forks()
    gc.collect()
    print("alive" if ref() is not None else "gone", flush=True)
    prof.close()
    """
)


def test_the_forking_frames_locals_die_with_it(tmp_path):
    for mode in ("unprofiled", "profiled"):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path / mode), mode], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "gone", (mode, done.stdout, done.stderr[-2000:])
