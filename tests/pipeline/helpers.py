"""Shared helpers for the pipeline and launcher tests: clean environments, the report CLI,
worker files, and the reasons a launcher test skips. ``conftest.py`` loads this file as
``lp_pipeline_helpers``.

Every process these tests start gets an environment without any LINEPROFILER_ variable and
without any launcher's variables (the suite itself may run inside a Slurm job or torchrun):
what a test wants a launcher to have set, it sets.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lineprofiler.runfiles import workerfile

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PIPELINE = EXAMPLES / "rl_pipeline" / "pipeline.py"
WORKER = Path(__file__).resolve().with_name("worker.py")
TIMEOUT = 300

_LAUNCHER_PREFIXES = ("LINEPROFILER_", "SLURM_", "OMPI_", "PMI_", "PMIX_", "TORCHELASTIC_", "MPI_")
_LAUNCHER_NAMES = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
}


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without lineprofiler's or any launcher's variables, plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES) and k not in _LAUNCHER_NAMES
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run(command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command], env=env if env is not None else clean_env(), cwd=cwd,
        capture_output=True, text=True, timeout=timeout,
    )


def report(run_dir: Path) -> str:
    """``python -m lineprofiler report RUN_DIR``'s output; the command must succeed."""
    result = run([sys.executable, "-m", "lineprofiler", "report", run_dir])
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    return result.stdout


def documents(run_dir: Path) -> list[dict]:
    return [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]


def by_path(document: dict) -> dict[str, dict]:
    return {p["path"]: p for p in document["phases"]}


def counter(document: dict, phase: str, name: str) -> int:
    return sum(c["total"] for c in document["counters"] if c["phase"] == phase and c["name"] == name)


def _importable(name: str) -> bool:
    # find_spec, not import: importing torch costs seconds, and it is the children that use it
    return importlib.util.find_spec(name) is not None


def torch_skip_reason() -> str | None:
    if not _importable("torch"):
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return (f"torch is not installed for Python {version}: the Makefile installs its CPU wheel on 3.11 only "
                f"(pip install torch)")
    return None


def mpi_skip_reason() -> str | None:
    if shutil.which("mpirun") is None:
        return "mpirun not found: install Debian's openmpi-bin and libopenmpi-dev (.ci/run does, as root)"
    if not _importable("mpi4py"):
        return "mpi4py is not installed: pip install -e '.[test]'"
    return None
