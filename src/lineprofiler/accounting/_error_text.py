"""What the profiler keeps of an error it meets in the user's objects: the text at a bounded length,
the cut said, read without ever raising (a user's exception may have a ``__str__`` that raises, or
a message of megabytes, and the profiler stores it in files it must still be able to read)."""

from __future__ import annotations

#: Characters kept of one error's text; the rest is counted, not kept.
MAX_ERROR_CHARS = 500


def cut(text: str) -> str:
    """``text``, or its first MAX_ERROR_CHARS characters and how many more there were."""
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}... ({len(text) - MAX_ERROR_CHARS} more characters not kept)"


def message(error: BaseException) -> str:
    """The error's text, uncut; never raises, whatever the exception's ``__str__`` does."""
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - the user's __str__ of the user's exception
        return "(its message could not be read)"


def describe(error: BaseException) -> str:
    """``Type: message``, cut to the bound."""
    return cut(f"{type(error).__name__}: {message(error)}")
