"""What both profilers do with a signal once they have flushed: hand it on as if they were not there.

No typing import: the accounting layer's import stays as small as it is.
"""

from __future__ import annotations

import os
import signal


def signal_name(signum: int) -> str:
    """``"SIGTERM"`` for 15; the number as text for a signal Python has no name for."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def ends_process(previous: object) -> bool:
    """Whether the handler that was there before ours is the default action (which ends the
    process for SIGTERM, SIGUSR1 and SIGHUP) rather than a function or SIG_IGN."""
    return not callable(previous) and previous != signal.SIG_IGN


def chain(signum: int, frame: object, previous: object) -> None:
    """Call the previous handler; keep an ignored signal ignored; for the default action, end
    the process by the signal itself, so its parent sees it in the exit status."""
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
