"""Who a worker is: host, pid, rank, job, and which run (and attempt) it belongs to.

Everything here reads the environment (a mapping, so tests pass their own) and never raises
for what it finds there: a malformed rank is recorded as unknown (None), not an error.

Run id, first match wins (``run_id_source`` in the worker file names the rule that decided):

1. ``env``: ``LINEPROFILER_RUN_ID`` (set by the first enabled profiler of a process tree, or
   by you); its attempt from ``LINEPROFILER_ATTEMPT``.
2. ``ray``: inside a connected Ray process, ``ray-<session>-<job>`` from Ray. Ray is a launcher
   of :mod:`.launchers`: the one this process is connected to also names the host, the role and
   an actor's rank where the environment does not.
3. ``slurm`` / ``torchrun`` / ``mpi`` / ``pmix``: a launcher's job id, so independent
   processes of one job join one run with no parent profiler: Slurm ``SLURM_JOB_ID``
   (+ ``SLURM_STEP_ID``), torchrun ``TORCHELASTIC_RUN_ID``, Open MPI
   ``OMPI_MCA_ess_base_jobid`` or PMIx ``PMIX_NAMESPACE``. A requeued Slurm job
   (``SLURM_RESTART_COUNT``) or a restarted torchrun group (``TORCHELASTIC_RESTART_COUNT``)
   is a new attempt: the run id gets an ``-r<n>`` / ``-t<n>`` suffix and ``attempt`` counts up.
4. ``parent``: a ``multiprocessing`` child (Process, Pool, ProcessPoolExecutor; any start
   method) joins the run its parent's worker file names, when the parent is profiled into
   the same run directory and its file was written by that very parent process.
5. ``parent-process``: a ``multiprocessing`` child of a parent that wrote no such file takes
   an id derived from the parent process alone, ``mp<pid>-<hex>`` (a hash of its pid, its
   start time in ``/proc/<pid>/stat`` and the boot id): every child of one parent lands in
   one run, attempt 0, and a rerun (a new parent process) is a new run. Only multiprocessing
   children use this rule (``multiprocessing.parent_process()`` is not None): a script
   started from a shell, a launcher or ``subprocess`` never shares an id with a sequential
   rerun by accident.
6. ``generated``: a new id from the UTC time and 6 random hex digits
   (``20260813T2241-471c94``): a rerun into the same directory is then a new run, which the
   report shows as the newest attempt rather than merging it with the last one. Runs with
   ``generated`` or ``parent-process`` ids that overlap in time are merged by the report.
"""

from __future__ import annotations

import os
import sys
import time

from .._record import Record
from ..runfiles.layout import sanitize_component
from . import launchers

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Mapping

#: The environment a profiler reads, and exports for its children (defined here only).
ENV_PROFILE = "LINEPROFILER_PROFILE"
ENV_RUN_DIR = "LINEPROFILER_RUN_DIR"
ENV_RUN_ID = "LINEPROFILER_RUN_ID"
ENV_ATTEMPT = "LINEPROFILER_ATTEMPT"
ENV_HOST = "LINEPROFILER_HOST"
ENV_ROLE = "LINEPROFILER_ROLE"
#: The project folder of ``backend="lines"`` windows that name none (read, never exported).
ENV_LINES_PROJECT = "LINEPROFILER_LINES_PROJECT"

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


class RunId(Record):
    """A run id, its attempt number and where it came from.

    ``source`` names the rule that decided: "env", "ray", "slurm", "torchrun", "mpi", "pmix",
    "parent", "parent-process" or "generated" (see the module docstring).
    """

    __slots__ = ("run_id", "attempt", "source", "job_id")

    def __init__(self, run_id: str, attempt: int, source: str, job_id: str | None = None) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.source = source
        self.job_id = job_id


class Identity(Record):
    """A worker's identity as recorded in its worker file."""

    __slots__ = (
        "run_id", "attempt", "run_id_source", "role", "host", "pid", "parent_pid", "uuid", "rank", "local_rank",
        "node_rank", "world_size", "job_id", "launcher", "python", "argv",
    )

    def __init__(
        self,
        run_id: str,
        attempt: int,
        run_id_source: str,
        role: str,
        host: str,
        pid: int,
        parent_pid: int,
        uuid: str,
        rank: int | None = None,
        local_rank: int | None = None,
        node_rank: int | None = None,
        world_size: int | None = None,
        job_id: str | None = None,
        launcher: str | None = None,
        python: str | None = None,
        argv: tuple[str, ...] = (),
    ) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.run_id_source = run_id_source
        self.role = role
        self.host = host
        self.pid = pid
        self.parent_pid = parent_pid
        self.uuid = uuid
        self.rank = rank
        self.local_rank = local_rank
        self.node_rank = node_rank
        self.world_size = world_size
        self.job_id = job_id
        self.launcher = launcher
        self.python = sys.version.split()[0] if python is None else python
        self.argv = argv

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


def profile_env_on() -> bool:
    """Whether ``LINEPROFILER_PROFILE`` leaves a profiler on: unset or empty does; ``0``, ``false``,
    ``no`` and ``off`` (any case) do not, with a warning where 0.10.0 read the value as on."""
    from .._env_switch import env_says_on

    return env_says_on(ENV_PROFILE, empty_is_on=True)


def adopt_ray_job_env() -> None:
    """A worker of a job that its launcher joined after the job had started (``lp_ray.init``
    after the user's or a framework's ``ray.init()``) finds the run's settings with the launcher,
    not in its environment: export them before the profiler reads it. Nothing where no launcher's
    runtime was imported or the environment already names a run directory. Never raises."""
    if os.environ.get(ENV_RUN_DIR):
        return
    launcher = launchers.connected(os.environ)
    if launcher is None:
        return
    try:
        launcher.adopt_env()
    except Exception:  # a guest: without the settings the profiler is what the arguments say
        pass


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
    return f"{stamp}-{os.urandom(3).hex()}"


def resolve_run_id(env: Mapping[str, str] | None = None) -> RunId:
    """The run this process belongs to (see the module docstring for the order)."""
    env = os.environ if env is None else env
    inherited = _nonempty(env, ENV_RUN_ID)
    if inherited is not None:
        attempt = _counter(env, ENV_ATTEMPT)
        return RunId(sanitize_component(inherited, "run"), attempt, "env", job_id=_job_id(env))
    launcher = launchers.connected(env)
    found = launcher.run() if launcher is not None else None
    if launcher is not None and found:
        return RunId(sanitize_component(found[0], "run"), 0, launcher.name, job_id=found[1])
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


#: Where the kernel says when a process started and which boot this is (tests pass their own).
PROC_ROOT = "/proc"
#: A parent's worker file must have been started no earlier than this before the parent
#: process itself (its start time in /proc is derived from a boot time in whole seconds):
#: an older file with the parent's pid is another process's, from an earlier run.
_PARENT_FILE_SLACK_NS = 2_000_000_000


class ProcessStart(Record):
    """When a process started, as the kernel has it: enough to tell it from a later process
    that reuses its pid.

    ``start_ticks``: field 22 of ``/proc/<pid>/stat``, clock ticks from boot to the process's
    start. ``boot``: ``/proc/sys/kernel/random/boot_id``, or ``btime`` from ``/proc/stat``
    where that is unreadable. ``start_unix_ns``: the start as Unix time (ns), from ``btime``
    and the ticks; None when ``btime`` is unknown.
    """

    __slots__ = ("pid", "start_ticks", "boot", "start_unix_ns")

    def __init__(self, pid: int, start_ticks: int, boot: str, start_unix_ns: int | None) -> None:
        self.pid = pid
        self.start_ticks = start_ticks
        self.boot = boot
        self.start_unix_ns = start_unix_ns


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def process_start(pid: int, proc: str | None = None) -> ProcessStart | None:
    """The start of process ``pid`` from ``/proc``; None when it cannot be read (gone, another
    system, a /proc mounted with hidepid)."""
    proc = PROC_ROOT if proc is None else proc
    stat = _read_text(f"{proc}/{int(pid)}/stat")
    if stat is None:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    fields = stat[stat.rfind(")") + 1 :].split()
    try:
        ticks = int(fields[19])
    except (IndexError, ValueError):
        return None
    btime = None
    for line in (_read_text(f"{proc}/stat") or "").splitlines():
        if line.startswith("btime "):
            btime = _int_or_none(line[6:])
            break
    boot = (_read_text(f"{proc}/sys/kernel/random/boot_id") or "").strip()
    if not boot:
        # btime can move by a second when the clock is adjusted, so children that read it on
        # either side of an adjustment would disagree: the boot id is far better, and usual.
        if btime is None:
            return None  # nothing tells this boot from another
        boot = f"btime-{btime}"
    try:
        hz = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        hz = 100
    start_ns = None if btime is None or hz <= 0 else btime * 1_000_000_000 + ticks * 1_000_000_000 // hz
    return ProcessStart(int(pid), ticks, boot, start_ns)


def process_run_id(start: ProcessStart) -> str:
    """The run id every child of the process ``start`` describes derives alike:
    ``mp<pid>-<6 hex digits of its boot, pid and start ticks>``.

    No wall-clock part: ``btime`` in /proc/stat follows clock adjustments, so two children
    reading it a minute apart could disagree on a time stamp; boot id, pid and ticks never move.
    """
    import hashlib  # here: only a multiprocessing child of an unprofiled parent needs it

    digest = hashlib.sha256(f"{start.boot}/{start.pid}/{start.start_ticks}".encode()).hexdigest()[:6]
    return f"mp{start.pid}-{digest}"


def multiprocessing_parent_pid() -> int | None:
    """The pid of the process that started this one through ``multiprocessing``, or None.

    Not ``os.getppid()``: a forkserver's child has the server as its OS parent, and an
    orphan has init. None for any process not started by multiprocessing (a script run from
    a shell, a launcher or ``subprocess``).
    """
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return None
    try:
        parent = mp.parent_process()
        pid = None if parent is None else parent.pid
    except Exception:  # an exotic multiprocessing state: no parent to join
        return None
    return int(pid) if isinstance(pid, int) and pid > 0 else None


def _parent_file_run(run_dir: str | os.PathLike[str], host: str, parent_pid: int,
                     start: ProcessStart | None) -> RunId | None:
    from ..runfiles import workerfile  # here: only a multiprocessing child reads its parent's file

    for document in workerfile.worker_files_of(run_dir, host, parent_pid):
        identity, times = document["identity"], document["times"]
        if (
            start is not None
            and start.start_unix_ns is not None
            and times["start_unix_ns"] < start.start_unix_ns - _PARENT_FILE_SLACK_NS
        ):
            continue  # written by an earlier process with the same pid
        return RunId(
            sanitize_component(identity["run_id"], "run"), int(identity.get("attempt", 0)), "parent",
            job_id=identity.get("job_id"),
        )
    return None


def parent_run_id(run_dir: str | os.PathLike[str], host: str, *, proc: str | None = None) -> RunId | None:
    """The run of this process's multiprocessing parent, for a child with no run id in its
    environment and no launcher's job id; None when this is no multiprocessing child or
    nothing about the parent can be read.

    A forkserver started before the parent's profiler hands its children the environment it
    had then, without LINEPROFILER_RUN_ID; an unprofiled parent never had one. The parent's
    worker file (same run dir, same host, the parent's pid, written since the parent
    started) names the run to join (source ``"parent"``); without one, the id is derived
    from the parent process itself (source ``"parent-process"``, attempt 0), so that every
    child of one parent still agrees and the next run's parent makes a new one.
    """
    parent_pid = multiprocessing_parent_pid()
    if parent_pid is None:
        return None
    start = process_start(parent_pid, proc)
    joined = _parent_file_run(run_dir, host, parent_pid, start)
    if joined is not None:
        return joined
    if start is None:
        return None
    return RunId(process_run_id(start), 0, "parent-process", job_id=None)


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
    connected = launchers.connected(env)
    rank = connected.rank() if connected is not None else None
    return (rank, connected.name) if connected is not None and isinstance(rank, int) else (None, None)


def resolve_host(env: Mapping[str, str] | None = None) -> str:
    """``LINEPROFILER_HOST`` if set, else this machine's host name."""
    env = os.environ if env is None else env
    host = env.get(ENV_HOST, "").strip() or _launcher_host(env) or ""
    if not host:
        host = machine_name()
    return host or "unknown-host"


def _launcher_host(env: Mapping[str, str]) -> str | None:
    launcher = launchers.connected(env)
    return launcher.host() if launcher is not None else None


def _launcher_role(env: Mapping[str, str]) -> str | None:
    launcher = launchers.connected(env)
    return launcher.role() if launcher is not None else None


def machine_name() -> str:
    """This machine's host name: the node name ``uname(2)`` gives, which is what
    ``socket.gethostname()`` returns on Linux, without importing :mod:`socket`; "" when unknown."""
    try:
        return os.uname().nodename
    except (AttributeError, OSError):  # no uname() (Windows)
        pass
    try:
        import socket

        return socket.gethostname()
    except OSError:
        return ""


def clean_role(role: str | None, env: Mapping[str, str] | None = None) -> str:
    """The role as given, else ``LINEPROFILER_ROLE``, else ``"main"`` (also for a blank one).

    Kept exactly (``学习者`` and ``gpu:0`` are roles of their own): a role names no file, and
    the worker file escapes what JSON text cannot hold.
    """
    env = os.environ if env is None else env
    if role is None:
        role = env.get(ENV_ROLE, "").strip() or _launcher_role(env) or ""
    return role if role.strip() else "main"


def new_uuid8() -> str:
    return os.urandom(4).hex()


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
    if launcher is None and (run.source in ("slurm", "torchrun", "mpi", "pmix") or run.source in launchers.names()):
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
