"""``trace="auto"``: the project's function calls as phases, so a program with no ``phase()``
calls still gets a tree of where its time went, spans and a story.

Each call of a function of the project (the line layer's project filter: the git root of the
main script, less virtual environments, installed packages and the profiler itself), narrowed
by ``trace_functions`` globs on the qualified name, is an entry of the phase
``<module>.<qualname>`` nested under the phase open around it, recorded by the C recorder as
any phase is (``_phases.AutoTracer`` is the C side). Needs ``sys.monitoring`` (3.12+): on 3.11
the worker file says why nothing was recorded. A discovery tool: every call costs a phase entry,
so a hot inner function costs what a phase in that loop would; ``trace_functions`` narrows it.
"""

from __future__ import annotations

import fnmatch
import os
import sys

from . import _phases

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

#: The name it registers with sys.monitoring.use_tool_id().
TOOL_NAME = "lineprofiler-auto"
#: Tool ids tried in order: the unassigned ones first, so the line profiler (PROFILER_ID, 2),
#: coverage (1) and a debugger (0) still find theirs.
TOOL_ORDER = (3, 4, 5, 2, 0, 1)
HOOK_EVENTS = (
    ("start", "PY_START"),
    ("resume", "PY_RESUME"),
    ("throw", "PY_THROW"),
    ("return", "PY_RETURN"),
    ("yield", "PY_YIELD"),
    ("unwind", "PY_UNWIND"),
)


def phase_name(code: CodeType) -> str:
    """``<module>.<qualname>``: the file's stem, then the qualified name."""
    stem = os.path.splitext(os.path.basename(code.co_filename))[0]
    return f"{stem}.{code.co_qualname}"


class AutoTrace:
    """A profiler attachment: ``start()`` takes a ``sys.monitoring`` tool id and registers the C
    hooks, ``stop()``/``close()`` give everything back, ``contribute()`` writes
    ``document["auto_trace"]``."""

    def __init__(self, recorder: Any, project: str | None, functions: tuple[str, ...]) -> None:
        self._recorder = recorder
        self._project = project
        self._functions = functions
        self._filter: Any = None
        self._hold: Any = None
        self._tracer: Any = None
        self.unavailable_reason: str | None = None
        if not hasattr(sys, "monitoring"):
            self.unavailable_reason = (
                f"trace='auto' needs sys.monitoring (Python 3.12+); this is {sys.version.split()[0]}: "
                "only the phases you name are traced"
            )

    def _admit(self, code: CodeType) -> str | None:
        if not self._filter(code):
            return None
        if self._functions and not any(fnmatch.fnmatchcase(code.co_qualname, g) for g in self._functions):
            return None
        return phase_name(code)

    def start(self) -> None:
        if self.unavailable_reason is not None or self._hold is not None:
            return
        from ..lines.monitoring import MonitoringHold
        from ..lines.project import ProjectFilter
        from .windows.lines_window import project_folder

        try:
            self._filter = ProjectFilter(project_folder(self._project))
            disable = sys.monitoring.DISABLE  # type: ignore[attr-defined]
            tracer = _phases.AutoTracer(self._recorder, self._admit, disable)
            hold = MonitoringHold(TOOL_NAME, TOOL_ORDER, HOOK_EVENTS)
            hold.take(tracer)
        except (RuntimeError, ValueError) as error:  # every tool id taken; a project folder gone
            self.unavailable_reason = f"trace='auto' could not start: {error}"
            return
        self._hold, self._tracer = hold, tracer

    def stop(self) -> None:
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.give_back()

    close = stop

    def contribute(self, document: dict[str, Any]) -> None:
        stats = self._tracer.stats() if self._tracer is not None else {}
        document["auto_trace"] = {
            "functions": stats.get("functions", 0),
            "entries": stats.get("entries", 0),
            "exits_skipped": stats.get("exits_skipped", 0),
            "errors": stats.get("errors", 0),
            "cache_clears": stats.get("cache_clears", 0),
            "filter": list(self._functions),
            "unavailable_reason": self.unavailable_reason,
        }
