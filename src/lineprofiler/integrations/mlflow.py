"""MLflow: each snapshot interval's numbers as metrics of a run (see :mod:`._metrics`).

    from lineprofiler.integrations import mlflow as lp_mlflow
    with mlflow.start_run():
        lp_mlflow.attach(profiler)

MLflow's active run belongs to the thread that started it, and the metrics are logged from
the profiler's snapshot thread: so the run is taken at ``attach`` (the active one, or
``run_id=``) and written through an ``MlflowClient``. Characters MLflow refuses in a key
become ``_``.
"""

from __future__ import annotations

import re
import time

from ._metrics import require, scalars

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BATCH = 1000  # the most metrics MLflow takes in one log_batch
_REFUSED = re.compile(r"[^A-Za-z0-9_\-. /]")


def attach(profiler: Any, run_id: str | None = None, *, client: Any = None) -> str:
    """Log ``profiler``'s per-interval metrics to the run ``run_id`` (the active run when None);
    returns the run's id."""
    mlflow = require("mlflow", "mlflow", "mlflow")
    if run_id is None:
        active = mlflow.active_run()
        if active is None:
            raise ValueError(
                "lineprofiler.integrations.mlflow.attach() needs a run: call mlflow.start_run() first or pass run_id="
            )
        run_id = active.info.run_id
    client = client if client is not None else mlflow.tracking.MlflowClient()
    metric_class = require("mlflow.entities", "mlflow", "mlflow").Metric
    step = 0

    def export(snapshot: Any) -> None:
        nonlocal step
        step += 1
        now_ms = int(time.time() * 1000)
        values = scalars(snapshot).items()
        metrics = [metric_class(_REFUSED.sub("_", tag), value, now_ms, step) for tag, value in values]
        for first in range(0, len(metrics), _BATCH):
            client.log_batch(run_id, metrics=metrics[first : first + _BATCH])

    profiler.on_snapshot(export)
    return run_id
