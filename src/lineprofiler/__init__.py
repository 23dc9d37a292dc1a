"""lineprofiler: hits and time per line of your project, and an always-on accounting layer.

The line layer lives in :mod:`lineprofiler.lines`; the accounting layer in
:mod:`lineprofiler.accounting`.
"""

from .lines import FunctionStats, LineProfiler, LineStats

__version__ = "0.1.0"

__all__ = ["FunctionStats", "LineProfiler", "LineStats", "__version__"]
