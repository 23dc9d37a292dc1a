"""lineprofiler: hits and time per line of your project, and an always-on accounting layer.

The line layer lives in :mod:`lineprofiler.lines`; the accounting layer in
:mod:`lineprofiler.accounting`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["FunctionStats", "LineProfiler", "LineStats", "__version__"]

if TYPE_CHECKING:
    from .lines import FunctionStats, LineProfiler, LineStats


def __getattr__(name: str) -> Any:
    # The line layer is imported on first use: every process of a training run imports
    # lineprofiler.accounting, and need not pay for the line profiler's import as well.
    if name in ("FunctionStats", "LineProfiler", "LineStats"):
        from . import lines

        return getattr(lines, name)
    raise AttributeError(f"module 'lineprofiler' has no attribute {name!r}")
