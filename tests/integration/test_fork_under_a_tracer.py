"""A fork while a trace or profile function is set (coverage, a debugger, VizTracer) must not hang.

Python 3.11 regression: the parent's snapshot-thread restart was deferred through a pending call
that re-queued itself; with a profile function set, 3.11's traced dispatch re-ran the same
instruction forever and the parent never returned from os.fork().
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from helpers.env import clean_env


@pytest.mark.parametrize("hook", ["setprofile", "settrace"])
def test_fork_with_a_profile_or_trace_function_returns(tmp_path, hook):
    code = textwrap.dedent(
        f"""
        import os, sys
        from lineprofiler.accounting import Profiler
        p = Profiler(run_dir={str(tmp_path / "run")!r}, snapshot_interval_s=30)
        sys.{hook}(lambda *args: None)
        with p.phase("before"):
            pid = os.fork()
        if pid == 0:
            with p.phase("child"):
                pass
            p.close()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        sys.{hook}(None)
        p.close()
        print(os.waitstatus_to_exitcode(status))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"]
    assert len(list((tmp_path / "run" / "workers").rglob("w_*.json"))) == 2
