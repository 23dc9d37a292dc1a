"""``import with_line_profiler``: the distribution's name as an import, an alias of :mod:`lineprofiler`.

0.10.0 shipped this alias with the top-level names of ``lineprofiler`` and its ``accounting``
layer; they are the same objects here, every name of ``lineprofiler.__all__`` (0.11.0's IPython
hooks too). ``lineprofiler`` stays the documented name.
"""

from __future__ import annotations

from lineprofiler import __version__, accounting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from lineprofiler import (
        FunctionStats,
        LineProfiler,
        LineStats,
        load_ipython_extension,
        start_profiling,
        stop_profiling,
        unload_ipython_extension,
    )

__all__ = [
    "FunctionStats",
    "LineProfiler",
    "LineStats",
    "__version__",
    "accounting",
    "load_ipython_extension",
    "start_profiling",
    "stop_profiling",
    "unload_ipython_extension",
]

# Resolved through lineprofiler on first use, as lineprofiler imports the line layer late.
_LAZY = (
    "FunctionStats",
    "LineProfiler",
    "LineStats",
    "config",
    "load_ipython_extension",
    "start_profiling",
    "stop_profiling",
    "unload_ipython_extension",
)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import lineprofiler

        return getattr(lineprofiler, name)
    import sys

    from lineprofiler.accounting.legacy import TOP_LEVEL_REMOVED, removed_name_error

    raise removed_name_error("with_line_profiler", name, TOP_LEVEL_REMOVED.get(name), sys._getframe(1))
