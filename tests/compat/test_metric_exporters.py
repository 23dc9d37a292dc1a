"""The TensorBoard, W&B and MLflow exporters against the real packages, offline: each snapshot
interval's scalars (time share, p50/p99, wait%, counter rates, tags by phase path) are read
back from what the package wrote. A missing package is one error at attach(), not at import.
Each real package's test runs in a process of its own: their writer threads outlive the test."""

from __future__ import annotations

import importlib
import sys
import time

import pytest

from helpers.isolation import in_own_process
from lineprofiler.accounting import Profiler

STEP_TAGS = {
    "lineprofiler/train/step/time_share",
    "lineprofiler/train/step/p50_ms",
    "lineprofiler/train/step/p99_ms",
    "lineprofiler/train/step/wait_pct",
    "lineprofiler/train/step/items_per_s",
    "lineprofiler/train/step/entries_per_s",
}


def train_until_exported(profiler, intervals=3):
    """The training loop, until ``intervals`` snapshots went out (the exporter came first)."""
    seen = []
    profiler.on_snapshot(seen.append)
    deadline = time.monotonic() + 30
    while len(seen) < intervals:
        assert time.monotonic() < deadline, "no snapshots"
        with profiler.phase("train"), profiler.phase("step"):
            profiler.count("items", 4)
            time.sleep(0.005)
    return seen


@pytest.mark.peers
@in_own_process
def test_tensorboard_event_files_hold_each_phase_scalars(tmp_path):
    pytest.importorskip("tensorboardX", reason="tensorboardX (the tensorboard extra) is not installed")
    accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator", reason="tensorboard (to read back) is not installed"
    )
    from lineprofiler.integrations import tensorboard

    with Profiler(str(tmp_path / "run"), "w", snapshot_interval_s=0.05) as profiler:
        writer = tensorboard.attach(profiler, log_dir=str(tmp_path / "tb"))
        train_until_exported(profiler)
    writer.close()
    events = accumulator.EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert STEP_TAGS <= set(events.Tags()["scalars"])
    shares = events.Scalars("lineprofiler/train/step/time_share")
    assert len(shares) >= 2 and [e.step for e in shares] == sorted(e.step for e in shares)
    assert all(0.0 < e.value <= 1.5 for e in shares)
    assert all(e.value >= 4.0 for e in events.Scalars("lineprofiler/train/step/p50_ms"))


@pytest.mark.peers
@in_own_process
def test_wandb_offline_run_holds_the_history(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb", reason="wandb (the wandb extra) is not installed")
    from lineprofiler.integrations import wandb as lp_wandb

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    run = wandb.init(project="lineprofiler-test", dir=str(tmp_path))
    try:
        with Profiler(str(tmp_path / "run"), "w", snapshot_interval_s=0.05) as profiler:
            assert lp_wandb.attach(profiler, run=run) is run
            train_until_exported(profiler)
    finally:
        run.finish()
    # wandb.Api needs the server: the offline run's transaction log holds the history records,
    # whose keys are stored as text.
    logs = list((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(logs) == 1
    deadline = time.monotonic() + 30
    while lp_wandb.STEP_METRIC.encode() not in (data := logs[0].read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the log is wandb's service process's to write, after finish() returns
    for tag in [*STEP_TAGS, lp_wandb.STEP_METRIC]:
        assert tag.encode() in data, tag
    assert data.count(b"lineprofiler/train/step/p50_ms") >= 2


@pytest.mark.peers
@in_own_process
def test_mlflow_local_store_holds_each_interval(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="mlflow (the mlflow extra) is not installed")
    from lineprofiler.integrations import mlflow as lp_mlflow

    # mlflow 3 keeps the file store (local, no server) behind this switch.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    with mlflow.start_run() as run:
        with Profiler(str(tmp_path / "run"), "w", snapshot_interval_s=0.05) as profiler:
            assert lp_mlflow.attach(profiler) == run.info.run_id
            train_until_exported(profiler)
    client = mlflow.tracking.MlflowClient()
    assert STEP_TAGS <= set(client.get_run(run.info.run_id).data.metrics)
    history = client.get_metric_history(run.info.run_id, "lineprofiler/train/step/items_per_s")
    assert len(history) >= 2 and all(m.value > 0 for m in history)
    assert [m.step for m in history] == sorted(m.step for m in history)


@pytest.mark.parametrize(
    ("adapter", "package", "extra", "kwargs"),
    [
        ("tensorboard", "tensorboardX", "tensorboard", {"log_dir": "tb"}),
        ("wandb", "wandb", "wandb", {}),
        ("mlflow", "mlflow", "mlflow", {}),
    ],
)
def test_a_missing_package_is_one_error_at_attach_not_at_import(tmp_path, monkeypatch, adapter, package, extra, kwargs):
    # An import of any of them raises ImportError, submodules an earlier test imported included.
    for name in [package, "torch", *(m for m in sys.modules if m.startswith((package + ".", "torch.")))]:
        monkeypatch.setitem(sys.modules, name, None)
    module = importlib.import_module(f"lineprofiler.integrations.{adapter}")
    with Profiler(str(tmp_path), "w", snapshot_interval_s=None) as profiler:
        with pytest.raises(ImportError, match=rf"with-line-profiler\[{extra}\]") as raised:
            module.attach(profiler, **kwargs)
    assert "\n" not in str(raised.value)


@pytest.mark.peers
def test_wandb_and_mlflow_without_a_run_say_how_to_start_one(tmp_path):
    wandb = pytest.importorskip("wandb", reason="wandb is not installed")
    mlflow = pytest.importorskip("mlflow", reason="mlflow is not installed")
    from lineprofiler.integrations import mlflow as lp_mlflow
    from lineprofiler.integrations import wandb as lp_wandb

    assert wandb.run is None and mlflow.active_run() is None
    with Profiler(str(tmp_path), "w", snapshot_interval_s=None) as profiler:
        with pytest.raises(ValueError, match="wandb.init"):
            lp_wandb.attach(profiler)
        with pytest.raises(ValueError, match="mlflow.start_run"):
            lp_mlflow.attach(profiler)
