"""A LineProfiler's hold on ``sys.monitoring`` (3.12+), taken while it is enabled.

It takes ``PROFILER_ID`` (2), or the first free id after it, registers the C callables of
``_tracer`` for LINE, PY_RESUME, PY_RETURN, PY_YIELD, PY_UNWIND and PY_THROW, and on 3.13+
PY_START (3.12 enters a frame at its first LINE event), and gives everything back: events off,
callbacks unregistered, then ``free_tool_id``. That order is correct whether ``free_tool_id``
leaves the callbacks alone (3.12, 3.13) or clears them too (3.14). Other tools' ids, events and
callbacks are never touched.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["TOOL_NAME", "MonitoringHold"]

#: The name this profiler registers with sys.monitoring.use_tool_id().
TOOL_NAME = "lineprofiler"

# Tool ids in the order we try them: PROFILER_ID first, then the unassigned ones, then the ids
# other kinds of tools expect (debugger, optimizer), coverage's last of all.
_TOOL_ORDER = (2, 3, 4, 5, 0, 1)
_HOOK_EVENTS = (
    ("line", "LINE"),
    # 3.12 emits LINE for the first line of every frame, where the tracer pushes the frame; 3.13
    # does not when that line is the line of the frame's RESUME, unless PY_START is on.
    *((("start", "PY_START"),) if sys.version_info >= (3, 13) else ()),
    ("resume", "PY_RESUME"),
    ("return", "PY_RETURN"),
    ("yield", "PY_YIELD"),
    ("unwind", "PY_UNWIND"),
    ("throw", "PY_THROW"),
)


def _monitoring() -> Any:
    """``sys.monitoring`` (3.12+; the type checker is set to 3.11, which has none)."""
    return sys.monitoring  # type: ignore[attr-defined]


def _acquire_tool_id(name: str = TOOL_NAME, order: tuple[int, ...] = _TOOL_ORDER) -> int:
    mon = _monitoring()
    for tool in order:
        if mon.get_tool(tool) is None:
            try:
                mon.use_tool_id(tool, name)
            except ValueError:  # taken between the two calls
                continue
            return tool
    holders = ", ".join(f"{tool}: {mon.get_tool(tool)!r}" for tool in range(6))
    raise RuntimeError(
        f"lineprofiler: every sys.monitoring tool id is taken ({holders}); "
        "free one (sys.monitoring.free_tool_id) before enabling the profiler"
    )


def _release_tool_id(tool: int, events: Iterable[int], name: str = TOOL_NAME) -> None:
    mon = _monitoring()
    if mon.get_tool(tool) != name:
        return  # someone freed and re-took it: it is not ours to clean
    mon.set_events(tool, 0)
    for event in events:
        mon.register_callback(tool, event, None)
    mon.free_tool_id(tool)


class MonitoringHold:
    """One profiler's tool id, callbacks and events, taken whole and given back whole.

    ``name``, ``order`` and ``hook_events`` (hook kind, event name) are the line profiler's
    unless given: the accounting layer's ``trace="auto"`` holds an id of its own."""

    def __init__(
        self,
        name: str = TOOL_NAME,
        order: tuple[int, ...] = _TOOL_ORDER,
        hook_events: tuple[tuple[str, str], ...] = _HOOK_EVENTS,
    ) -> None:
        #: The tool id held, or None.
        self.tool: int | None = None
        self._name, self._order, self._hook_events = name, order, hook_events
        self._events: tuple[int, ...] = ()
        self._hooks: list[Any] = []

    @property
    def held(self) -> bool:
        return self.tool is not None

    def take(self, tracer: Any) -> None:
        """A free tool id, with ``tracer``'s hooks (``tracer.hook(kind)``) for the events;
        RuntimeError when every id is taken, and nothing is left behind when any step fails."""
        mon = _monitoring()
        tool = _acquire_tool_id(self._name, self._order)
        events = tuple(getattr(mon.events, name) for _, name in self._hook_events)
        try:
            # A previous holder may have freed the id without unregistering (3.12 and 3.13 keep
            # callbacks across free_tool_id): the id is ours now, so start it clean.
            for name in dir(mon.events):
                value = getattr(mon.events, name)
                if name.isupper() and isinstance(value, int) and value and not value & (value - 1):
                    try:
                        mon.register_callback(tool, value, None)
                    except ValueError:  # an event a later CPython takes no callback for
                        pass
            hooks = [tracer.hook(kind) for kind, _ in self._hook_events]
            for event, hook in zip(events, hooks, strict=True):
                mon.register_callback(tool, event, hook)
            mask = 0
            for event in events:
                mask |= event
            mon.set_events(tool, mask)
            # DISABLE marks persist per tool id across set_events() and free_tool_id(): one
            # left by an earlier holder of this id (another profiler, or this one with other
            # settings) would hide project code from us. restart_events() re-arms them; other
            # tools just see their disabled locations once more.
            mon.restart_events()
        except BaseException:
            _release_tool_id(tool, events, self._name)
            raise
        self.tool, self._events, self._hooks = tool, events, hooks

    def give_back(self) -> None:
        tool, self.tool = self.tool, None
        if tool is not None:
            _release_tool_id(tool, self._events, self._name)
        self._hooks = []
