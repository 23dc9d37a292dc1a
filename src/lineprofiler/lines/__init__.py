"""The line layer: a C tracer behind LineProfiler.

Names are imported on first use, so that reading saved results (``lineprofiler.lines.saved``,
``lineprofiler view``) never loads the C tracer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "DEFAULT_EXCLUDES",
    "FunctionStats",
    "LineProfiler",
    "LineStats",
    "ProjectFilter",
    "SavedProfile",
    "TracerError",
    "find_project_root",
    "set_role",
]

if TYPE_CHECKING:
    from .children import set_role
    from .profiler import LineProfiler, TracerError
    from .project import DEFAULT_EXCLUDES, ProjectFilter, find_project_root
    from .saved import SavedProfile
    from .stats import FunctionStats, LineStats

_WHERE = {
    "LineProfiler": "profiler",
    "TracerError": "profiler",
    "DEFAULT_EXCLUDES": "project",
    "ProjectFilter": "project",
    "find_project_root": "project",
    "FunctionStats": "stats",
    "LineStats": "stats",
    "SavedProfile": "saved",
    "set_role": "children",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'lineprofiler.lines' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
