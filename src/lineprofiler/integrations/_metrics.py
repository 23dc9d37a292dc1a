"""The scalars an exporter writes at each snapshot: per phase path (tags
``lineprofiler/<phase path>/<metric>``), from the interval since the previous snapshot.

* ``time_share``: the phase's wall time in the interval over the interval (open entries count
  as far as they got; threads add up, so above 1.0 means several threads were in it);
* ``p50_ms``, ``p99_ms``: of the entries completed in the interval;
* ``wait_pct``: the share of its wall time off the CPU (where the CPU time was measured);
* ``<counter>_per_s``: each counter's rate; ``entries_per_s``: completed entries' rate.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

PREFIX = "lineprofiler"


def require(module: str, extra: str, what: str) -> ModuleType:
    """``module`` imported, or one ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"lineprofiler.integrations.{what}.attach() needs {module.split('.')[0]} "
            f"({error}): pip install 'with-line-profiler[{extra}]'"
        ) from None


def scalars(snapshot: Any, prefix: str = PREFIX) -> dict[str, float]:
    """The interval's scalars of an ``on_snapshot`` snapshot, by tag."""
    seconds = snapshot.interval_s
    out: dict[str, float] = {}
    if seconds <= 0:
        return out
    for path, stats in sorted(snapshot.interval.items()):
        tag = f"{prefix}/{'/'.join(path) or '(root)'}"
        if path:
            out[f"{tag}/time_share"] = (stats.wall_ns + stats.open_ns) / (seconds * 1e9)
        if stats.calls > 0:
            out[f"{tag}/entries_per_s"] = stats.calls / seconds
            out[f"{tag}/p50_ms"] = stats.hist.quantile(0.5) / 1e6
            out[f"{tag}/p99_ms"] = stats.hist.quantile(0.99) / 1e6
            if stats.wall_ns > 0 and not stats.cpu_missing:
                out[f"{tag}/wait_pct"] = 100.0 * stats.wait_ns / stats.wall_ns
        for name, n in sorted(stats.counters.items()):
            out[f"{tag}/{name}_per_s"] = n / seconds
    return out
