"""The suite's own net (tests/helpers/hang_watch.py): a hung test fails with its stack, the tests
after it still run, and the processes that run tests hold no thread of the watch's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent

PROBE = textwrap.dedent(
    """
    import threading, time

    def test_hangs():
        time.sleep(120)  # @hung

    def test_alone_in_its_process():
        assert [t.name for t in threading.enumerate()] == ["MainThread"]
    """
)


def test_a_hung_test_fails_with_its_stack_and_the_rest_runs(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LP_TEST_HANG"))}
    env.update(PYTHONPATH=str(TESTS), LP_TEST_HANG_LIMIT_S="3")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "helpers.hang_watch", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", os.devnull, "test_probe.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "test_probe.py::test_hangs still running after" in out, out
    hung = next(n for n, line in enumerate(PROBE.splitlines(), 1) if line.endswith("# @hung"))
    assert f'test_probe.py", line {hung} in test_hangs' in out, out  # faulthandler's stack
    assert "FAILED test_probe.py::test_hangs" in out and "1 failed, 1 passed" in out, out
