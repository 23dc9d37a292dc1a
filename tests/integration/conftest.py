"""Fixtures of the integration tests; the shared helpers live in ``helpers.py``, loaded under a
name no other test folder uses."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_NAME = "lp_integration_helpers"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("helpers.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)

from lp_integration_helpers import GPU_TESTS, build_library, clean_env  # noqa: E402


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
    """report(run_dir, *args) -> (returncode, stdout, stderr) of ``python -m lineprofiler report``."""

    def run(run_dir: Path, *args: str) -> tuple[int, str, str]:
        result = subprocess.run(
            [sys.executable, "-m", "lineprofiler", "report", str(run_dir), *args],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=120,
        )
        return result.returncode, result.stdout, result.stderr

    return run


@pytest.fixture(scope="session")
def nvtx_tool(tmp_path_factory) -> Path:
    """The NVTX tool library of tests/gpu (loaded through NVTX_INJECTION64_PATH, as nsys is):
    it writes ``PUSH <name>`` / ``POP`` lines to the file named by LP_NVTX_LOG."""
    return build_library(tmp_path_factory.mktemp("nvtx") / "libnvtx_inject.so", GPU_TESTS / "nvtx_inject.c")


@pytest.fixture(scope="session")
def nvml_stub(tmp_path_factory) -> Path:
    """The NVML stand-in of tests/gpu: it loads and initialises, and sees no device unless told."""
    return build_library(tmp_path_factory.mktemp("nvml") / "libnvml_stub.so", GPU_TESTS / "nvml_stub.c")
