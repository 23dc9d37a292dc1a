"""A child process's start as a profiled process: what the boot ``sitecustomize`` (``lines/_boot``)
calls when ``LINEPROFILER_LINES`` is set (see :mod:`lineprofiler.lines.children`).

multiprocessing's own helper processes (the resource tracker, the forkserver itself) are not
profiled; each child the forkserver forks is, from its start.

Above the profiler and the session (it makes both), so that neither needs the other's module.
"""

from __future__ import annotations

import os
import sys

from .. import _lifecycle
from .children import ENV_CONFIG, Config, Session
from .decorate import install_from_env

__all__ = ["start_from_env"]

_booted_pid: int | None = None


def _mp_helper_kind() -> str | None:
    """``"forkserver"`` or ``"helper"`` when this interpreter is one of multiprocessing's own
    processes (judged from the ``-c`` command it was started with), else None."""
    orig = list(getattr(sys, "orig_argv", []))
    if "-c" not in orig:
        return None
    command = orig[orig.index("-c") + 1] if orig.index("-c") + 1 < len(orig) else ""
    if not command.startswith("from multiprocessing."):
        return None
    if "multiprocessing.spawn import" in command:
        return None
    if "multiprocessing.forkserver import" in command:
        return "forkserver"
    return "helper"


def start_from_env() -> None:
    """Called at interpreter startup by the boot ``sitecustomize`` when ``LINEPROFILER_LINES``
    is set: profile this process for its whole life. Never raises."""
    global _booted_pid
    text = os.environ.get(ENV_CONFIG)
    if not text or _booted_pid == os.getpid():
        return
    _booted_pid = os.getpid()
    install_from_env()  # run's `profile` builtin: a spawned child re-imports the decorated script
    try:
        config = Config.from_env(text)
    except (ValueError, KeyError, TypeError) as error:
        print(f"lineprofiler: {ENV_CONFIG} is unusable ({error}); this process is not profiled", file=sys.stderr)
        return
    kind = _mp_helper_kind()
    if kind == "helper":
        return
    if kind == "forkserver":
        # The server itself runs no user code; each child it forks is profiled from its start.
        _lifecycle.at_fork(after_in_child=lambda: _start_child(config))
        return
    _start_child(config)


def _start_child(config: Config) -> None:
    # Here, not at import: a helper process of multiprocessing never loads the tracer.
    from .profiler import LineProfiler

    try:
        profiler = LineProfiler(config.project_folder, include=config.include or None, exclude=config.exclude or None)
        profiler.make_background()
        session = Session(profiler, config, root=False)
        session.begin()
        profiler.enable()
    except Exception as error:
        print(f"lineprofiler: pid {os.getpid()} is not profiled: {error}", file=sys.stderr)
