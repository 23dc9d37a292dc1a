"""The environment a test's child process starts with: this one, without what would make the
child a profiled process of the test run or a worker of a launcher that is not there."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

#: Variables a launcher (Slurm, MPI, torchrun) exports: a child that sees them believes it is
#: one rank of a job. A name ending in ``_`` is a prefix.
LAUNCHER_VARIABLES = (
    "SLURM_",
    "OMPI_",
    "PMI_",
    "PMIX_",
    "TORCHELASTIC_",
    "MPI_",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_NAME",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def clean_env(extra: Mapping[str, str] | None = None, *, without: Iterable[str] = (), **more: str) -> dict[str, str]:
    """``os.environ`` without lineprofiler's variables (``LINEPROFILER_*``) and those named in
    ``without`` (a name ending in ``_`` drops every variable it starts), plus ``extra`` and ``more``."""
    dropped = ("LINEPROFILER_", *without)
    prefixes = tuple(name for name in dropped if name.endswith("_"))
    names = {name for name in dropped if not name.endswith("_")}
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k not in names}
    env.update(extra or {})
    env.update(more)
    return env
