"""lineprofiler: hits and time per line of your project, and an always-on accounting layer.

The line layer lives in :mod:`lineprofiler.lines`; the accounting layer in
:mod:`lineprofiler.accounting`. ``%load_ext lineprofiler`` loads the IPython magics
``%lprofile`` and ``%%lprofile`` (:mod:`lineprofiler.integrations.ipython`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import

__version__ = "0.11.0"

__all__ = [
    "FunctionStats",
    "LineProfiler",
    "LineStats",
    "__version__",
    "load_ipython_extension",
    "start_profiling",
    "stop_profiling",
    "unload_ipython_extension",
]

if TYPE_CHECKING:
    from typing import Any

    from .accounting.legacy import start_profiling, stop_profiling
    from .lines import FunctionStats, LineProfiler, LineStats


# 0.10.0's ambient line profiling, kept for its code (lineprofiler.accounting.legacy).
_AMBIENT = ("start_profiling", "stop_profiling")
# 0.10.0's top-level names that 0.11.0 lacks: asking for one says what to use instead.
_REMOVED_IN_0_11: tuple[str, ...] = ()


def __getattr__(name: str) -> Any:
    # The line layer is imported on first use: every process of a training run imports
    # lineprofiler.accounting, and need not pay for the line profiler's import as well.
    if name in ("FunctionStats", "LineProfiler", "LineStats"):
        from . import lines

        return getattr(lines, name)
    if name == "config":  # 0.10.0's module of the [tool.lineprofiler] table
        import importlib

        return importlib.import_module(".config", __name__)  # `from . import` would ask here again
    if name in _AMBIENT:
        from .accounting import legacy

        return getattr(legacy, name)
    if name in _REMOVED_IN_0_11:
        import sys

        from .accounting.legacy import TOP_LEVEL_REMOVED, removed_name_error

        raise removed_name_error("lineprofiler", name, TOP_LEVEL_REMOVED[name], sys._getframe(1))
    raise AttributeError(f"module 'lineprofiler' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lineprofiler``: registers ``%lprofile`` and ``%%lprofile``."""
    from .integrations.ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext lineprofiler``."""
    from .integrations.ipython import unload_ipython_extension as unload

    unload(ipython)
