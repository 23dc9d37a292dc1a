"""Text from files or from other processes, made safe to print on a terminal.

The one escaping function every command uses: a path, a qualname, a source line, a role or a
host read from a run file is data, and a control character in it (an OSC title change, a
screen clear, a hyperlink, a carriage return) must reach the terminal as visible text, never as
a command to it. This module imports nothing else of the package, so every layer may use it.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` for one line of a terminal: every non-printable character (controls, format
    characters such as bidirectional overrides, line and paragraph separators) shown as its
    Python escape (``\\x1b``, ``\\r``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
