"""A time bound for a block that must end: a reader looping forever on a hostile file fails its
test instead of hanging the suite."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Hang(Exception):
    """The block ran past its bound."""


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raises :class:`Hang` in the block if it runs past ``seconds`` (SIGALRM: main thread only)."""

    def expire(signum: int, frame: object) -> None:
        raise Hang(f"still running after {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
