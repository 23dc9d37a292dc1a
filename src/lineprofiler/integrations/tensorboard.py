"""TensorBoard: each snapshot interval's numbers as scalars (see :mod:`._metrics`).

    from lineprofiler.integrations import tensorboard
    tensorboard.attach(profiler, log_dir="runs/profile")

Writes with ``torch.utils.tensorboard.SummaryWriter``, or ``tensorboardX``'s where torch is not
installed, from the profiler's snapshot thread (every ``snapshot_interval_s``).
"""

from __future__ import annotations

from ._metrics import require, scalars

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _summary_writer_class() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter
    except ImportError:
        return require("tensorboardX", "tensorboard", "tensorboard").SummaryWriter


def attach(profiler: Any, log_dir: str | None = None, *, writer: Any = None) -> Any:
    """Write ``profiler``'s per-interval scalars to ``writer`` (a SummaryWriter), or to a new one
    on ``log_dir``; returns the writer (flushed after each interval, closed by the caller)."""
    if writer is None:
        writer = _summary_writer_class()(log_dir=log_dir)
    step = 0

    def export(snapshot: Any) -> None:
        nonlocal step
        step += 1
        for tag, value in scalars(snapshot).items():
            writer.add_scalar(tag, value, global_step=step)
        writer.flush()

    profiler.on_snapshot(export)
    return writer
