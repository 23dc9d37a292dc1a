"""Test hooks of :mod:`.capabilities`. Production code never imports this module. Pure Python:
any build has them (no development build needed).

The costly probes run once per process and their answers are cached; a test that changes what
is installed (a blocked package, a stub NVML library) calls :func:`forget_probes` so that the
next question probes afresh.
"""

from __future__ import annotations

from . import capabilities


def forget_probes() -> None:
    """Forget every cached answer of :mod:`.capabilities`."""
    with capabilities._lock:
        capabilities._cache.clear()
