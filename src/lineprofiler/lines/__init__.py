"""The line layer: a C tracer behind LineProfiler."""

from .profiler import LineProfiler, TracerError
from .project import DEFAULT_EXCLUDES, ProjectFilter, find_project_root
from .stats import FunctionStats, LineStats

__all__ = [
    "DEFAULT_EXCLUDES",
    "FunctionStats",
    "LineProfiler",
    "LineStats",
    "ProjectFilter",
    "TracerError",
    "find_project_root",
]
