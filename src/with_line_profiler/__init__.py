"""``import with_line_profiler``: the distribution's name as an import, an alias of :mod:`lineprofiler`.

0.10.0 shipped this alias with the top-level names of ``lineprofiler`` and its ``accounting``
layer; they are the same objects here. ``lineprofiler`` stays the documented name.
"""

from __future__ import annotations

from lineprofiler import __version__, accounting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from lineprofiler import FunctionStats, LineProfiler, LineStats

__all__ = [
    "FunctionStats",
    "LineProfiler",
    "LineStats",
    "__version__",
    "accounting",
]

_LINE_LAYER = ("FunctionStats", "LineProfiler", "LineStats")


def __getattr__(name: str) -> Any:
    # The line layer is imported on first use, as lineprofiler does.
    if name in _LINE_LAYER:
        import lineprofiler

        return getattr(lineprofiler, name)
    import sys

    from lineprofiler.accounting.legacy import TOP_LEVEL_REMOVED, removed_name_error

    # 0.10.0's start_profiling and stop_profiling say what replaced them.
    raise removed_name_error("with_line_profiler", name, TOP_LEVEL_REMOVED.get(name), sys._getframe(1))
