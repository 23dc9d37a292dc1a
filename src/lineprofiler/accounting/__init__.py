"""The always-on accounting layer: phases, counters, histograms, samples, worker files.

``from lineprofiler.accounting import Profiler``; see ``docs/accounting.md``. The module-level
functions (``start``, ``stop``, ``phase``, ``count``, ``write_report``, ...: :mod:`.legacy`) and
the 0.10.0 keywords ``Profiler`` also takes are 0.10.0's API (docs/migrating-from-0.10.md).
"""

# A 0.10.0 name that 0.11.0 lacks raises one line saying what to use instead.
from .legacy import __getattr__ as __getattr__
from .legacy import (
    count,
    current,
    install_profiler,
    installed_profiler,
    phase,
    signal_ready,
    start,
    stop,
    trace_begin,
    trace_end,
    trace_mark,
    uninstall_profiler,
    wait_on,
    write_report,
    write_trace,
)
from .profiler import Profiler

__all__ = [
    "Profiler",
    "count",
    "current",
    "install_profiler",
    "installed_profiler",
    "phase",
    "signal_ready",
    "start",
    "stop",
    "trace_begin",
    "trace_end",
    "trace_mark",
    "uninstall_profiler",
    "wait_on",
    "write_report",
    "write_trace",
]
