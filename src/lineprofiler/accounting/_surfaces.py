"""What a profiler's parts may use of the profiler that owns them, and of the process-wide
hooks: typed surfaces, so that no part imports the module above it.

:class:`~.profiler.Profiler` imports its parts (:mod:`._wiring`, :mod:`._snapshots`, the
backend windows, :mod:`.metadata`) and hands itself, or the process's hooks, to them as one of
these protocols, which it and :class:`~._process.ProcessHooks` satisfy as they are. Everything
else a part needs comes as a plain value (the checked :class:`~._options.Options`, a
``record_error`` callable, the run directory). :class:`ProcessMember` is what the process-wide
hooks call on each profiler, so that they need not import it either.

For type checkers only: nothing imports this module at run time (``typing`` costs every process
of a run its import), so its users import it under ``TYPE_CHECKING``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ..runfiles.layout import RunPaths
from ._phases import Recorder
from .identity import Identity

__all__ = ["HookTarget", "ProcessMember", "ProcessServices", "WindowOwner", "WiringTarget"]


class HookTarget(Protocol):
    """The profiler's hooks into its recorder, and the objects that live and die with it."""

    def set_sync(self, fn: Callable[[], object] | None) -> None: ...

    def set_annotate(
        self, enter_fn: Callable[[str], object] | None, exit_fn: Callable[[str], object] | None
    ) -> None: ...

    def set_watch(self, name: str | None, fn: Callable[[int], object] | None) -> None: ...

    def add_attachment(self, attachment: Any) -> None: ...


class WindowOwner(Protocol):
    """What a backend window reads of the profiler it runs in: where the run's files go and which
    process this is."""

    @property
    def run_dir(self) -> Path: ...

    @property
    def run_paths(self) -> RunPaths:
        """The run directory, which names every file in it."""

    @property
    def path(self) -> Path | None:
        """The worker file, which the window's own file is named after."""

    @property
    def identity(self) -> Identity | None: ...

    @property
    def role(self) -> str: ...

    @property
    def start_unix_ns(self) -> int | None: ...

    @property
    def signal_name(self) -> str | None:
        """The signal whose flush is under way or was the last, or None."""


class WiringTarget(HookTarget, WindowOwner, Protocol):
    """What :func:`._wiring.wire` uses: the hooks, and the owner a backend window is given."""

    #: The recorder (``trace="auto"`` enters its phases); None in a disabled profiler.
    recorder: Any


class ProcessServices(Protocol):
    """What a snapshot writer needs of the process-wide hooks (:data:`._process.PROCESS`)."""

    #: Whether the "cannot write the worker file" warning was given (once per process).
    warned_unwritable: bool

    @property
    def deferred_end(self) -> int | None:
        """A signal that ends the process, arrived during a write: taken by :meth:`end_deferred`."""

    def ensure_own_process(self, where: str) -> None:
        """In a process that a fork() from C made, make every profiler the child's own first."""

    def end_deferred(self) -> None: ...

    def claim_loading(self) -> bool:
        """True when the caller is to run :meth:`load_late` in the thread it is about to start."""

    def release_loading(self) -> None: ...

    def load_late(self) -> None:
        """Import what the snapshots import late; forks wait meanwhile."""


class ProcessMember(Protocol):
    """What the process-wide hooks (:class:`~._process.ProcessHooks`) call on each live
    profiler. Package-internal hooks, not the profiler's public face: hence the underscores."""

    #: A copy made by fork, which steps aside when the child builds its own profiler.
    _inherited: bool
    #: Whether multiprocessing's exit finalizer is registered for it.
    _mp_registered: bool

    @property
    def recorder(self) -> Recorder | None: ...

    def close(self) -> None: ...

    def _retire(self) -> None:
        """Step aside without a final snapshot, removing the files this process began."""

    def _record_error(self, text: str) -> None: ...

    def _flush_for_signal(self, name: str, *, ending: bool = False) -> None: ...

    def _before_fork(self, *, crowded: bool = False) -> None: ...

    def _after_fork_parent(self) -> None: ...

    def _after_fork_child(self, note: str | None = None) -> None: ...
