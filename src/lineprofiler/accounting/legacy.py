"""0.10.0's API where 0.11.0 changed it: the accounting layer's module-level functions, on top
of :class:`~lineprofiler.accounting.profiler.Profiler` (which takes 0.10.0's keywords itself, and
keeps the installed profiler these functions resolve to); the top level's
``start_profiling``/``stop_profiling``, on top of :class:`~lineprofiler.LineProfiler`; and the
one-line errors for the 0.10.0 names 0.11.0 lacks (``lineprofiler.accounting``'s and the top
level's). The table of every name is ``docs/migrating-from-0.10.md``.

0.10.0 let library code call ``lineprofiler.accounting.phase(name)`` and ``count(name)``
without holding a profiler: they resolve to the one profiler installed in the process
(``Profiler(..., install=True)`` or ``start()``) and do nothing when none is. Those calls sit
in code that is often run unprofiled, so they are no-ops that never raise: a guest in the
user's process must not break it.

What 0.11.0 has not built is either accepted with a one-time warning saying what is lost, or
refused with one line naming what to use instead; never a quietly different result. 0.10.0
names with no counterpart at all raise :class:`AttributeError` from the module ``__getattr__``
with the same kind of line.

Imported by ``import lineprofiler.accounting``, so it imports only what that already loads; the
rest (warnings, the report) is imported by the functions that need it.
"""

from __future__ import annotations

import os

from . import _phases
from . import profiler as _core  # _core._installed: the installed profiler, read at each call
from .profiler import Profiler, install_profiler, installed_profiler, uninstall_profiler

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

    from ..lines import LineProfiler

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

_ENV_PROFILE = "LINEPROFILER_PROFILE"
_REPORT_FORMATS = ("text", "json", "html")
_TRACE_SECTION = (
    "Profiler(trace=True) keeps every phase entry as a span (the worker file's 'trace' section names "
    "its spans file; lineprofiler export RUN_DIR --perfetto PATH writes a timeline)"
)


def _warn_once(key: str, message: str) -> None:
    from ._options import warn_once  # not at import: only a call that went wrong gets here

    warn_once(key, message, stacklevel=4)


def _env_says_on(name: str) -> bool:
    # 0.11.0's spelling of on and off, but absent or empty means off, as in 0.10.0's start().
    from .._env_switch import env_says_on

    return env_says_on(name, empty_is_on=False)


# ------------------------------------------------------------------ the installed profiler

_NOOP = _phases.Noop()  # phase() and count() when none is installed, in C
_NULL_PHASE = _NOOP.phase("none")  # what a phase() that cannot record returns


def start(run_dir: str | os.PathLike[str] | None = None, role: str | None = None, **kwargs: Any) -> Profiler:
    """Construct, install and return a :class:`Profiler`; :func:`stop` closes it.

    Safe to leave in place, as in 0.10.0: without ``enabled=`` or ``run_dir=`` it records only
    when ``LINEPROFILER_PROFILE`` says so (a parent profiler exports it to its children), and is
    otherwise a disabled profiler that writes nothing. (``Profiler()`` itself is on by default.)
    """
    if kwargs.get("enabled") is None:
        kwargs["enabled"] = run_dir is not None or _env_says_on(_ENV_PROFILE)
    return Profiler(run_dir, role, install=True, **kwargs)


def stop() -> None:
    """Close the installed profiler, if there is one."""
    profiler = _core._installed
    if profiler is not None:
        profiler.close()


def phase(
    name: str, io: bool = False, sync: bool = False, sample: float = 1.0, async_work: bool = False, gpu: bool = False
) -> Any:
    """A phase of the installed profiler, or a no-op one when none is installed. Never raises.

    ``sample`` other than 1.0 and ``async_work=True`` are accepted with a one-time warning:
    0.11.0 measures every entry (exact, where 0.10.0 scaled an estimate) and marks nothing.
    """
    profiler = _core._installed
    if profiler is None:
        try:
            return _NOOP.phase(name)
        except Exception:  # noqa: BLE001 - it checks the name's type; nothing to record anyway
            return _NULL_PHASE
    if sample != 1.0 or async_work:
        _warn_once(
            "phase-options",
            "phase(sample=..., async_work=...) are accepted and ignored: 0.11.0 measures every entry "
            "and does not mark asynchronous phases",
        )
    try:
        return profiler.phase(name, io, sync, gpu)
    except Exception:  # noqa: BLE001 - a bad name must not break the host program; nothing is recorded
        _warn_once("phase-error", f"phase({name!r}) recorded nothing: phase names are non-empty str")
        return _NULL_PHASE


def count(name: str, n: int = 1) -> None:
    """Add ``n`` to the counter ``name`` on the installed profiler; a no-op when none is. Never raises."""
    profiler = _core._installed
    if profiler is not None:
        try:
            profiler.count(name, n)
        except Exception:  # noqa: BLE001 - as phase()
            _warn_once("count-error", f"count({name!r}, {n!r}) recorded nothing: a str name and an int n")


def current() -> str:
    """The path of the innermost phase open in this thread on the installed profiler, or ``""``."""
    profiler = _core._installed
    return "" if profiler is None else profiler.current_phase()


def signal_ready(channel: str, key: object) -> None:
    """:meth:`Profiler.signal` on the installed profiler; a no-op with none installed."""
    profiler = _core._installed
    if profiler is not None:
        profiler.signal(channel, key)


def wait_on(channel: str, key: object) -> None:
    """:meth:`Profiler.wait_on` on the installed profiler; a no-op with none installed."""
    profiler = _core._installed
    if profiler is not None:
        profiler.wait_on(channel, key)


def trace_begin(channel: str, key: object) -> None:
    """:meth:`Profiler.trace_begin` on the installed profiler; a no-op with none installed."""
    profiler = _core._installed
    if profiler is not None:
        profiler.trace_begin(channel, key)


def trace_mark(channel: str, key: object, name: str, sample: float = 1.0) -> None:
    """:meth:`Profiler.trace_mark` on the installed profiler; a no-op with none installed."""
    profiler = _core._installed
    if profiler is not None:
        profiler.trace_mark(channel, key, name, sample)


def trace_end(channel: str, key: object) -> None:
    """:meth:`Profiler.trace_end` on the installed profiler; a no-op with none installed."""
    profiler = _core._installed
    if profiler is not None:
        profiler.trace_end(channel, key)


# ------------------------------------------------------------------ reports


def write_report(run_dir: str | os.PathLike[str], path: str | os.PathLike[str], format: str = "text") -> str:  # noqa: A002 - 0.10.0's name
    """Write the report of ``run_dir`` to ``path`` as ``"text"``, ``"json"`` or ``"html"``; returns the path.

    The same report as ``lineprofiler report RUN_DIR`` (``--json``, ``--html``), built in this
    process. Parent folders of ``path`` are created; the file is written whole (a temporary file
    renamed over it; a FIFO or a device is written into). Raises ``ValueError`` for another format and
    :class:`lineprofiler.report.read.merge.ReportError` (one line) when nothing can be reported.
    """
    if format not in _REPORT_FORMATS:
        raise ValueError(f"format must be 'text', 'json' or 'html', got {format!r}")
    from ..report.compute.build import build_report
    from ..report.read.merge import load_run
    from ..report.render import render, write

    run = load_run(os.fspath(run_dir))
    return write(path, render(build_report(run), format, caveats=run.caveats), format, parents=True)


def write_trace(run_dir: str | os.PathLike[str], path: str | os.PathLike[str], format: str = "html") -> str:  # noqa: A002
    """Write the story of a traced run (``Profiler(trace=True)``) to ``path`` as ``"html"`` (the
    lanes), ``"json"`` or ``"text"``; returns the path. The same as ``lineprofiler trace RUN_DIR``
    (``--html``, ``--json``). Raises ``ValueError`` for another format and
    :class:`lineprofiler.report.read.merge.ReportError` (one line) when no worker recorded a trace."""
    if format not in _REPORT_FORMATS:
        raise ValueError(f"format must be 'text', 'json' or 'html', got {format!r}")
    from ..report.compute.story.assemble import run_story
    from ..report.read.merge import load_run
    from ..report.render import render, write

    run = load_run(os.fspath(run_dir), no_samples=True)
    result, caveats = run_story(run)
    return write(
        path, render(result, format, caveats=caveats, title=f"lineprofiler trace: {run.name}"), format, parents=True
    )


# ------------------------------------------------------------------ 0.10.0's top level: ambient line profiling

_ENV_LINES_ENABLED = "LINEPROFILER_ENABLED"
_ambient_lines: LineProfiler | None = None
"""The line profiler :func:`start_profiling` enabled and :func:`stop_profiling` stops."""


def start_profiling(
    project_folder: str | os.PathLike[str] | None = None, *, enabled: bool | None = None
) -> LineProfiler:
    """``lineprofiler.start_profiling``: enable a :class:`~lineprofiler.LineProfiler` until :func:`stop_profiling`.

    Safe to leave in place, as in 0.10.0: it records only when ``enabled=True``, or with
    ``enabled`` left ``None`` when ``LINEPROFILER_ENABLED`` is set to something other than
    ``0``, ``false``, ``no`` or ``off``; otherwise it returns a profiler never enabled. The project
    folder defaults to the git root above the calling file (else that file's folder). Called
    again before :func:`stop_profiling`, it warns and returns the profiler already recording.
    The project's ``[tool.lineprofiler]`` table (``include``, ``exclude``, ``functions``: see
    :mod:`lineprofiler.config`) narrows what is recorded, as in 0.10.0.
    """
    global _ambient_lines  # noqa: PLW0603 - one ambient profiler per process, as in 0.10.0
    import sys
    import warnings

    if _ambient_lines is not None:
        warnings.warn(
            "start_profiling() was already called: returning the profiler already recording; "
            "call stop_profiling() first to start another",
            RuntimeWarning,
            stacklevel=2,
        )
        return _ambient_lines
    from ..lines import LineProfiler, find_project_root

    if project_folder is None:
        caller = sys._getframe(1).f_code.co_filename
        start_folder = os.path.dirname(os.path.abspath(caller)) if os.path.isfile(caller) else os.getcwd()
        project_folder = find_project_root(start_folder)
    from ..config import read_tool_table

    config = read_tool_table(find_project_root(project_folder))
    for problem in config.problems:
        warnings.warn(problem, RuntimeWarning, stacklevel=2)
    profiler = LineProfiler(project_folder, config=config)
    if enabled if enabled is not None else _env_says_on(_ENV_LINES_ENABLED):
        profiler.enable()
        _ambient_lines = profiler
    return profiler


def stop_profiling(print_stats: bool = True) -> LineProfiler | None:
    """Stop the profiler :func:`start_profiling` enabled; print the slowest lines unless
    ``print_stats=False``; return it (``None`` when none was recording)."""
    global _ambient_lines  # noqa: PLW0603 - see start_profiling
    profiler = _ambient_lines
    if profiler is None:
        return None
    _ambient_lines = None
    profiler.disable()
    if print_stats:
        profiler.print_global_top_stats()
    return profiler


# ------------------------------------------------------------------ names 0.11.0 does not have

_USE_REPORT = "read a run with write_report(run_dir, path, format='json') or `lineprofiler report RUN_DIR --json`"
REMOVED: dict[str, str] = {
    "merge_run": _USE_REPORT,
    "render": "write_report(run_dir, path) writes the text report, `lineprofiler report RUN_DIR` prints it",
    "report_as_dict": _USE_REPORT,
    "compare": "`lineprofiler compare RUN_A RUN_B --json` (or --html PATH)",
    "render_comparison": "`lineprofiler compare RUN_A RUN_B`",
    "analyse": "the report's RESOURCES section (`lineprofiler report RUN_DIR`) analyses the samples",
    "merge_trees": _USE_REPORT + " (the report merges every worker's tree)",
    "lifecycle_segments": "`lineprofiler trace RUN_DIR --json` (story.lifecycles: each channel's intervals)",
    "overlap_ns": "`lineprofiler trace RUN_DIR --json` (the story's spans and lifecycles)",
    "Backend": "pass backend='torch', 'viztracer' or 'lines' as a str",
    "DurationHistogram": "the fixed buckets of lineprofiler.runfiles.histogram (EDGES, bucket_index)",
    "PhaseStats": _USE_REPORT,
    "PhaseTree": _USE_REPORT,
    "MergedRun": _USE_REPORT,
    "WorkerSnapshot": _USE_REPORT,
    "PhaseDelta": "`lineprofiler compare RUN_A RUN_B --json`",
    "ResourceSampler": "Profiler(sample_interval_s=...) runs the sampler",
    "Sample": _USE_REPORT + " (samples are in the report's RESOURCES)",
    "SampleAnalysis": _USE_REPORT + " (samples are in the report's RESOURCES)",
    "Span": _TRACE_SECTION,
    "TraceBuffer": _TRACE_SECTION,
    "WorkerTrace": _TRACE_SECTION,
}


TOP_LEVEL_REMOVED: dict[str, str] = {}
"""0.10.0's names of ``lineprofiler`` itself (and so of ``with_line_profiler``) that 0.11.0 lacks."""


def removed_name_error(module: str, name: str, instead: str | None, importer: FrameType | None) -> Exception:
    """What a module ``__getattr__`` raises for ``name``: ``AttributeError``, or ``ImportError``
    when ``importer`` (the frame that asked) is running ``from module import name``.

    The ``ImportError`` is for that statement: it replaces any ``AttributeError`` from
    ``__getattr__`` with a bare "cannot import name", which would lose the line saying what to
    use instead. ``hasattr()`` and ``getattr(..., default)`` still see an ``AttributeError``.
    """
    if instead is None:
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    message = f"{module}.{name} (0.10.0) is not in 0.11.0; instead: {instead}"
    if importer is not None and _runs_from_import(importer):
        return ImportError(message, name=module)
    return AttributeError(message, name=name, obj=None)


def _runs_from_import(frame: FrameType) -> bool:
    try:
        import opcode

        return frame.f_code.co_code[frame.f_lasti] == opcode.opmap["IMPORT_FROM"]
    except Exception:  # noqa: BLE001 - an interpreter laid out otherwise gets the AttributeError
        return False


def __getattr__(name: str) -> Any:
    import sys

    raise removed_name_error("lineprofiler.accounting", name, REMOVED.get(name), sys._getframe(1))
