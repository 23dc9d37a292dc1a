"""The profiler's arguments, checked once and here only, before anything is touched.

A wrong type raises TypeError and a wrong value ValueError, with the argument's name first.
:class:`~.windows.trace_window.Window` uses the same checks for the backend, the window and its phase, so
``Profiler(...)`` and ``Window(...)`` refuse the same things with the same exceptions.
"""

from __future__ import annotations

import os
import sys

from .._record import Record

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: The heavy profilers a window can run (``backend=``): the values of :class:`.windows.Backend`.
BACKENDS = ("torch", "viztracer", "lines")
#: What ``auto=`` takes: the library whose loop is recorded with no phase() calls (:mod:`.auto_torch`).
AUTO_CHOICES = ("torch",)
MAX_CAP = 1_000_000
SAMPLE_INTERVAL_RANGE_S = (0.001, 86400.0)


#: Spans a traced worker keeps (0.10.0's default), and the most it may ask for (40 bytes each,
#: twice: the private ring and its copy in the live file).
DEFAULT_TRACE_CAPACITY = 200_000
MAX_TRACE_CAPACITY = 10_000_000
#: Links (signal/wait_on) kept.
TRACE_LINKS_CAPACITY = 50_000

#: Phase-occupancy samples per second at most (the sampler thread reads every thread each time).
MAX_TIMELINE_HZ = 1000.0

def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def parse_backend(value: object) -> str | None:
    """``None``, ``""`` or ``"none"`` -> None; a backend's name in any case, or an enum member
    whose value is one (``Backend.TORCH``) -> ``"torch"`` / ``"viztracer"``."""
    if value is None:
        return None
    text = getattr(value, "value", value)  # an enum of str: its value is the name
    if not isinstance(text, str):
        raise TypeError(f"backend must be a str, a windows.Backend or None, not {type(value).__name__}")
    name = text.strip().lower()
    if name in ("", "none"):
        return None
    if name not in BACKENDS:
        choices = ", ".join(repr(b) for b in BACKENDS)
        raise ValueError(f"backend must be one of {choices} or None, not {text!r}")
    return name


def check_window(value: Any) -> tuple[int, int]:
    """``backend_window``: a ``(start, stop)`` pair of ints with ``1 <= start < stop``."""
    try:
        start, stop = value
    except (TypeError, ValueError):
        raise TypeError(f"backend_window must be a (start, stop) pair of ints, not {value!r}") from None
    if not (_is_int(start) and _is_int(stop)):
        raise TypeError(f"backend_window must be a (start, stop) pair of ints, not {value!r}")
    if start == stop >= 1:
        raise ValueError(
            f"backend_window must satisfy 1 <= start < stop, not {value!r}: the stop entry is not profiled "
            f"(0.10.0's ({start}, {stop}) profiled entry {start} alone: pass ({start}, {stop + 1}))"
        )
    if not 1 <= start < stop:
        raise ValueError(f"backend_window must satisfy 1 <= start < stop, not {value!r}")
    return start, stop


def check_window_phase(value: object) -> str:
    """``window_phase``: a phase's own name (its last path part), which cannot hold a ``/``."""
    if not isinstance(value, str):
        raise TypeError(f"window_phase must be a str, not {type(value).__name__}")
    if not value or "/" in value:
        raise ValueError(f"window_phase must be a phase's own name (no '/'), not {value!r}")
    return value


def check_lines_project(value: object, backend: str | None) -> str | None:
    """``lines_project``: None, or an existing folder (absolute, symlinks resolved), and only
    with ``backend="lines"``."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"lines_project must be a str, a path or None, not {type(value).__name__}")
    if backend != "lines":
        raise ValueError("lines_project needs backend='lines' or line_sampling")
    text = os.fspath(value)
    if not isinstance(text, str) or not text:
        raise ValueError(f"lines_project must name a folder, not {value!r}")
    if not os.path.isdir(text):
        raise ValueError(f"lines_project must be an existing folder, not {text!r}")
    return os.path.realpath(text)


#: The environment variable that turns line sampling on in every process of a run (a fraction).
ENV_LINE_SAMPLING = "LINEPROFILER_LINE_SAMPLING"


def check_line_sampling(value: object) -> float | None:
    """``line_sampling=``: None (then ``LINEPROFILER_LINE_SAMPLING``, else off), or a fraction
    in (0, 0.5]; 0 is off. TypeError/ValueError for a wrong argument; a wrong value of the
    variable warns once and leaves sampling off (nothing about the environment raises)."""
    if value is None:
        text = os.environ.get(ENV_LINE_SAMPLING, "").strip()
        if not text:
            return None
        try:
            return check_line_sampling(float(text))
        except ValueError:
            warn_once("line_sampling_env", f"{ENV_LINE_SAMPLING}={text!r} is no fraction within 0..0.5: not sampling")
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"line_sampling must be a number or None, not {type(value).__name__}")
    if value == 0:
        return None
    if not 0 < value <= 0.5:
        raise ValueError(f"line_sampling must be within 0 (off)..0.5, got {value!r}")
    return float(value)


class Options(Record):
    """What a ``Profiler`` was asked for, checked (``run_dir`` and ``role`` as given)."""

    __slots__ = (
        "run_dir", "role", "enabled", "measure_cpu", "backend", "backend_window", "window_phase", "lines_project",
        "annotate", "snapshot_interval_s", "sample_interval_s", "timeline_hz", "max_paths", "max_counters",
        "trace", "trace_capacity", "auto_trace", "source", "auto", "line_sampling",
    )

    def __init__(
        self,
        *,
        run_dir: str | os.PathLike[str] | None,
        role: str | None,
        enabled: bool | None,
        measure_cpu: bool,
        backend: str | None,
        backend_window: tuple[int, int] | None,
        window_phase: str | None,
        lines_project: str | None,
        annotate: bool,
        snapshot_interval_s: float | None,
        sample_interval_s: float | None,
        timeline_hz: float,
        max_paths: int,
        max_counters: int,
        trace: bool = False,
        trace_capacity: int = DEFAULT_TRACE_CAPACITY,
        auto_trace: tuple[str, ...] | None = None,
        source: dict[str, Any] | None = None,
        auto: str | None = None,
        line_sampling: float | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.role = role
        self.enabled = enabled
        self.measure_cpu = measure_cpu
        self.backend = backend
        self.backend_window = backend_window
        self.window_phase = window_phase
        #: ``backend="lines"``: the project folder whose lines are profiled, absolute; None for
        #: the default (decided in the process, see ``windows.lines_window.project_folder``).
        self.lines_project = lines_project
        self.annotate = annotate
        self.snapshot_interval_s = snapshot_interval_s
        self.sample_interval_s = sample_interval_s
        self.timeline_hz = timeline_hz
        self.max_paths = max_paths
        self.max_counters = max_counters
        #: Every closed phase entry kept as a span, in a ring of ``trace_capacity``.
        self.trace = trace
        self.trace_capacity = trace_capacity
        #: ``trace="auto"``: the qualified-name globs of the functions traced (empty: all of the
        #: project's); None: off.
        self.auto_trace = auto_trace
        #: 0.10.0's ``source=``: the worker file's ``source`` as given, instead of asking git.
        self.source = source
        #: ``auto="torch"``: a training loop's parts recorded as phases (:mod:`.auto_torch`); None: off.
        self.auto = auto
        #: ``line_sampling=``: the fraction of wall time the sampled line windows cover; None: off.
        self.line_sampling = line_sampling

    def config(self) -> dict[str, Any]:
        """The worker file's ``config`` keys that come from the arguments."""
        return {
            "measure_cpu": self.measure_cpu,
            "window_phase": self.window_phase,
            "backend": self.backend,
            "backend_window": list(self.backend_window) if self.backend_window else None,
            "lines_project": self.lines_project,
            "annotate": self.annotate,
            "max_paths": self.max_paths,
            "max_counters": self.max_counters,
        }


def check_options(
    *,
    run_dir: Any,
    role: Any,
    enabled: Any,
    measure_cpu: Any,
    backend: Any,
    backend_window: Any,
    window_phase: Any,
    annotate: Any,
    snapshot_interval_s: Any,
    sample_interval_s: Any,
    max_paths: Any,
    max_counters: Any,
    lines_project: Any = None,
    timeline_hz: Any = 10.0,
    trace: Any = False,
    trace_capacity: Any = None,
    auto_trace: Any = False,
    trace_functions: Any = None,
    source: Any = None,
    auto: Any = None,
    line_sampling: Any = None,
) -> Options:
    """Every ``Profiler`` argument at once; raises TypeError/ValueError for the first wrong one.

    A backend needs its window and the phase that counts it; a window needs a backend.
    ``window_phase`` alone is fine: the report also uses it as the ITERATIONS loop of the roles
    whose profilers set it.
    """
    if run_dir is not None and not isinstance(run_dir, (str, os.PathLike)):
        raise TypeError(f"run_dir must be a str, a path or None, not {type(run_dir).__name__}")
    if role is not None and not isinstance(role, str):
        raise TypeError(f"role must be a str or None, not {type(role).__name__}")
    if enabled is not None:
        check_bool("enabled", enabled)
    check_bool("measure_cpu", measure_cpu)
    check_bool("annotate", annotate)
    backend_name = parse_backend(backend)
    window = None if backend_window is None else check_window(backend_window)
    if window_phase is not None and not isinstance(window_phase, str):
        raise TypeError(f"window_phase must be a str or None, not {type(window_phase).__name__}")
    if backend_name is None:
        if window is not None:
            raise ValueError("backend_window needs a backend ('torch', 'viztracer' or 'lines')")
    elif window is None:
        raise ValueError(f"backend={backend_name!r} needs backend_window=(start, stop)")
    elif window_phase is None:
        raise ValueError(
            f"backend={backend_name!r} needs window_phase: the phase whose entries open and close the window"
        )
    else:
        check_window_phase(window_phase)
    sampling = check_line_sampling(line_sampling)
    project = check_lines_project(lines_project, "lines" if sampling else backend_name)
    if snapshot_interval_s is not None:
        if not _is_number(snapshot_interval_s):
            raise TypeError("snapshot_interval_s must be a number or None")
        if not snapshot_interval_s > 0:
            raise ValueError(f"snapshot_interval_s must be positive, got {snapshot_interval_s!r}")
    if sample_interval_s is not None:
        if not _is_number(sample_interval_s):
            raise TypeError("sample_interval_s must be a number or None")
        low, high = SAMPLE_INTERVAL_RANGE_S
        if not low <= sample_interval_s <= high:
            raise ValueError(f"sample_interval_s must be within {low}..{high:g} seconds, got {sample_interval_s!r}")
    if not _is_number(timeline_hz):
        raise TypeError("timeline_hz must be a number")
    if not 0 <= timeline_hz <= MAX_TIMELINE_HZ:
        raise ValueError(f"timeline_hz must be within 0 (off)..{MAX_TIMELINE_HZ:g}, got {timeline_hz!r}")
    for label, cap in (("max_paths", max_paths), ("max_counters", max_counters)):
        if not _is_int(cap):
            raise TypeError(f"{label} must be an int")
        if not 1 <= cap <= MAX_CAP:
            raise ValueError(f"{label} must be within 1..{MAX_CAP}, got {cap}")
    check_bool("trace", trace)
    capacity = DEFAULT_TRACE_CAPACITY if trace_capacity is None else trace_capacity
    if not _is_int(capacity):
        raise TypeError("trace_capacity must be an int")
    if not 1 <= capacity <= MAX_TRACE_CAPACITY:
        raise ValueError(f"trace_capacity must be within 1..{MAX_TRACE_CAPACITY}, got {capacity}")
    if trace_functions is not None and (
        isinstance(trace_functions, str) or not all(isinstance(g, str) for g in trace_functions)
    ):
        raise TypeError("trace_functions must be a list of qualified-name globs (str)")
    if source is not None and not isinstance(source, dict):
        raise TypeError(f"source must be a dict or None, not {type(source).__name__}")
    if auto is not None and auto not in AUTO_CHOICES:
        raise ValueError(f"auto must be None or one of {', '.join(map(repr, AUTO_CHOICES))}, not {auto!r}")
    return Options(
        run_dir=run_dir,
        role=role,
        enabled=enabled,
        measure_cpu=measure_cpu,
        backend=backend_name,
        backend_window=window,
        window_phase=window_phase,
        lines_project=project,
        annotate=annotate,
        snapshot_interval_s=None if snapshot_interval_s is None else float(snapshot_interval_s),
        sample_interval_s=None if sample_interval_s is None else float(sample_interval_s),
        timeline_hz=float(timeline_hz),
        max_paths=max_paths,
        max_counters=max_counters,
        trace=trace,
        trace_capacity=capacity,
        auto_trace=tuple(trace_functions or ()) if auto_trace else None,
        source=None if source is None else dict(source),
        auto=auto,
        line_sampling=sampling,
    )


# ------------------------------------------------------------------ 0.10.0's keywords

_ENV_TRACE = "LINEPROFILER_TRACE"
_ENV_RUN_ID = "LINEPROFILER_RUN_ID"  # identity.ENV_RUN_ID, which this module does not import
_TRACE_ON = ("1", "true", "phases", "on", "yes")
_TRACE_AUTO = ("auto", "functions")
_TRACE_OFF = ("0", "false", "off", "no", "")
_FUNCTIONS_WITHOUT_AUTO = "trace_functions= narrows trace='auto' only: without it, it is not used"

# Printed once per process and kind: a warning per call would flood a training loop.
_warned: set[str] = set()


def warn_once(key: str, message: str, *, stacklevel: int = 3) -> None:
    """A RuntimeWarning the first time ``key`` is met in this process; never raises."""
    if key in _warned:
        return
    _warned.add(key)
    import warnings

    try:
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)
    except Exception:  # noqa: BLE001 - under -W error a warning raises; a guest never raises into its host
        pass


def trace_mode(trace: object) -> str:
    """0.10.0's ``trace=`` (or ``LINEPROFILER_TRACE`` when None) as ``"off"``, ``"phases"`` or
    ``"auto"``; a value it would refuse is refused, naming the ones it takes."""
    if trace is None:
        trace = os.environ.get(_ENV_TRACE, "")
    if trace is True or trace is False:
        return "phases" if trace else "off"
    text = str(trace).strip().lower()
    for mode, spellings in (("phases", _TRACE_ON), ("auto", _TRACE_AUTO), ("off", _TRACE_OFF)):
        if text in spellings:
            return mode
    known = ", ".join(_TRACE_ON + _TRACE_OFF[:-1])
    raise ValueError(f"trace must be True, False, 'auto' or one of {known}; got {trace!r}")


def positional_error(given: int) -> TypeError:
    """``Profiler()`` given more than ``run_dir`` and ``role`` by position: 0.10.0's third and
    fourth positional arguments were ``run_id`` and ``enabled``, so no other reading is safe."""
    return TypeError(
        f"Profiler() takes only run_dir and role by position ({given} positional arguments given): pass "
        "the others by keyword, as Profiler(run_dir, role, run_id=..., enabled=..., measure_cpu=...) "
        "(0.10.0's third and fourth positional arguments were run_id and enabled)"
    )


def check_010_keywords(thread_names: object, run_id: object, trace: object) -> str:
    """Refuse what 0.10.0 code passes that 0.11.0 cannot honour; the trace mode of ``trace``."""
    if thread_names:
        raise NotImplementedError(
            "Profiler(thread_names=True) is not built in 0.11.0: open a phase named after the thread "
            "yourself, `with profiler.phase(threading.current_thread().name):`"
        )
    if run_id is not None and (not isinstance(run_id, str) or not run_id):
        raise TypeError(f"run_id must be a non-empty str, got {run_id!r}")
    return trace_mode(trace)


def export_run_id(run_id: str | None) -> Callable[[], None]:
    """Set ``LINEPROFILER_RUN_ID`` to ``run_id`` (0.10.0's ``run_id=``; nothing when None);
    returns what puts the environment back as it was."""
    inherited = os.environ.get(_ENV_RUN_ID)
    if run_id is not None:
        os.environ[_ENV_RUN_ID] = run_id

    def undo() -> None:
        if run_id is None:
            return
        if inherited is None:
            os.environ.pop(_ENV_RUN_ID, None)
        else:
            os.environ[_ENV_RUN_ID] = inherited

    return undo


def warn_010_keywords(
    mode: str, trace_functions: object, strict_names: object, window: tuple[int, int] | bool | None
) -> None:
    """Once per process each: the 0.10.0 keywords accepted with less than 0.10.0 did, or read
    otherwise (``window``: an enabled profiler's backend window). Called from
    ``Profiler.__init__``, so that the warning names the line that constructed the profiler."""
    if isinstance(window, tuple):
        start, stop = window
        warn_once(
            "backend_window",
            f"backend_window=({start}, {stop}) profiles entries {start} to {stop - 1}: the stop entry is not "
            f"profiled; 0.10.0 profiled entries {start} to {stop} (pass ({start}, {stop + 1}) for that)",
            stacklevel=4,
        )
    if mode == "auto" and not hasattr(sys, "monitoring"):
        warn_once(
            "trace", "trace='auto' needs sys.monitoring (Python 3.12+): only the phases you name are traced",
            stacklevel=4,
        )
    elif trace_functions is not None and mode != "auto":
        warn_once("trace", _FUNCTIONS_WITHOUT_AUTO, stacklevel=4)
    if strict_names:
        warn_once(
            "strict_names",
            "Profiler(strict_names=True) is accepted but phase names are not checked in 0.11.0; "
            "the report lists each distinct path, so compare them there",
            stacklevel=4,
        )
