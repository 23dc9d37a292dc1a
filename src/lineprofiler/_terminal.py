"""Text from files or from other processes, made safe to print on a terminal.

The one escaping function every command uses: a path, a qualname, a source line, a role or a
host read from a run file is data, and a control character in it (an OSC title change, a
screen clear, a hyperlink, a carriage return) must reach the terminal as visible text, never as
a command to it. This module imports nothing else of the package, so every layer may use it.

A line rewritten in place (the progress line) must also fit the terminal's width: one that wraps
leaves its first rows behind when the carriage return goes back over only the last. Widths are
counted in cells, as a terminal draws them: two for an East Asian wide character, none for a
combining mark.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` for one line of a terminal: every non-printable character (controls, format
    characters such as bidirectional overrides, line and paragraph separators) shown as its
    Python escape (``\\x1b``, ``\\r``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


#: What ends a line that :func:`fit` cut.
ELLIPSIS = "\u2026"


def cells(text: str) -> int:
    """How many terminal cells ``text`` (already :func:`printable`) takes."""
    return len(text) if text.isascii() else sum(_char_cells(ch) for ch in text)


def fit(text: str, columns: int, *, ellipsis: str = ELLIPSIS) -> str:
    """``text`` (already :func:`printable`) cut to at most ``columns`` cells, ending in
    ``ellipsis`` when cut; unchanged when ``columns`` is below 1 (a width the terminal did not
    say)."""
    if columns < 1 or cells(text) <= columns:
        return text
    if len(ellipsis) >= columns:
        ellipsis = ""
    room = columns - len(ellipsis)
    kept: list[str] = []
    for ch in text:
        width = _char_cells(ch)
        if width > room:
            break
        kept.append(ch)
        room -= width
    return "".join(kept) + ellipsis


def _char_cells(ch: str) -> int:
    import unicodedata  # here: most text is ASCII, and every layer imports this module

    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
