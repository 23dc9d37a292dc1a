"""The on/off environment variables (``LINEPROFILER_ENABLED``, ``LINEPROFILER_PROFILE``) read
as 0.11.0 reads them, with a warning where 0.10.0 read the same value the other way.

0.11.0 reads ``0``, ``false``, ``no`` and ``off`` (any case, spaces around) as off. 0.10.0 knew
only ``0``, ``false`` and ``False`` (exactly) and blank as off: its ``no``, ``off``, ``FALSE`` or
`` 0`` turned profiling on. A script setting one of those now profiles nothing, so the first read
of such a value in a process says so, once.

Imported by every process that constructs a profiler: it imports ``warnings`` only to warn.
"""

from __future__ import annotations

import os

__all__ = ["OFF_WORDS", "env_says_on"]

OFF_WORDS = frozenset({"0", "false", "no", "off"})
_OFF_IN_010 = frozenset({"0", "false", "False"})
_warned: set[str] = set()


def env_says_on(name: str, *, empty_is_on: bool) -> bool:
    """Whether the environment variable ``name`` says on; ``empty_is_on``: what an unset, empty
    or blank one means."""
    value = os.environ.get(name)
    text = (value or "").strip()
    if not text:
        return empty_is_on
    on = text.lower() not in OFF_WORDS
    if not on and value not in _OFF_IN_010 and name not in _warned:
        _warned.add(name)
        _warn(
            f"{name}={value!r} turns profiling off; 0.10.0 read it as on (only '0', 'false' and "
            f"'False' were off there): set {name}=1 to profile"
        )
    return on


def _warn(message: str) -> None:
    import warnings

    try:
        warnings.warn(message, RuntimeWarning, stacklevel=4)
    except Exception:  # noqa: BLE001 - under -W error a warning raises; a guest never raises into its host
        pass
