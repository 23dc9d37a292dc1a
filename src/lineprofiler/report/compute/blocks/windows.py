"""BACKEND WINDOWS: each process's backend window (torch, VizTracer, lines) from its worker
file's ``backend_window``: the entries it covered, how it ended, and the file it wrote, so the
trace a window left is named by every output of the report, not found by listing folders."""

from __future__ import annotations

from typing import Any

from ...model import BackendWindow
from ...read.run import Run
from . import RenderOptions


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def windows(run: Run, options: RenderOptions) -> list[BackendWindow]:
    out = []
    for worker in run.workers:
        window = worker.document.get("backend_window")
        if not isinstance(window, dict):
            continue
        span = window.get("window")
        start, stop = (_int(span[0]), _int(span[1])) if isinstance(span, list) and len(span) == 2 else (None, None)
        artifact = _text(window.get("artifact"))
        out.append(
            BackendWindow(
                label=worker.label,
                role=worker.role,
                backend=_text(window.get("backend")) or "?",
                phase=_text(window.get("phase")),
                start=start,
                stop=stop,
                state=_text(window.get("state")) or "?",
                artifact=artifact,
                path=str(run.run_dir / artifact) if artifact else None,
                truncated=window.get("truncated") is True,
                reason=_text(window.get("error")) or _text(window.get("unavailable_reason")),
            )
        )
    return out
