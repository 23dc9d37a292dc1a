"""The backend windows: a heavy profiler (torch, VizTracer, the line profiler) run for a few
entries of one phase (``Profiler(backend=..., backend_window=..., window_phase=...)``).

The public names, where users import them from: ``Backend``, ``Window`` (the torch and
VizTracer window, :mod:`.trace_window`), ``annotate_hooks``, ``artifact_name`` and
``BACKEND_DIR``. The line profiler's window is :mod:`.lines_window`'s ``LinesWindow``; what
every window records is :mod:`.window_state`'s. ``Window`` and its helpers are loaded when first
asked for, so that a line window does not load the torch and VizTracer one.
"""

from __future__ import annotations

import enum

from ...runfiles.layout import BACKEND_DIR
from .._options import parse_backend

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from typing import Any

    from .trace_window import Window, annotate_hooks, artifact_name

__all__ = ["BACKEND_DIR", "Backend", "Window", "annotate_hooks", "artifact_name"]


class Backend(str, enum.Enum):
    """The heavy profiler a window runs. A single value: two cannot run at once."""

    TORCH = "torch"
    VIZTRACER = "viztracer"
    #: The line profiler: :class:`.lines_window.LinesWindow`, not :class:`.trace_window.Window`.
    LINES = "lines"

    @classmethod
    def parse(cls, value: object) -> Backend | None:
        """``None``/``""`` -> None; a name or value, any case -> the member. Raises TypeError for
        a value that is no str, ValueError for an unknown name (the profiler's own checks)."""
        name = parse_backend(value)
        return None if name is None else cls(name)


_FROM_TRACE_WINDOW = ("Window", "annotate_hooks", "artifact_name")


def __getattr__(name: str) -> Any:
    if name in _FROM_TRACE_WINDOW:
        from . import trace_window

        return getattr(trace_window, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
