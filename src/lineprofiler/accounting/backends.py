"""``Backend``: the heavy profilers a backend window can run (``Profiler(backend=...)``).

The torch and VizTracer windows are :mod:`.trace_window`'s; the line profiler's is
:mod:`.lines_window`'s.
"""

from __future__ import annotations

import enum

from ._options import parse_backend

__all__ = ["Backend"]


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
