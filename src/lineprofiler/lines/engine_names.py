"""0.10.0's ``LineProfiler(backend=..., engine=...)``: the choices it offered, and what 0.11.0 does.

0.10.0 could record through ``line_profiler`` or its own pure-Python engine, on
``sys.monitoring`` or ``sys.settrace``. 0.11.0 has one engine, in C, and the interpreter decides
the event source: ``sys.monitoring`` on 3.12+, a C trace function on 3.11. Code that names a
choice still runs: the one 0.11.0 makes is accepted silently, another valid one with a warning
that says what is used instead, and anything else is a ``ValueError``.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["BACKEND", "ENGINE", "check_choices"]

#: The event source of this interpreter, in 0.10.0's words.
BACKEND = "monitoring" if sys.version_info >= (3, 12) else "settrace"
#: 0.11.0's engine, in 0.10.0's words: its own, not line_profiler's.
ENGINE = "builtin"

_BACKENDS = ("monitoring", "settrace")
_ENGINES = ("line_profiler", "builtin")


def check_choices(backend: object, engine: object) -> None:
    """Refuse what 0.10.0 refused, accept its choices, and warn (once per call site) where
    0.11.0 records otherwise than asked. Never imports anything heavy."""
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend must be 'monitoring' or 'settrace', not {backend!r}")
    if engine is not None and engine not in _ENGINES:
        raise ValueError(f"engine must be 'line_profiler' or 'builtin', not {engine!r}")
    if backend == "monitoring" and BACKEND != "monitoring":
        raise ValueError(
            f"backend='monitoring' needs Python 3.12 or newer; this is {sys.version_info[0]}.{sys.version_info[1]}: "
            "omit backend= (0.11.0 uses a C trace function here)"
        )
    if backend == "settrace" and BACKEND != "settrace":
        warnings.warn(
            "backend='settrace' is accepted, but 0.11.0 records through sys.monitoring on Python 3.12+ "
            "(coverage.py and debuggers keep their own tool ids): omit backend=",
            RuntimeWarning,
            stacklevel=3,
        )
    if engine == "line_profiler":
        warnings.warn(
            "engine='line_profiler' is accepted, but 0.11.0 records with its own C engine and does not use "
            "line_profiler: omit engine=",
            RuntimeWarning,
            stacklevel=3,
        )
