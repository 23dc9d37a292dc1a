"""The launchers that can say, from inside a process, which job it belongs to when its
environment does not: a runtime whose workers learn their job, host, role and rank by asking it
(Ray), not by reading variables (Slurm, torchrun and MPI: :mod:`.identity` reads those itself).

:mod:`.identity` asks :func:`connected` for the launcher this process runs under, and then asks
that launcher for what the environment does not say. An integration registers its launcher when
it is imported (:func:`register`). A runtime's worker process runs the user's code, which imports
the runtime but never the integration, so an integration also declares itself as an entry point
of the group :data:`ENTRY_POINTS` (``pyproject.toml``), named after the runtime's module, whose
value is the module that registers it when imported. Those are read, and that module imported,
only once the runtime's own module is (:data:`RUNTIMES`), which costs the processes of every other
run one dict lookup per runtime: reading the installed packages' entry points costs far more.

Nothing here imports an integration at module load, nor the runtimes, and nothing here names one.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

#: The runtimes whose processes learn their job by asking them, by the name of their top-level
#: module, which is also their launcher's name and the name of the entry point that answers for it.
RUNTIMES = ("ray",)
#: The entry-point group where an integration declares the launcher it registers when imported.
ENTRY_POINTS = "lineprofiler.launchers"


def _none() -> None:
    return None


class Launcher:
    """What a launcher answers for this process, each answer None where it cannot say.

    ``name`` is what identity records (``run_id_source``, ``launcher``); ``connected``: whether
    this process is one of the launcher's, connected to it now; ``run``: ``(run_id, job_id)``;
    ``host``, ``role`` and ``rank``: this process's; ``adopt_env``: export the run's settings the
    launcher keeps for this job (True when it did).
    """

    __slots__ = ("name", "connected", "run", "host", "role", "rank", "adopt_env")

    def __init__(
        self,
        name: str,
        connected: Callable[[], bool],
        *,
        run: Callable[[], tuple[str, str] | None] = _none,
        host: Callable[[], str | None] = _none,
        role: Callable[[], str | None] = _none,
        rank: Callable[[], int | None] = _none,
        adopt_env: Callable[[], object] = _none,
    ) -> None:
        self.name = name
        self.connected = connected
        self.run = run
        self.host = host
        self.role = role
        self.rank = rank
        self.adopt_env = adopt_env


_registered: dict[str, Launcher] = {}


def register(launcher: Launcher) -> None:
    """Ask ``launcher`` from now on (in place of one registered before under its name)."""
    _registered[launcher.name] = launcher


def names() -> frozenset[str]:
    """The names of every launcher this module knows, registered or not yet imported."""
    return frozenset(_registered) | frozenset(RUNTIMES)


def _integration_of(runtime: str) -> str | None:
    """The module that registers the launcher of ``runtime`` when imported, as an installed
    package declares it (its entry point named ``runtime`` in :data:`ENTRY_POINTS`), or None."""
    from importlib.metadata import entry_points  # here: only a process that imported a runtime

    for entry in entry_points(group=ENTRY_POINTS, name=runtime):
        return entry.module
    return None


def _import_pending() -> None:
    """Import the integration of each runtime that is imported but whose launcher is not
    registered yet. An integration that cannot be imported (its runtime blocked or broken, an
    installed package's metadata unreadable) is tried again at the next question, as if it were the first."""
    for runtime in RUNTIMES:
        if runtime not in _registered and runtime in sys.modules:
            import importlib

            try:
                module = _integration_of(runtime)
                if module is not None:
                    importlib.import_module(module)
            except Exception:  # noqa: BLE001 - a broken integration or package metadata: no launcher, never a raise
                pass


def connected(env: Mapping[str, str]) -> Launcher | None:
    """The launcher this process is connected to, when ``env`` is the real environment (a
    launcher answers for this process, not for a mapping a caller made up); None, at the cost of
    a dict lookup, where no runtime of a launcher was imported."""
    if env is not os.environ:
        return None
    _import_pending()
    for launcher in _registered.values():
        if launcher.connected():
            return launcher
    return None
