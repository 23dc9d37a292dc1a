"""What both profilers do with a signal once they have flushed: hand it on as if they were not there.

Built on the interpreter's ``_signal`` rather than :mod:`signal`, whose enums import :mod:`enum`:
every process of a run installs its handlers while it starts, and that import costs it a
millisecond or more. Handlers read back are therefore plain ints for SIG_DFL and SIG_IGN.
No typing import either: the accounting layer's import stays as small as it is.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's C half: no stub, no enum import
import os

from . import _signal_relay

SIG_DFL: int = _signal.SIG_DFL
SIG_IGN: int = _signal.SIG_IGN


def number(name: str) -> int | None:
    """The signal called ``name`` (``"SIGTERM"``) on this platform, or None."""
    value = getattr(_signal, name, None)
    return value if isinstance(value, int) else None


def current(signum: int) -> object:
    """The handler installed for ``signum``: a callable, SIG_DFL, SIG_IGN, or None for one
    installed outside Python."""
    return _signal.getsignal(signum)


def install(signum: int, handler: object) -> object:
    """Install ``handler`` for ``signum`` (main thread only: ValueError elsewhere); returns the
    previous one."""
    return _signal.signal(signum, handler)


def stand_in(signum: int, handler: object) -> object:
    """Install ``handler`` for ``signum`` in place of its default action (main thread only);
    returns the previous handler. A Python handler runs only when the main thread checks for
    signals, which a signal delivered to another thread, or just before a blocking call, never
    makes it do: the relay sends the signal to the main thread again until :func:`handled` is
    called, and takes the default action if the handler still has not run after
    ``_signal_relay.GIVE_UP_NS`` (the main thread stuck in C), so the process ends as it would
    have without us."""
    previous = _signal.signal(signum, handler)
    watch(signum)
    return previous


def watch(signum: int) -> None:
    """The relay of :func:`stand_in` for the Python handler just installed for ``signum``."""
    try:
        _signal_relay.watch(signum)
    except (ValueError, OSError):
        pass  # no relay: the handler is as Python alone would run it


def handled(signum: int) -> None:
    """Our handler for ``signum`` runs: no more relays of the arrival that called it."""
    try:
        _signal_relay.handled(signum)
    except (ValueError, OSError):
        pass


def signal_name(signum: int) -> str:
    """``"SIGTERM"`` for 15; the number as text for a signal Python has no name for."""
    # dir() is sorted, so of two names for one number (SIGABRT, SIGIOT) the first is signal's own.
    for name in dir(_signal):
        if name.startswith("SIG") and not name.startswith("SIG_") and getattr(_signal, name) == signum:
            return name
    return str(signum)


def ends_process(previous: object) -> bool:
    """Whether the handler that was there before ours is the default action (which ends the
    process for SIGTERM, SIGUSR1 and SIGHUP) rather than a function or SIG_IGN."""
    return not callable(previous) and previous != SIG_IGN


def chain(signum: int, frame: object, previous: object) -> None:
    """Call the previous handler; keep an ignored signal ignored; for the default action, end
    the process by the signal itself, so its parent sees it in the exit status."""
    if callable(previous):
        previous(signum, frame)
    elif previous == SIG_IGN:
        return
    else:
        _signal.signal(signum, SIG_DFL)
        os.kill(os.getpid(), signum)
