"""What a long command is reading, for the person watching it: one line on stderr, rewritten in
place, shown only when stderr is a terminal, only once the command has run for a while, and
erased before the command prints its result. The line is cut to the terminal's width, read at
each redraw (a line that wrapped would leave its first rows behind on the screen).

A report over a thousand workers takes tens of seconds; a silent terminal for that long reads as
a hang. Progress never goes to a pipe or a file (``2>log`` stays clean), so scripts see the same
output as before. ``--quiet`` turns it off; ``LINEPROFILER_PROGRESS_AFTER_S`` sets how long a
command runs before the line appears (default 1 second; 0 shows it at once).
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO

from ..._terminal import ELLIPSIS, fit, printable

__all__ = ["Progress", "for_terminal"]

ENV_AFTER = "LINEPROFILER_PROGRESS_AFTER_S"
DEFAULT_AFTER_S = 1.0
#: At most this many redraws a second: a terminal that redraws per file slows the command.
_REDRAWS_PER_S = 10
_ERASE = "\r\x1b[K"


class Progress:
    """A one-line progress display on ``stream``; :meth:`close` erases it. Every method is a
    no-op when ``enabled`` is false, so callers never test it themselves."""

    def __init__(self, stream: IO[str] | None, *, enabled: bool, after_s: float = DEFAULT_AFTER_S) -> None:
        self._stream = stream
        self._enabled = enabled and stream is not None
        self._started = time.monotonic()
        self._after_s = after_s
        self._last_draw = 0.0
        self._shown = False
        self._what: str | None = None

    def update(self, what: str, done: int | None = None, total: int | None = None) -> None:
        """Say what is being done now (``what``), with ``done`` of ``total`` where counted."""
        if not self._enabled:
            return
        now = time.monotonic()
        if now - self._started < self._after_s:
            return
        # a new step, and the last count of one, are always drawn; counts between at 10 Hz
        last = done is not None and total is not None and done >= total
        if self._shown and what == self._what and not last and now - self._last_draw < 1.0 / _REDRAWS_PER_S:
            return
        self._what = what
        text = what if done is None else f"{what}: {done}/{total}" if total is not None else f"{what}: {done}"
        self._draw(f"{text} ({now - self._started:.0f} s)")
        self._last_draw = now

    def close(self) -> None:
        """Erase the line, so the result that follows starts on a clean line."""
        if self._shown:
            self._write(_ERASE)
            self._shown = False

    def _draw(self, text: str) -> None:
        self._write(_ERASE + self._fitted(printable(text)))
        self._shown = True

    def _fitted(self, line: str) -> str:
        """``line`` as the terminal will show it (what its encoding lacks as the escape that
        stderr writes), cut to leave the last column free: some terminals wrap on reaching it."""
        assert self._stream is not None
        columns = _columns(self._stream)
        if columns < 1:
            return line
        encoding = getattr(self._stream, "encoding", None) or "utf-8"
        try:
            line = line.encode(encoding, "backslashreplace").decode(encoding)
            ELLIPSIS.encode(encoding)
            ellipsis = ELLIPSIS
        except (UnicodeError, LookupError):  # no ellipsis in this encoding, or one Python lacks
            ellipsis = "..."
        return fit(line, max(columns - 1, 1), ellipsis=ellipsis)

    def _write(self, text: str) -> None:
        assert self._stream is not None
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # a terminal that went away costs the display, not the command
            self._enabled = False


def _columns(stream: IO[str]) -> int:
    """The terminal's width in cells; 0 when it does not say."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


def _after_s() -> float:
    raw = os.environ.get(ENV_AFTER)
    if raw is None:
        return DEFAULT_AFTER_S
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_AFTER_S
    return value if 0 <= value < float("inf") else DEFAULT_AFTER_S


def for_terminal(*, quiet: bool, stream: IO[str] | None = None) -> Progress:
    """The progress display of a command: on stderr when it is a terminal and not ``quiet``."""
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream.isatty()
    except (OSError, ValueError, AttributeError):
        tty = False
    return Progress(stream, enabled=tty and not quiet, after_s=_after_s())
