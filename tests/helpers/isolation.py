"""A test that runs in a process of its own: for libraries (TensorBoard, W&B, MLflow) whose
threads outlive the test and keep doing I/O in the process, which would bill another test's
exact per-process I/O figures in the same pytest worker."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Set in the child to the node id it runs: there the test's body runs. (Not LINEPROFILER_*:
#: the suite clears those from every test's environment.)
CHILD = "LP_TEST_CHILD"
TIMEOUT_S = 300


def in_own_process(test: Callable[..., Any]) -> Callable[..., Any]:
    """Run the decorated test's body in a fresh ``pytest`` process; here, only its outcome."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        node = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
        if os.environ.get(CHILD) == node:
            return test(*args, **kwargs)
        assert CHILD not in os.environ, f"the child was asked for {os.environ[CHILD]!r} and reached {node!r}"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", node],
            cwd=ROOT,
            env={**os.environ, CHILD: node},
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output
        skipped = [line for line in output.splitlines() if line.startswith("SKIPPED")]
        if skipped:
            pytest.skip(skipped[0].split(": ", 1)[-1])
        return None

    return run
