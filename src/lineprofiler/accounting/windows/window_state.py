"""What every backend window of a process records, whatever the backend.

A window is on for entries ``start .. stop - 1`` of one phase. Its state goes ``"waiting"`` ->
``"active"`` -> ``"done"`` (its artifact written) or ``"failed"`` (``error`` says what), or it
is ``"unavailable"`` from the start (``unavailable_reason`` says why). :class:`WindowState`
holds that, the entries and times it ran, what it wrote, and the parts of the profiler's
attachment protocol that are the same for every backend. Light on purpose: the line window
imports it, and a process without windows never does.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ...runfiles.layout import RunPaths
from .._options import check_window, check_window_phase


class WindowState:
    """The state of one window; :class:`~.trace_window.Window` and
    :class:`~.lines_window.LinesWindow` add their backend."""

    #: ``describe()["backend"]``.
    backend_name: str = ""

    def _init_state(self, paths: RunPaths, window: tuple[int, int], phase: str) -> None:
        """Checks the window and the phase name (TypeError, ValueError) and starts waiting."""
        self.start_at, self.stop_at = check_window(window)
        self.watch_name = check_window_phase(phase)
        #: The run directory, which names the window's file.
        self.paths = paths
        self.run_dir: Path = paths.path
        self._lock = threading.RLock()
        self.state = "waiting"
        self.error: str | None = None
        self.unavailable_reason: str | None = None
        #: Cut short by the profiler's stop rather than ended at its last entry.
        self.truncated = False
        self.started_unix_ns: int | None = None
        self.stopped_unix_ns: int | None = None
        self.started_entry: int | None = None
        self.stopped_entry: int | None = None
        self.artifact: Path | None = None

    def _forget_after_fork(self) -> None:
        """In a forked child: the parent's window is not this process's; it waits again, counting
        its own entries from zero."""
        self._lock = threading.RLock()
        if self.state in ("active", "done", "failed"):
            self.state = "waiting"
            self.error = None
        self.truncated = False
        self.started_unix_ns = self.stopped_unix_ns = None
        self.started_entry = self.stopped_entry = None
        self.artifact = None

    def describe(self) -> dict[str, Any]:
        """What metadata.json and the worker document record about this window."""
        artifact = None
        if self.artifact is not None:
            try:
                artifact = str(self.artifact.relative_to(self.run_dir))
            except ValueError:
                artifact = str(self.artifact)
        return {
            "backend": self.backend_name,
            "phase": self.watch_name,
            "window": [self.start_at, self.stop_at],
            "state": self.state,
            "available": self.unavailable_reason is None,
            "unavailable_reason": self.unavailable_reason,
            "error": self.error,
            "artifact": artifact,
            "truncated": self.truncated,
            "started_entry": self.started_entry,
            "stopped_entry": self.stopped_entry,
            "started_unix_ns": self.started_unix_ns,
            "stopped_unix_ns": self.stopped_unix_ns,
        }

    # ---- the attachment protocol: what is the same for every backend ----

    def start(self) -> None:
        pass

    def before_fork(self) -> None:
        pass

    def after_fork_parent(self) -> None:
        pass

    def contribute(self, document: dict[str, Any]) -> None:
        document["backend_window"] = self.describe()
