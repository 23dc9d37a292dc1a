"""The most common job our users have: a PyTorch training script with DataLoader workers
(``num_workers=4, persistent_workers=True``), profiled as README says, with real torch on the CPU.

examples/torch_dataloader.py runs as a user runs it; the workers make their profiler in
``worker_init_fn``, lazily on their first item, or not at all. The job must end as it does
unprofiled (no atexit traceback from workers terminated because the forking frame kept the
DataLoader alive), the report must read it by role, and under ``lineprofiler run --children``
the workers' line stats must be saved."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lp_installed import HAS_TORCH, NO_TORCH

from helpers.cli import run_cli
from helpers.env import clean_env

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_dataloader.py"
ARGS = ["--epochs", "2", "--samples", "512", "--workers", "4"]


def _train(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    run_dir = tmp_path / "profile"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--run-dir", str(run_dir), *ARGS, *extra],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=clean_env(),
    )
    return done, run_dir


def _report(run_dir: Path) -> dict:
    done = run_cli("report", run_dir, "--json", "--no-samples")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert "done: loss" in done.stdout
    for bad in ("Exception ignored", "Traceback", "is killed by signal"):
        assert bad not in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("where", ["init", "lazy"])
def test_trainer_and_four_profiled_workers(tmp_path: Path, where: str) -> None:
    done, run_dir = _train(tmp_path, "--worker-profilers", where)
    _assert_clean(done)
    doc = _report(run_dir)
    roles = {role["name"]: role for role in doc["roles"]}
    assert set(roles) == {"trainer", "dataloader"}
    assert roles["trainer"]["processes"] == 1 and roles["dataloader"]["processes"] == 4
    # No worker is said to have been killed, or to have just started: they all exited.
    assert not [c for c in doc["caveats"] if "SIGTERM" in c or "just started" in c or "killed" in c], doc["caveats"]
    iterations = {r["role"]: r for r in doc["iterations"]["roles"]}
    assert iterations["trainer"]["phase"] == "epoch/step"
    assert iterations["dataloader"]["phase"] == "getitem"
    assert iterations["dataloader"]["entries"] == 2 * 512  # every sample of both epochs


def test_workers_that_never_profile_are_named_as_such(tmp_path: Path) -> None:
    done, run_dir = _train(tmp_path, "--worker-profilers", "none")
    _assert_clean(done)
    doc = _report(run_dir)
    (role,) = doc["roles"]
    assert role["name"] == "trainer" and role["processes"] == 1
    assert role["unprofiled"] == 4
    assert not [c for c in doc["caveats"] if "just started" in c], doc["caveats"]


def test_line_stats_of_the_workers_under_children(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").mkdir()
    shutil.copy(EXAMPLE, project / "train.py")
    out = tmp_path / "lines"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lineprofiler",
            "run",
            "--children",
            "-o",
            str(out),
            "train.py",
            "--run-dir",
            str(tmp_path / "profile"),
            *ARGS,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=project,
        env=clean_env(),
    )
    _assert_clean(done)
    from lineprofiler.runfiles import linesfile

    files, problems = linesfile.load_lines(out)
    assert problems == []
    assert all(f.status == "exited" for f in files), [(f.pid, f.status) for f in files]
    getitem = [f for f in files if any(fn.qualname == "NoisySines.__getitem__" for fn in f.functions)]
    assert len(getitem) == 4, [(f.pid, f.process.get("label")) for f in files]  # each worker's own file
    hits = sum(
        line.hits
        for f in getitem
        for fn in f.functions
        if fn.qualname == "NoisySines.__getitem__"
        for line in fn.lines[:1]
    )
    assert hits >= 2 * 512
