"""Helpers of the integration tests (loaded by conftest.py as ``lp_integration_helpers``).

Integration tests: the public ``Profiler`` wired to capabilities, CUDA hooks, backend windows.

Everything goes through ``lineprofiler.accounting.Profiler`` and the ``lineprofiler report`` CLI,
on the real packages: VizTracer everywhere, the CPU build of torch on Python 3.11 (elsewhere the
torch tests skip with the reason), the ``nvtx`` package seen through a real NVTX tool library.
What needs a clean interpreter (an import order, a blocked package) runs in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GPU_TESTS = HERE.parent / "gpu"
SRC = HERE.parents[1] / "src" / "lineprofiler"


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    env.update(extra or {})
    return env


def worker_documents(run_dir: Path) -> list[dict]:
    from lineprofiler.runfiles import workerfile

    return [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]


def phases_by_path(document: dict) -> dict[str, dict]:
    return {p["path"]: p for p in document["phases"]}


def trace_events(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    return data["traceEvents"] if isinstance(data, dict) else data


def _cc() -> str:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler on PATH")
    return cc


def build_library(out: Path, source: Path) -> Path:
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fPIC", "-shared"]
    if os.environ.get("LP_ASAN"):
        flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    cmd = [_cc(), *flags, "-I", str(SRC), "-o", str(out), str(source), "-ldl"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"build failed: {' '.join(cmd)}\n{result.stderr}")
    return out
