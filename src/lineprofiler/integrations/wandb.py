"""Weights & Biases: each snapshot interval's numbers as metrics (see :mod:`._metrics`).

    from lineprofiler.integrations import wandb as lp_wandb
    lp_wandb.attach(profiler, run=wandb.init(project="x"))

Logged with the run's ``log``, from the profiler's snapshot thread, against their own step
metric ``lineprofiler/elapsed_s`` (seconds since the profiler started), so that the charts
do not depend on the training loop's step.
"""

from __future__ import annotations

from ._metrics import PREFIX, require, scalars

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STEP_METRIC = f"{PREFIX}/elapsed_s"


def attach(profiler: Any, run: Any = None) -> Any:
    """Log ``profiler``'s per-interval metrics to ``run`` (``wandb.run`` when None); returns it."""
    wandb = require("wandb", "wandb", "wandb")
    run = run if run is not None else wandb.run
    if run is None:
        raise ValueError("lineprofiler.integrations.wandb.attach() needs a run: call wandb.init() first or pass run=")
    run.define_metric(STEP_METRIC)
    run.define_metric(f"{PREFIX}/*", step_metric=STEP_METRIC)

    def export(snapshot: Any) -> None:
        metrics = scalars(snapshot)
        if metrics:
            metrics[STEP_METRIC] = snapshot.elapsed_s
            run.log(metrics)

    profiler.on_snapshot(export)
    return run
