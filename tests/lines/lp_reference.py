"""A readable reference for the C tracer: the same line-time rules in plain Python.

It hooks the same events (sys.monitoring on 3.12+, sys.settrace on 3.11), keeps the same
per-frame stack and bills the same intervals, on a clock that moves only when the workload calls
``adv(ns)``. Its own callbacks cost nothing on that clock, so its times are the true line times
of the workload; the C tracer, whose callbacks each cost 1000 ns of the test clock, must match
them exactly. Single-threaded by design.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType, FrameType

Result = dict[tuple[str, str, int], dict[int, list[int]]]


class Reference:
    TOOL = 4

    def __init__(self, is_project: Callable[[CodeType], bool]) -> None:
        self.is_project = is_project
        self.decided: dict[CodeType, bool] = {}
        self.stack: list[list] = []  # [code, frame or None, open line or None, start]
        self.data: dict[CodeType, dict[int, list[int]]] = {}
        self.amounts: list[int] = []
        self.adv = self.amounts.append  # a C method: calling it fires no events
        self._seen = 0
        self._total = 0

    # -- the clock and the rules ---------------------------------------------------------------

    def now(self) -> int:
        while self._seen < len(self.amounts):
            self._total += self.amounts[self._seen]
            self._seen += 1
        return self._total

    def ours(self, code: CodeType) -> bool:
        if code not in self.decided:
            self.decided[code] = bool(self.is_project(code))
        return self.decided[code]

    def close(self, entry, t: int) -> None:
        if entry[2] is not None:
            self.data.setdefault(entry[0], {}).setdefault(entry[2], [0, 0])[1] += t - entry[3]
            entry[2] = None

    def open(self, entry, line, t: int, hit: int) -> None:
        if line is None or line < 0:
            entry[2] = None
            return
        self.data.setdefault(entry[0], {}).setdefault(line, [0, 0])[0] += hit
        entry[2] = line
        entry[3] = t

    def _outer(self, entry):
        """The entry below ``entry`` (the top of the stack) that runs the same code, or None."""
        assert self.stack[-1] is entry
        if entry[0] is None:
            return None
        for below in reversed(self.stack[:-1]):
            if below[0] is entry[0]:
                return below
        return None

    def nest(self, entry, t: int) -> None:
        """Recursion: a frame that runs inside an activation of its own code pauses that
        activation's open line (billed up to t) until it ends; its time is its own lines'."""
        outer = self._outer(entry)
        if outer is not None:
            if outer[2] is not None:
                self.data.setdefault(outer[0], {}).setdefault(outer[2], [0, 0])[1] += t - outer[3]
            outer[3] = t

    def pop(self, t: int) -> None:
        """The frame on top ends at t: the activation of its code below resumes its line."""
        entry = self.stack[-1]
        outer = self._outer(entry)
        self.stack.pop()
        if outer is not None:
            outer[3] = t

    def result(self) -> Result:
        out: Result = {}
        for code, lines in self.data.items():
            key = (code.co_filename, code.co_qualname, code.co_firstlineno)
            acc = out.setdefault(key, {})
            for line, (hits, t) in lines.items():
                slot = acc.setdefault(line, [0, 0])
                slot[0] += hits
                slot[1] += t
        return out

    # -- 3.12+: sys.monitoring -----------------------------------------------------------------

    def _line_at(self, code: CodeType, offset: int):
        for start, end, line in code.co_lines():
            if start <= offset < end:
                return line
        return None

    def on_line(self, code, line):
        t = self.now()
        top = self.stack[-1] if self.stack else None
        if top is not None and top[0] is code:
            self.close(top, t)
        else:
            if not self.ours(code):
                return sys.monitoring.DISABLE
            top = [code, None, None, t]
            self.stack.append(top)
            self.nest(top, t)
        self.open(top, line, t, 1)

    def _enter(self, code, offset, resume, can_disable=True):
        if not self.ours(code):
            return sys.monitoring.DISABLE if can_disable else None
        t = self.now()
        entry = [code, None, None, t]
        self.stack.append(entry)
        self.nest(entry, t)
        if resume:
            self.open(entry, self._line_at(code, offset), t, 0)

    def _exit(self, code, can_disable):
        t = self.now()
        top = self.stack[-1] if self.stack else None
        if top is not None and top[0] is code:
            self.close(top, t)
            self.pop(t)
            return None
        if can_disable and not self.ours(code):
            return sys.monitoring.DISABLE
        return None

    def start_monitoring(self) -> None:
        mon = sys.monitoring
        E = mon.events
        mon.use_tool_id(self.TOOL, "lineprofiler-reference")
        mon.register_callback(self.TOOL, E.LINE, self.on_line)
        mon.register_callback(self.TOOL, E.PY_START, lambda c, o: self._enter(c, o, False))
        mon.register_callback(self.TOOL, E.PY_RESUME, lambda c, o: self._enter(c, o, True))
        mon.register_callback(self.TOOL, E.PY_THROW, lambda c, o, e: self._enter(c, o, True, False))
        mon.register_callback(self.TOOL, E.PY_RETURN, lambda c, o, r: self._exit(c, True))
        mon.register_callback(self.TOOL, E.PY_YIELD, lambda c, o, r: self._exit(c, True))
        mon.register_callback(self.TOOL, E.PY_UNWIND, lambda c, o, e: self._exit(c, False))
        mon.set_events(
            self.TOOL,
            E.LINE | E.PY_START | E.PY_RESUME | E.PY_THROW | E.PY_RETURN | E.PY_YIELD | E.PY_UNWIND,
        )
        mon.restart_events()

    def stop_monitoring(self) -> None:
        mon = sys.monitoring
        E = mon.events
        mon.set_events(self.TOOL, 0)
        for ev in (E.LINE, E.PY_START, E.PY_RESUME, E.PY_THROW, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND):
            mon.register_callback(self.TOOL, ev, None)
        mon.free_tool_id(self.TOOL)

    # -- 3.11: sys.settrace ---------------------------------------------------------------------

    def trace(self, frame: FrameType, event: str, arg):
        code = frame.f_code
        top = self.stack[-1] if self.stack else None
        if event == "line":
            t = self.now()
            if top is not None and top[1] is frame:
                if top[0] is None:
                    return self.trace
                self.close(top, t)
            else:
                top = [code if self.ours(code) else None, frame, None, t]
                self.stack.append(top)
                if top[0] is None:
                    return self.trace
                self.nest(top, t)
            self.open(top, frame.f_lineno, t, 1)
        elif event == "call":
            # Frames are entered at their first line event; generators and coroutines here,
            # since a resumed one runs the rest of its yield line before any line event.
            if code.co_flags & (0x20 | 0x80 | 0x200):  # generator, coroutine, async generator
                t = self.now()
                entry = [code if self.ours(code) else None, frame, None, t]
                self.stack.append(entry)
                self.nest(entry, t)
                if entry[0] is not None and frame.f_lineno != code.co_firstlineno:
                    self.open(entry, frame.f_lineno, t, 0)
        elif event == "return":
            if top is not None and top[1] is frame:
                t = self.now()
                if top[0] is not None:
                    self.close(top, t)
                self.pop(t)
        return self.trace

    # -- running ---------------------------------------------------------------------------------

    def run(self, fn, *args):
        if sys.version_info >= (3, 12):
            self.start_monitoring()
            try:
                return fn(self.adv, *args)
            finally:
                self.stop_monitoring()
        old = sys.gettrace()
        sys.settrace(self.trace)
        try:
            return fn(self.adv, *args)
        finally:
            sys.settrace(old)
