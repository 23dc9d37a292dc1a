"""The always-on accounting layer: phases, counters, histograms, samples, worker files.

``from lineprofiler.accounting import Profiler``; see ``docs/accounting.md``.
"""

from .profiler import Profiler

__all__ = ["Profiler"]
