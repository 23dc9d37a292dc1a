"""Running the Ray scenarios (``scenarios.py``) as their own processes, and the report on them.

A scenario starts Ray once (seconds on a loaded 2-core machine) and its tests read what it left:
``ray_scenario(name)`` runs it on first use in the session and returns ``(folder, what it saw)``.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import env
from helpers.cli import run_cli
from helpers.once import session_folder

SCENARIOS = Path(__file__).resolve().with_name("scenarios.py")
TIMEOUT_S = 420


def ray_skip_reason() -> str | None:
    spec = importlib.util.find_spec("ray")
    # tests/ is on sys.path (for tests/helpers), so this folder itself is found as a namespace
    # package named ray, with no origin: only a regular package is Ray.
    if spec is None or spec.origin is None:
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return f"Ray is not installed for Python {version}: pip install 'with-line-profiler[ray]'"
    if os.environ.get("LP_ASAN"):
        return "make test-asan preloads the sanitizers into every child, Ray's own servers included"
    return None


#: clean_env(): this environment without lineprofiler's variables or a Ray address to join.
clean_env = functools.partial(env.clean_env, without=("RAY_",), PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0")


@pytest.fixture(scope="module", autouse=True)
def _one_ray_module_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A Ray module starts its own cluster (a dozen processes): two at once, one on each xdist
    worker, starve each other on 2 cores. A lock file in the session's shared folder lets one
    module at a time run; the other worker waits here."""
    with open(session_folder(tmp_path_factory) / "ray-modules.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def needs_ray() -> None:
    reason = ray_skip_reason()
    if reason:
        pytest.skip(reason)


_results: dict[str, tuple[Path, dict] | str] = {}


@pytest.fixture(scope="session")
def ray_scenario(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, dict]]:
    def run(name: str) -> tuple[Path, dict]:
        reason = ray_skip_reason()
        if reason:
            pytest.skip(reason)
        if name not in _results:
            folder = tmp_path_factory.mktemp(f"ray-{name}")
            out = folder / "seen.json"
            result = subprocess.run(
                [sys.executable, str(SCENARIOS), name, str(folder / "run"), str(out)],
                env=clean_env(), cwd=folder, capture_output=True, text=True, timeout=TIMEOUT_S,
            )
            if result.returncode != 0:
                _results[name] = f"scenario {name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
            else:
                _results[name] = (folder / "run", json.loads(out.read_text()))
        found = _results[name]
        if isinstance(found, str):
            pytest.fail(found)
        return found

    return run


def run_report(run_dir: Path) -> str:
    result = run_cli("report", run_dir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    return result.stdout


@pytest.fixture(scope="session")
def report() -> Callable[[Path], str]:
    return run_report
