"""The backend windows' public names, where users import them from: ``Backend``, ``Window``
(the torch and VizTracer window, :mod:`.trace_window`), ``annotate_hooks``, ``artifact_name``
and ``BACKEND_DIR``. The line profiler's window is :mod:`.lines_window`'s ``LinesWindow``.
"""

from __future__ import annotations

from ..runfiles.layout import BACKEND_DIR
from .backends import Backend
from .trace_window import Window, annotate_hooks, artifact_name

__all__ = ["BACKEND_DIR", "Backend", "Window", "annotate_hooks", "artifact_name"]
