"""Fixtures of the integration tests; the shared helpers live in ``helpers.py``, loaded under a
name no other test folder uses."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.env import clean_env

_NAME = "lp_integration_helpers"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("helpers.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)


@pytest.fixture
def run_python(tmp_path):
    """run_python(code, env=None, check=True, as_file=False): run dedented ``code`` in a fresh
    interpreter (from a script file with ``as_file``, which spawn/forkserver children need).

    Returns the CompletedProcess; with ``check`` a non-zero exit fails the test with its output.
    """

    def run(
        code: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 240, as_file: bool = False
    ):
        code = textwrap.dedent(code)
        if as_file:  # spawn and forkserver children import the main module by its file
            script = tmp_path / "main_script.py"
            script.write_text(code)
            argv = [sys.executable, str(script)]
        else:
            argv = [sys.executable, "-c", code]
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=clean_env(env),
            cwd=tmp_path,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"child failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result

    return run


@pytest.fixture
def report():
    """report(run_dir, *args) -> (returncode, stdout, stderr) of ``lineprofiler report``, in process."""

    def run(run_dir: Path, *args: str) -> tuple[int, str, str]:
        result = run_cli("report", run_dir, *args)
        return result.code, result.out, result.err

    return run


# nvml_stub and nvtx_tool, the C test libraries of tests/gpu, are tests/conftest.py's.
