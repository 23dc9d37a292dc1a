"""Who a worker is: host, pid, rank, job, and which run (and attempt) it belongs to.

Everything here reads the environment (a mapping, so tests pass their own) and never raises
for what it finds there: a malformed rank is recorded as unknown (None), not an error.

Run id, first match wins:

1. ``LINEPROFILER_RUN_ID`` (set by the first enabled profiler of a process tree, or by you);
   its attempt from ``LINEPROFILER_ATTEMPT``.
2. A launcher's job id, so independent processes of one job join one run with no parent
   profiler: Slurm ``SLURM_JOB_ID`` (+ ``SLURM_STEP_ID``), torchrun ``TORCHELASTIC_RUN_ID``,
   Open MPI ``OMPI_MCA_ess_base_jobid`` or PMIx ``PMIX_NAMESPACE``. A requeued Slurm job
   (``SLURM_RESTART_COUNT``) or a restarted torchrun group (``TORCHELASTIC_RESTART_COUNT``)
   is a new attempt: the run id gets an ``-r<n>`` / ``-t<n>`` suffix and ``attempt`` counts up.
3. Otherwise a new id from the UTC time and 6 random hex digits (``20260813T2241-471c94``):
   a rerun into the same directory is then a new run, which the report shows as the newest
   attempt rather than merging it with the last one.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..runfiles import workerfile
from ..runfiles.workerfile import sanitize_component

#: The environment a profiler reads, and exports for its children (defined here only).
ENV_PROFILE = "LINEPROFILER_PROFILE"
ENV_RUN_DIR = "LINEPROFILER_RUN_DIR"
ENV_RUN_ID = "LINEPROFILER_RUN_ID"
ENV_ATTEMPT = "LINEPROFILER_ATTEMPT"
ENV_HOST = "LINEPROFILER_HOST"
ENV_ROLE = "LINEPROFILER_ROLE"

#: Where a rank comes from, innermost launcher first: torchrun inside Slurm sets both RANK and
#: SLURM_PROCID, and the worker's rank is torchrun's.
_RANK_VARS = (
    ("RANK", "torchrun"),
    ("OMPI_COMM_WORLD_RANK", "mpi"),
    ("PMIX_RANK", "pmi"),
    ("PMI_RANK", "pmi"),
    ("SLURM_PROCID", "slurm"),
)
_LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID")
# The node's index in the job. Not OMPI_COMM_WORLD_NODE_RANK: that is the process's rank among
# the processes on its node (measured under mpirun -n 2 on one node: 0 and 1), a local rank.
_NODE_RANK_VARS = ("GROUP_RANK", "SLURM_NODEID")
_WORLD_SIZE_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS")


@dataclass(frozen=True)
class RunId:
    """A run id, its attempt number and where it came from."""

    run_id: str
    attempt: int
    source: str  # "env", "slurm", "torchrun", "mpi", "pmix", "parent" or "generated"
    job_id: str | None = None


@dataclass(frozen=True)
class Identity:
    """A worker's identity as recorded in its worker file."""

    run_id: str
    attempt: int
    run_id_source: str
    role: str
    host: str
    pid: int
    parent_pid: int
    uuid: str
    rank: int | None = None
    local_rank: int | None = None
    node_rank: int | None = None
    world_size: int | None = None
    job_id: str | None = None
    launcher: str | None = None
    python: str = field(default_factory=lambda: sys.version.split()[0])
    argv: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "run_id_source": self.run_id_source,
            "role": self.role,
            "host": self.host,
            "pid": self.pid,
            "parent_pid": self.parent_pid,
            "uuid": self.uuid,
            "rank": self.rank,
            "local_rank": self.local_rank,
            "node_rank": self.node_rank,
            "world_size": self.world_size,
            "job_id": self.job_id,
            "launcher": self.launcher,
            "python": self.python,
            "argv": list(self.argv),
        }


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def _first_int(env: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = _int_or_none(env.get(name))
        if value is not None:
            return value
    return None


def _nonempty(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    # torchrun's default rendezvous id is the literal "none": it names no job
    return value if value and value.lower() != "none" else None


def _counter(env: Mapping[str, str], name: str) -> int:
    value = _int_or_none(env.get(name))
    return value if value is not None and value > 0 else 0


def generate_run_id(now: float | None = None) -> str:
    """A new run id: UTC minute and 6 random hex digits, e.g. ``20260813T2241-471c94``."""
    stamp = time.strftime("%Y%m%dT%H%M", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def resolve_run_id(env: Mapping[str, str] | None = None) -> RunId:
    """The run this process belongs to (see the module docstring for the order)."""
    env = os.environ if env is None else env
    inherited = _nonempty(env, ENV_RUN_ID)
    if inherited is not None:
        attempt = _counter(env, ENV_ATTEMPT)
        return RunId(sanitize_component(inherited, "run"), attempt, "env", job_id=_job_id(env))
    slurm_restart = _counter(env, "SLURM_RESTART_COUNT")
    torch_restart = _counter(env, "TORCHELASTIC_RESTART_COUNT")
    # Attempts order lexicographically by (Slurm requeue, torchrun restart): a requeue resets
    # torchrun's count, so the pair is encoded rather than summed.
    attempt = slurm_restart * 1000 + torch_restart
    suffix = (f"-r{slurm_restart}" if slurm_restart else "") + (f"-t{torch_restart}" if torch_restart else "")
    job = _nonempty(env, "SLURM_JOB_ID")
    if job is not None:
        step = _nonempty(env, "SLURM_STEP_ID")
        base = f"slurm-{job}" + (f".{step}" if step is not None else "")
        return RunId(sanitize_component(base + suffix, "run"), attempt, "slurm", job_id=job)
    torch_id = _nonempty(env, "TORCHELASTIC_RUN_ID")
    if torch_id is not None:
        return RunId(sanitize_component(f"torchrun-{torch_id}{suffix}", "run"), attempt, "torchrun", job_id=torch_id)
    mpi_job = _nonempty(env, "OMPI_MCA_ess_base_jobid")
    if mpi_job is not None:
        return RunId(sanitize_component(f"mpi-{mpi_job}{suffix}", "run"), attempt, "mpi", job_id=mpi_job)
    pmix = _nonempty(env, "PMIX_NAMESPACE")
    if pmix is not None:
        return RunId(sanitize_component(f"pmix-{pmix}{suffix}", "run"), attempt, "pmix", job_id=pmix)
    return RunId(generate_run_id(), 0, "generated", job_id=None)


def parent_run_id(run_dir: str | os.PathLike[str], host: str) -> RunId | None:
    """The run of this process's multiprocessing parent, read from the parent's worker file.

    A forkserver started before the parent's profiler hands its children the environment it
    had then, without LINEPROFILER_RUN_ID, so each child would make a run of its own. The
    parent's worker file (same run dir, same host, the parent's pid) says which run to join.
    None when this is no multiprocessing child or the parent wrote no readable file.
    """
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return None
    try:
        parent = mp.parent_process()
        parent_pid = None if parent is None else parent.pid
    except Exception:  # an exotic multiprocessing state: no parent to join
        return None
    if not parent_pid:
        return None
    folder = workerfile.worker_dir(run_dir, host)
    try:
        candidates = sorted(folder.glob(f"w_*_{int(parent_pid)}_*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for path in candidates:
        try:
            identity = workerfile.read_worker_file(path)["identity"]
        except (workerfile.WorkerFileError, OSError):
            continue
        if identity.get("pid") == parent_pid:
            return RunId(
                sanitize_component(identity["run_id"], "run"), int(identity.get("attempt", 0)), "parent",
                job_id=identity.get("job_id"),
            )
    return None


def _job_id(env: Mapping[str, str]) -> str | None:
    for name in ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"):
        value = _nonempty(env, name)
        if value is not None:
            return value
    return None


def resolve_rank(env: Mapping[str, str] | None = None) -> tuple[int | None, str | None]:
    """``(rank, launcher)`` from the innermost launcher present, or ``(None, None)``."""
    env = os.environ if env is None else env
    for name, launcher in _RANK_VARS:
        value = _int_or_none(env.get(name))
        if value is not None:
            if launcher == "torchrun" and not (
                _nonempty(env, "TORCHELASTIC_RUN_ID") or "LOCAL_RANK" in env or "TORCHELASTIC_RESTART_COUNT" in env
            ):
                launcher = "env"  # RANK set by hand or by another launcher (torch.distributed env://)
            return value, launcher
    return None, None


def resolve_host(env: Mapping[str, str] | None = None) -> str:
    """``LINEPROFILER_HOST`` if set, else this machine's host name."""
    env = os.environ if env is None else env
    host = env.get(ENV_HOST, "").strip()
    if not host:
        try:
            host = socket.gethostname()
        except OSError:
            host = ""
    return host or "unknown-host"


def clean_role(role: str | None, env: Mapping[str, str] | None = None) -> str:
    """The role as given, else ``LINEPROFILER_ROLE``, else ``"main"`` (also for a blank one).

    Kept exactly (``学习者`` and ``gpu:0`` are roles of their own): a role names no file, and
    the worker file escapes what JSON text cannot hold.
    """
    env = os.environ if env is None else env
    if role is None:
        role = env.get(ENV_ROLE, "").strip()
    return role if role.strip() else "main"


def new_uuid8() -> str:
    return secrets.token_hex(4)


def build_identity(
    role: str | None,
    run: RunId,
    env: Mapping[str, str] | None = None,
    *,
    pid: int | None = None,
    uuid8: str | None = None,
) -> Identity:
    """The identity of this process, as of now (call again in a fork child)."""
    env = os.environ if env is None else env
    rank, launcher = resolve_rank(env)
    if launcher is None and run.source in ("slurm", "torchrun", "mpi", "pmix"):
        launcher = run.source
    return Identity(
        run_id=run.run_id,
        attempt=run.attempt,
        run_id_source=run.source,
        role=clean_role(role, env),
        host=resolve_host(env),  # as it is: only its folder name is escaped (layout.host_component)
        pid=os.getpid() if pid is None else pid,
        parent_pid=os.getppid(),
        uuid=uuid8 or new_uuid8(),
        rank=rank,
        local_rank=_first_int(env, _LOCAL_RANK_VARS),
        node_rank=_first_int(env, _NODE_RANK_VARS),
        world_size=_first_int(env, _WORLD_SIZE_VARS),
        job_id=run.job_id if run.job_id is not None else _job_id(env),
        launcher=launcher,
        argv=tuple(str(a) for a in sys.argv),
    )
