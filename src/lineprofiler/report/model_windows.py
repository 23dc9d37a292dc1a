"""The report's model of a backend window (``backend="torch" | "viztracer" | "lines"``): kept
apart from :mod:`.model`, which re-exports it, so each file holds one part of the report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BackendWindow:
    """One process's backend window (``backend="torch" | "viztracer" | "lines"``): the entries it
    covered and the file it wrote, so a user finds the trace a window left."""

    label: str
    role: str
    backend: str
    #: The window: entries ``start .. stop - 1`` of ``phase`` (None: the file does not say).
    phase: str | None
    start: int | None
    stop: int | None
    #: ``waiting`` (never reached), ``active``, ``done``, ``failed`` or ``unavailable``.
    state: str
    #: The file it wrote, as the worker recorded it (relative to the run directory), and that
    #: path under the run directory; None: it wrote none.
    artifact: str | None
    path: str | None
    truncated: bool
    #: Why it failed or was unavailable.
    reason: str | None
