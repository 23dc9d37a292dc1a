"""The profiler's arguments, checked once and here only, before anything is touched.

A wrong type raises TypeError and a wrong value ValueError, with the argument's name first.
:class:`~.trace_window.Window` uses the same checks for the backend, the window and its phase, so
``Profiler(...)`` and ``Window(...)`` refuse the same things with the same exceptions.
"""

from __future__ import annotations

import os

from .._record import Record

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from typing import Any

#: The heavy profilers a window can run (``backend=``): the values of :class:`.backends.Backend`.
BACKENDS = ("torch", "viztracer", "lines")
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
        raise ValueError("lines_project needs backend='lines'")
    text = os.fspath(value)
    if not isinstance(text, str) or not text:
        raise ValueError(f"lines_project must name a folder, not {value!r}")
    if not os.path.isdir(text):
        raise ValueError(f"lines_project must be an existing folder, not {text!r}")
    return os.path.realpath(text)


class Options(Record):
    """What a ``Profiler`` was asked for, checked (``run_dir`` and ``role`` as given)."""

    __slots__ = (
        "run_dir", "role", "enabled", "measure_cpu", "backend", "backend_window", "window_phase", "lines_project",
        "annotate", "snapshot_interval_s", "sample_interval_s", "timeline_hz", "max_paths", "max_counters",
        "trace", "trace_capacity",
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
    ) -> None:
        self.run_dir = run_dir
        self.role = role
        self.enabled = enabled
        self.measure_cpu = measure_cpu
        self.backend = backend
        self.backend_window = backend_window
        self.window_phase = window_phase
        #: ``backend="lines"``: the project folder whose lines are profiled, absolute; None for
        #: the default (decided in the process, see ``lines_window.project_folder``).
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
    project = check_lines_project(lines_project, backend_name)
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
    )
