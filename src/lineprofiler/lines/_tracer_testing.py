"""The C tracer's test hooks, for tests only: production code never imports this module
(``tests/lines/test_testing_hooks.py`` holds it to that).

Needs a development build (``LINEPROFILER_DEV_BUILD=1``, as ``make test`` builds): a wheel's
tracer has no seams, and each function here then raises RuntimeError saying so.

- :func:`fake_clock`: tracers that start recording from empty read a clock that stands still
  except when moved, and each timed slow path of a callback (deciding whether code is ours,
  growing a table) costs ``callback_cost`` ns of it, so a test can check to the nanosecond that
  the tracer bills no callback time to a line (``tests/lines/lp_reference.py`` is the model).
- :func:`set_foreign_limit` and :func:`set_presize`: the limits that make the tracer's rare
  paths (dropping its foreign-code cache, growing a line array) run in a small test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from . import _tracer

__all__ = ["advance_clock", "fake_clock", "set_fake_clock", "set_foreign_limit", "set_presize"]


def _needs(name: str) -> None:
    """Raises RuntimeError unless the tracer has the switch ``name`` (a development build's)."""
    if not hasattr(_tracer, name):
        raise RuntimeError(
            f"lineprofiler.lines._tracer has no {name}: its test seams need a development build "
            "(LINEPROFILER_DEV_BUILD=1 pip install -e ., as make test builds)"
        )


def set_fake_clock(enabled: bool, *, callback_cost: int = 0, now: int = 0) -> None:
    """Switch the fake clock on (at ``now``) or off; ValueError for a negative cost or time."""
    _needs("_set_test_clock")
    _tracer._set_test_clock(enabled, callback_cost, now)  # type: ignore[attr-defined]


def advance_clock(ns: int) -> int:
    """Move the fake clock forward by ``ns``; returns its new reading."""
    _needs("_advance_test_clock")
    return _tracer._advance_test_clock(ns)  # type: ignore[attr-defined]


@contextlib.contextmanager
def fake_clock(*, callback_cost: int = 0) -> Iterator[Callable[[int], int]]:
    """The fake clock while the block runs, which gets :func:`advance_clock` to move it."""
    set_fake_clock(True, callback_cost=callback_cost)
    try:
        yield advance_clock
    finally:
        set_fake_clock(False)


def set_foreign_limit(n: int) -> int:
    """How many foreign-code decisions a tracer caches before it drops them all (default
    65536); returns the previous limit."""
    _needs("_set_foreign_limit")
    return _tracer._set_foreign_limit(n)  # type: ignore[attr-defined]


def set_presize(enabled: bool) -> bool:
    """Whether new code records size their line arrays from ``co_lines()`` (the default) or
    grow line by line; returns the previous setting."""
    _needs("_set_presize")
    return _tracer._set_presize(enabled)  # type: ignore[attr-defined]
