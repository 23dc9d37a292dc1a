"""Ray: every actor and task of a Ray job joins one run, on any node, with no shared file system.

::

    lp_ray.init(run_dir="profile")      # in the driver: starts Ray (takes ray.init's arguments),
                                        # or joins the Ray that ray.init() or a framework started

    @ray.remote
    class Actor:
        def __init__(self):
            self.profiler = Profiler()  # run dir, run id, host, role and rank come from Ray

    lp_ray.collect("profile")           # every node's files, into the driver's run dir

Every worker process of the job, on every node, needs ``LINEPROFILER_RUN_DIR`` and
``LINEPROFILER_PROFILE``. When :func:`init` starts Ray, it puts them in the job's runtime
environment. Ray fixes a job's runtime environment when ``ray.init`` connects, so when Ray is
already running (the user's own ``ray.init()``, Ray Tune's or Ray Train's, a notebook's cluster),
:func:`init` leaves them in Ray's key-value store under the job's id instead, and a worker of the
job that lacks them takes them from there (:func:`adopt_job_env`, which the Profiler calls before
it reads its environment) when it constructs its first Profiler after :func:`init`.

Inside a connected Ray process, ``lineprofiler.accounting.identity`` asks the functions below
(Ray's launcher in ``lineprofiler.accounting.launchers``) for what the environment does not say: the run id
``ray-<session>-<job>`` (job ids start again at 1 on every new cluster, the session does not);
the host (the node's host name; its IP address where another live node has that name; the name
and the node id where another has both, as several nodes on one machine do); the role (the
actor's class name, the task's function name); an actor's rank (the order in which the job's
actors first constructed a Profiler, kept in Ray's key-value store, so that a restarted actor
keeps it). ``LINEPROFILER_RUN_ID``, ``LINEPROFILER_HOST``, ``LINEPROFILER_ROLE``, ``RANK`` and
the like still win.

One Profiler per actor: an actor owns its worker process. A task runs in a pooled process that
runs many tasks: use :func:`task_profiler`, one Profiler per process and role.

:func:`collect` streams each live node's run directory to the driver through Ray's object store
(:mod:`._ray_files` does the files), and writes ``run_dir/ray/collect.json``: the nodes, the dead
actors that left no final flush, and ``caveats``, one line each for the report. A node whose run
directory is the driver's (the default ``node_run_dir`` on one host, a shared file system) sends
nothing: copying its files onto themselves would put a copy over the live file each running
process maps, and its numbers from then on would go to an unlinked inode.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import ray
except ImportError as _error:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "lineprofiler.integrations.ray needs Ray: pip install 'with-line-profiler[ray]'"
    ) from _error

from ..accounting import launchers
from ..accounting.identity import ENV_ATTEMPT, ENV_HOST, ENV_RUN_ID
from ..runfiles import layout, raycollect
from ..runfiles.raycollect import RAY_DIR
from . import _ray_files

__all__ = ["CollectResult", "NodeResult", "adopt_job_env", "collect", "init", "runtime_env", "task_profiler"]

# The Profiler's own environment variables (accounting/profiler.py reads them).
ENV_RUN_DIR = "LINEPROFILER_RUN_DIR"
ENV_PROFILE = "LINEPROFILER_PROFILE"

#: ``run_dir/ray/`` (RAY_DIR) holds ``collect.json`` (nodes and actors, with caveat lines: its
#: format is ``runfiles/raycollect.py``, which the report reads) and ``state.json`` (what was
#: copied from where, for the next collect).
COLLECT_FILE = raycollect.COLLECT_FILE
STATE_FILE = "state.json"
COLLECT_KIND = raycollect.KIND
COLLECT_SCHEMA = raycollect.SCHEMA_VERSION
#: Bytes per object sent through the object store, and how many a node may have in flight.
CHUNK_BYTES = 4 << 20
BACKPRESSURE_OBJECTS = 4
_KV_NAMESPACE = "lineprofiler"

_forked = False
_lock = threading.Lock()
_collect_lock = threading.Lock()
_cache: dict[Any, Any] = {}
_task_profilers: dict[str, Any] = {}


def _after_fork_child() -> None:
    # A fork child of a Ray process shares its parent's connection to Ray, which must not be
    # used from here: the profiler then takes what the parent exported (run id, host).
    global _forked
    _forked = True
    _task_profilers.clear()


os.register_at_fork(after_in_child=_after_fork_child)


# ---------------------------------------------------------------------- this process, as Ray sees it


def connected() -> bool:
    """True in a Ray driver or worker process connected to a cluster (not in a fork child of one)."""
    if _forked:
        return False
    try:
        if not ray.is_initialized():
            return False
        mp = sys.modules.get("multiprocessing")
        if mp is not None and mp.parent_process() is not None:
            return False  # a multiprocessing child: its parent's connection, not its own
        return _worker().mode in (ray.WORKER_MODE, ray.SCRIPT_MODE)
    except Exception:
        return False


def _worker() -> Any:
    return ray._private.worker.global_worker


def _is_worker() -> bool:
    return bool(_worker().mode == ray.WORKER_MODE)


_SESSION = re.compile(r"^session_(\d{4})-(\d\d)-(\d\d)_(\d\d)-(\d\d)-(\d\d)_(\d+)_(\d+)$")


def run_id_from(session: str, job_id: str) -> str:
    """``ray-20261130T091120.379609-14102-01000000`` from a session name and a job id (hex)."""
    match = _SESSION.match(session)
    if match:
        y, mo, d, h, mi, s, micro, pid = match.groups()
        stamp = f"{y}{mo}{d}T{h}{mi}{s}.{micro}-{pid}"
    else:
        stamp = session.removeprefix("session_")
    return f"ray-{stamp}-{job_id}"


def ray_run() -> tuple[str, str] | None:
    """``(run_id, job_id)`` of this Ray job, or None where Ray cannot say."""
    try:
        context = ray.get_runtime_context()
        job = context.get_job_id()
        try:
            session = context.get_session_name()
        except AttributeError:  # older Ray
            session = _worker().node.session_name
        if not job or not session:
            return None
        return run_id_from(str(session), str(job)), str(job)
    except Exception:
        return None


def host_label(node_id: str, nodes: list[dict[str, Any]]) -> str | None:
    """The node's host name; its IP where another live node has that name; the name and the
    node id's first 8 hex digits where another has both."""
    me = next((n for n in nodes if n.get("NodeID") == node_id), None)
    if me is None:
        return None
    name = str(me.get("NodeManagerHostname") or "") or None
    address = str(me.get("NodeManagerAddress") or "") or None
    others = [n for n in nodes if n.get("NodeID") != node_id and n.get("Alive")]
    if name and not any(n.get("NodeManagerHostname") == name for n in others):
        return name
    if address and not any(n.get("NodeManagerAddress") == address for n in others):
        return address
    return f"{name or address or 'node'}-{node_id[:8]}"


def node_host() -> str | None:
    """This node's host label (see :func:`host_label`), exported as ``LINEPROFILER_HOST`` so that
    this process's children and later profilers use the same one. None where Ray cannot say."""
    host = _cache.get("host")
    if host is None:
        try:
            host = host_label(ray.get_runtime_context().get_node_id(), ray.nodes())
        except Exception:
            return None
        if host is None:
            return None
        _cache["host"] = host
    if not os.environ.get(ENV_HOST, "").strip():
        os.environ[ENV_HOST] = host
    return str(host)


def task_role() -> str | None:
    """The running actor's class name or task's function name; None in the driver."""
    try:
        if not _is_worker():
            return None
        context = ray.get_runtime_context()
        function = context.get_task_function_name()  # "module.Class.method" or "module.function"
        if not function:
            return None
        parts = str(function).split(".")
        if context.get_actor_id() and len(parts) >= 2:
            return parts[-2]
        return parts[-1]
    except Exception:
        return None


def actor_rank() -> int | None:
    """This actor's rank: the order in which the run's actors first asked, kept in Ray's
    key-value store under the actor's id (a restarted actor keeps its rank). None outside an
    actor or where the store cannot be reached."""
    try:
        if not _is_worker():
            return None
        actor_id = ray.get_runtime_context().get_actor_id()
        if not actor_id:
            return None
        run = os.environ.get(ENV_RUN_ID, "").strip() or (ray_run() or ("", ""))[0]
        if not run:
            return None
        cached = _cache.get(("rank", run, actor_id))
        if cached is not None:
            return int(cached)
        from ray.experimental import internal_kv as kv

        mine = f"{run}/actor/{actor_id}"
        existing = kv._internal_kv_get(mine, namespace=_KV_NAMESPACE)
        if existing is not None:
            rank = int(existing)
        else:
            rank = len(kv._internal_kv_list(f"{run}/rank/", namespace=_KV_NAMESPACE))
            # put(overwrite=False) answers whether the key existed: another actor got there first
            while kv._internal_kv_put(f"{run}/rank/{rank}", actor_id, overwrite=False, namespace=_KV_NAMESPACE):
                rank += 1
            kv._internal_kv_put(mine, str(rank), namespace=_KV_NAMESPACE)
        _cache[("rank", run, actor_id)] = rank
        return rank
    except Exception:
        return None


@contextlib.contextmanager
def task_profiler(role: str | None = None, **kwargs: Any) -> Iterator[Any]:
    """``with lp_ray.task_profiler() as profiler:`` inside a Ray task: this worker process's
    Profiler for ``role`` (default: the task's function name), constructed by the first task of
    that role that Ray runs in the process and reused by the next ones; a snapshot is written when
    the block ends.

    A pooled worker process runs many tasks over its life, and Ray ends it without an exit flush:
    one Profiler per task call would be one worker file per call, and a Profiler left open by one
    task would record the next task's phases. Here tasks of another role get a Profiler of their
    own, so their phases are never mixed, and each block ends with the task's numbers on disk.
    ``kwargs`` go to the first construction only.
    """
    from ..accounting import Profiler

    adopt_job_env()
    name = role if role is not None else (task_role() or "task")
    with _lock:
        profiler = _task_profilers.get(name)
        if profiler is None or getattr(profiler, "_closed", False):
            profiler = _task_profilers[name] = Profiler(role=name, **kwargs)
    try:
        yield profiler
    finally:
        profiler.flush()


launchers.register(launchers.Launcher(
    "ray", connected, run=ray_run, host=node_host, role=task_role, rank=actor_rank, adopt_env=lambda: adopt_job_env(),
))


# ---------------------------------------------------------------------- the driver: init


def runtime_env(
    run_dir: str | os.PathLike[str] = "profile",
    *,
    node_run_dir: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The runtime environment that puts every worker of the job into this run:
    ``ray.init(runtime_env=lp_ray.runtime_env("profile"))``.

    ``node_run_dir`` is where the workers write on their node (default: ``run_dir`` made
    absolute); Ray expands ``${VAR}`` in it with the node's own environment. A
    ``LINEPROFILER_RUN_ID`` set in the driver's environment is passed on; otherwise it is passed
    empty, so a value a node inherited does not split the run.
    """
    env = os.environ if env is None else env
    if not isinstance(run_dir, (str, os.PathLike)):
        raise TypeError(f"run_dir must be a str or a path, not {type(run_dir).__name__}")
    if node_run_dir is not None and not isinstance(node_run_dir, str):
        raise TypeError(f"node_run_dir must be a str or None, not {type(node_run_dir).__name__}")
    fixed = env.get(ENV_RUN_ID, "").strip()
    variables = {
        ENV_RUN_DIR: node_run_dir or os.path.abspath(os.fspath(run_dir)),
        ENV_PROFILE: env.get(ENV_PROFILE, "1"),
        ENV_RUN_ID: fixed,
        ENV_ATTEMPT: env.get(ENV_ATTEMPT, "0") if fixed else "",
    }
    return {"env_vars": variables}


def init(
    run_dir: str | os.PathLike[str] = "profile", *, node_run_dir: str | None = None, **ray_init_kwargs: Any
) -> str:
    """Start Ray for a profiled job (``ray.init(**ray_init_kwargs)`` with :func:`runtime_env`
    merged in), or join the job of the Ray this process already runs; returns the run id.

    Ray already running without the profiler's runtime environment (a plain ``ray.init()``, a
    framework's, a notebook's cluster): the variables go to Ray's key-value store for this job,
    where the job's workers find them (:func:`adopt_job_env`); actors and tasks that construct
    their Profiler after this call join the run. In this process it exports
    ``LINEPROFILER_RUN_DIR`` (``run_dir``) and ``LINEPROFILER_RUN_ID``, so a Profiler constructed
    in the driver afterwards joins the run. RuntimeError for ``ray.init`` arguments when Ray is
    already running, or when Ray's key-value store cannot be written.
    """
    ours = runtime_env(run_dir, node_run_dir=node_run_dir)["env_vars"]
    if ray.is_initialized():
        if ray_init_kwargs:
            raise RuntimeError("lineprofiler: Ray is already running; ray.init arguments cannot be applied")
        try:
            have = dict((ray.get_runtime_context().runtime_env or {}).get("env_vars") or {})
        except Exception:
            have = {}
        if ENV_RUN_DIR in have:
            node_dir = str(have[ENV_RUN_DIR])
        else:
            _publish_job_env(ours)
            node_dir = ours[ENV_RUN_DIR]
    else:
        given = ray_init_kwargs.pop("runtime_env", None) or {}
        merged = dict(given)
        merged["env_vars"] = {**ours, **dict(given.get("env_vars") or {})}  # yours win
        node_dir = str(merged["env_vars"][ENV_RUN_DIR])
        ray.init(runtime_env=merged, **ray_init_kwargs)
    fixed = os.environ.get(ENV_RUN_ID, "").strip()
    if fixed:
        run = fixed
    else:
        found = ray_run()
        run = found[0] if found else f"ray-{secrets.token_hex(4)}"
        os.environ[ENV_RUN_ID] = run
        os.environ[ENV_ATTEMPT] = "0"
    driver_dir = os.path.abspath(os.fspath(run_dir))
    os.environ[ENV_RUN_DIR] = driver_dir
    _cache["driver"] = {"run_dir": driver_dir, "node_run_dir": node_dir, "run_id": run, "start_ns": time.time_ns()}
    return run


# ---------------------------------------------------------------------- a job Ray started without us

#: The variables :func:`init` hands to the job's workers; nothing else is taken from the store.
_JOB_ENV_NAMES = (ENV_RUN_DIR, ENV_PROFILE, ENV_RUN_ID, ENV_ATTEMPT)
_UNSET_VARIABLE = re.compile(r"\$\{[A-Za-z0-9_]+\}")


def _job_env_key(job_id: str) -> str:
    return f"job/{job_id}/env"


def _publish_job_env(variables: Mapping[str, str]) -> None:
    """Leaves ``variables`` in Ray's key-value store for this job's workers. RuntimeError when it
    cannot: the workers would then record outside the run."""
    try:
        from ray.experimental import internal_kv as kv

        job = str(ray.get_runtime_context().get_job_id())
        value = json.dumps({name: str(variables[name]) for name in _JOB_ENV_NAMES})
        kv._internal_kv_put(_job_env_key(job), value, overwrite=True, namespace=_KV_NAMESPACE)
    except Exception as error:
        raise RuntimeError(
            f"lineprofiler: Ray is running without the profiler's runtime environment, and its key-value store "
            f"cannot take it ({type(error).__name__}: {error}); call lp_ray.init(run_dir, ...) before Ray starts, or "
            f"pass runtime_env=lp_ray.runtime_env(run_dir) to ray.init"
        ) from None


def _expand(value: str) -> str:
    """``${VAR}`` from this process's environment, as Ray expands a runtime environment's
    variables: a variable that is not set becomes empty."""
    return _UNSET_VARIABLE.sub("", os.path.expandvars(value))


def adopt_job_env() -> bool:
    """In a Ray worker process whose environment lacks ``LINEPROFILER_RUN_DIR``: export the
    variables :func:`init` left in Ray's key-value store for this job, when Ray was already running
    without the profiler's runtime environment, so that the Profiler constructed next joins the
    run. True when it exported them. Never raises; once the process has the variables, it costs
    an environment lookup."""
    if os.environ.get(ENV_RUN_DIR) or not connected() or not _is_worker():
        return False
    try:
        from ray.experimental import internal_kv as kv

        job = str(ray.get_runtime_context().get_job_id())
        raw = kv._internal_kv_get(_job_env_key(job), namespace=_KV_NAMESPACE)
        found = json.loads(raw) if raw else None
    except Exception:
        return False
    if not isinstance(found, dict) or not isinstance(found.get(ENV_RUN_DIR), str):
        return False
    for name in _JOB_ENV_NAMES:
        value = found.get(name)
        if isinstance(value, str):
            os.environ[name] = _expand(value)
    return bool(os.environ.get(ENV_RUN_DIR))


# ---------------------------------------------------------------------- collect: the node side


def read_node(known: Mapping[str, Any], probe: Mapping[str, Any], chunk_bytes: int) -> Iterator[dict[str, Any]]:
    """Run on a node by :func:`collect`: ``{"kind": "hello", ...}`` (this node, its machine, its
    run directory), then :func:`_ray_files.stream_files` of that directory. ``probe``: what tells
    the driver's run directory (:func:`_ray_files.same_directory`); a node run directory that is
    that folder (one host, a shared file system) is not sent, so never copied onto itself."""
    adopt_job_env()  # a job Ray started without the profiler's runtime environment
    root = os.environ.get(ENV_RUN_DIR) or ""
    hello: dict[str, Any] = {
        "kind": "hello", "run_dir": root, "host": None, "machine": layout.machine_id(), "same": False,
        "missing": False,
    }
    try:
        node_id = ray.get_runtime_context().get_node_id()
        hello["host"] = os.environ.get(ENV_HOST, "").strip() or host_label(node_id, ray.nodes())
    except Exception:
        pass
    if not root or not os.path.isdir(root):
        hello["missing"] = True
    elif _ray_files.same_directory(root, probe):
        hello["same"] = True
    yield hello
    if hello["missing"] or hello["same"]:
        yield {"kind": "done", "present": None, "errors": []}
        return
    yield from _ray_files.stream_files(root, known, chunk_bytes)


# ---------------------------------------------------------------------- collect: the driver side


@dataclass
class NodeResult:
    """What one collect did for one node."""

    node_id: str
    host: str | None
    ip: str | None
    alive: bool
    #: "collected", "same-dir" (its run directory is the driver's: nothing to copy), "left" (no
    #: longer in the cluster), "failed" (the node's task failed: see ``errors``) or
    #: "collecting" (unfinished)
    state: str = "collecting"
    files: int = 0
    bytes: int = 0
    removed: int = 0
    #: files not copied because the driver's copy is the node's file itself
    in_place: int = 0
    node_run_dir: str | None = None
    last_collected_unix_ns: int | None = None
    reason: str | None = None
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "host": self.host, "ip": self.ip, "alive": self.alive, "state": self.state,
            "files_copied": self.files, "bytes_copied": self.bytes, "files_removed": self.removed,
            "files_in_place": self.in_place, "node_run_dir": self.node_run_dir,
            "last_collected_unix_ns": self.last_collected_unix_ns, "reason": self.reason, "errors": self.errors[:20],
        }


@dataclass
class CollectResult:
    """What :func:`collect` did: one :class:`NodeResult` per node, and the caveat lines."""

    run_dir: Path
    nodes: list[NodeResult]
    caveats: list[str]
    dead_actors: list[dict[str, Any]]
    #: the driver's own problems: ray/state.json or ray/collect.json not written
    errors: list[str] = field(default_factory=list)

    @property
    def files(self) -> int:
        return sum(n.files for n in self.nodes)

    @property
    def bytes(self) -> int:
        return sum(n.bytes for n in self.nodes)


def _utc(unix_ns: int | None) -> str:
    if not unix_ns:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix_ns / 1e9))


def _node_name(node: NodeResult) -> str:
    where = f"{node.host}" if node.host else f"node {node.node_id[:8]}"
    details = ", ".join(x for x in (node.ip, f"node {node.node_id[:8]}" if node.host else None) if x)
    return f"{where} ({details})" if details else where


def _dead_actors(job_id: str | None, labels: dict[str, str]) -> list[dict[str, Any]]:
    """This job's actors that Ray reports dead, with the reason it gives."""
    if not job_id:
        return []
    try:
        from ray._private import state as ray_state
        from ray.core.generated import common_pb2

        table = ray_state.state.actor_table(None, job_id=ray.JobID.from_hex(job_id), actor_state_name="DEAD")
    except Exception:
        return []
    dead = []
    for actor_id, row in sorted(table.items()):
        cause = row.get("DeathCause")
        context = getattr(cause, "actor_died_error_context", None)
        reason_number = getattr(context, "reason", 0)
        try:
            reason = common_pb2.ActorDiedErrorContext.Reason.Name(reason_number)  # type: ignore[attr-defined]
        except Exception:
            reason = "UNSPECIFIED"
        node_id = str((row.get("Address") or {}).get("NodeID") or "")
        message = str(getattr(context, "error_message", "") or "").strip()
        dead.append({
            "actor_id": actor_id, "class_name": row.get("ActorClassName"), "name": row.get("Name") or None,
            "pid": row.get("Pid"), "node_id": node_id, "host": labels.get(node_id), "reason": reason,
            "message": message[:300], "end_unix_ms": row.get("EndTime") or None,
        })
    return dead


def _unfinished(dest: Path, actor: dict[str, Any]) -> bool:
    """True when the dead actor's process left a worker file here without a final flush (an
    actor that ended normally wrote one at exit; one that never profiled left no file)."""
    from ..runfiles import workerfile

    host, pid = actor.get("host"), actor.get("pid")
    if not host or not isinstance(pid, int):
        return False
    folder = workerfile.worker_dir(dest, host)
    try:
        paths = list(folder.glob(f"w_*_{pid}_*.json"))
    except OSError:
        return False
    statuses = []
    for path in paths:
        try:
            document = workerfile.read_worker_file(path, skip_samples=True)
        except (workerfile.WorkerFileError, OSError):
            continue
        if document["identity"].get("pid") == pid:
            statuses.append(document["times"].get("status"))
    return bool(statuses) and not any(status in ("exited", "signalled") for status in statuses)


def _known_nodes(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``state.json``'s nodes, each with only what collect uses, of the types it uses: a file
    edited by hand or cut short costs what it no longer says, never an exception."""
    saved = state.get("nodes")
    known: dict[str, dict[str, Any]] = {}
    if not isinstance(saved, dict):
        return known
    for node_id, node in saved.items():
        if not isinstance(node_id, str) or not isinstance(node, dict):
            continue
        files = node.get("files")
        last = node.get("last_collected_unix_ns")
        known[node_id] = {
            "host": _text(node.get("host")),
            "ip": _text(node.get("ip")),
            "files": {
                rel: mark for rel, mark in (files.items() if isinstance(files, dict) else ())
                if isinstance(rel, str) and isinstance(mark, list)
            },
            "last_collected_unix_ns": last if type(last) is int and last > 0 else None,
        }
    return known


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _place_marker(dest: Path, errors: list[str]) -> dict[str, Any]:
    """What a node needs to tell that its run directory is ``dest``
    (:func:`_ray_files.same_directory`): ``dest``'s file identity, and the token of a marker
    written under ``dest/ray/`` for this collect."""
    token = secrets.token_hex(16)
    try:
        layout.write_atomic(_ray_files.marker_path(dest, token), token.encode("ascii"), root=dest)
    except OSError as error:
        errors.append(
            f"{dest / RAY_DIR}: marker not written ({error.strerror or error}): a node that shares this run "
            f"directory from another machine cannot tell"
        )
        token = ""
    identity = layout.file_identity(dest)
    return {"identity": list(identity) if identity is not None else None, "token": token}


def _remove_marker(dest: Path, probe: Mapping[str, Any]) -> None:
    if probe.get("token"):
        with contextlib.suppress(OSError):
            layout.remove(_ray_files.marker_path(dest, probe["token"]), root=dest)


def collect(run_dir: str | os.PathLike[str] | None = None, *, timeout_s: float = 600.0) -> CollectResult:
    """Copy every live node's run-directory files that changed since the last collect into
    ``run_dir`` (default: the driver's, as :func:`init` set it), and write ``run_dir/ray/
    collect.json``. Call it from the driver, while Ray runs: during the job for a live report,
    and at its end before ``ray.shutdown()``.

    A node whose run directory is ``run_dir`` itself (the default ``node_run_dir`` on one host,
    or a shared file system) is left as it is: its files, and the live files its processes
    map, are never copied onto themselves. A node that fails, sends what collect cannot read, or
    does not answer within ``timeout_s`` costs its own files only; it is named in the result and
    in ``collect.json``. Raises RuntimeError when Ray is not running.
    """
    if not ray.is_initialized():
        raise RuntimeError("lineprofiler: collect needs a running Ray (call it before ray.shutdown())")
    configured = _cache.get("driver") or {}
    dest = Path(os.path.abspath(os.fspath(
        run_dir or configured.get("run_dir") or os.environ.get(ENV_RUN_DIR) or "profile"
    )))
    dest.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    with _collect_lock:
        errors: list[str] = []
        known_nodes = _known_nodes(_ray_files.read_json(dest / RAY_DIR / STATE_FILE))
        nodes = ray.nodes()
        labels = {str(n["NodeID"]): host_label(str(n["NodeID"]), nodes) or "" for n in nodes}
        found = ray_run()
        job_id = found[1] if found else None
        dead_actors = _dead_actors(job_id, labels)
        results: dict[str, NodeResult] = {}
        streams: dict[str, Any] = {}
        reader = _cache.get("reader") or _cache.setdefault("reader", ray.remote(read_node))
        probe = _place_marker(dest, errors)
        try:
            for n in nodes:
                node_id = str(n["NodeID"])
                before = known_nodes.get(node_id) or {}
                result = NodeResult(
                    node_id, before.get("host") or labels.get(node_id), n.get("NodeManagerAddress"),
                    bool(n.get("Alive")), last_collected_unix_ns=before.get("last_collected_unix_ns"),
                )
                if not result.alive:
                    ran_here = bool(before) or any(a["node_id"] == node_id for a in dead_actors)
                    if ran_here:
                        result.state = "left"
                        result.reason = str(n.get("DeathReasonMessage") or "") or None
                        results[node_id] = result
                    continue
                results[node_id] = result
                streams[node_id] = reader.options(
                    num_cpus=0, max_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    _generator_backpressure_num_objects=BACKPRESSURE_OBJECTS,
                ).remote(before.get("files") or {}, probe, CHUNK_BYTES)
            for node_id, known in known_nodes.items():  # collected before, gone from Ray's table since
                if node_id not in results and node_id not in {str(n["NodeID"]) for n in nodes}:
                    results[node_id] = NodeResult(
                        node_id, known.get("host"), known.get("ip"), False, state="left",
                        last_collected_unix_ns=known.get("last_collected_unix_ns"),
                    )
            for node_id, stream in streams.items():
                _receive_node(dest, results[node_id], known_nodes.setdefault(node_id, {}), stream, deadline)
        finally:
            _remove_marker(dest, probe)
        ordered = sorted(results.values(), key=lambda r: (r.state != "same-dir", r.host or "", r.node_id))
        hosts = {r.node_id: r.host for r in ordered if r.host}
        for actor in dead_actors:
            actor["host"] = hosts.get(actor["node_id"]) or actor["host"]
        dead_actors = [a for a in dead_actors if _unfinished(dest, a)]
        caveats = _caveats(ordered, dead_actors)
        run = configured.get("run_id") or os.environ.get(ENV_RUN_ID) or (found[0] if found else None)
        for name, document in (
            (STATE_FILE, {"kind": COLLECT_KIND + "-state", "nodes": known_nodes}),
            (COLLECT_FILE, raycollect.build_document(
                run_id=run, job_id=job_id, collected_unix_ns=time.time_ns(),
                nodes=[r.to_json() for r in ordered], dead_actors=dead_actors, caveats=caveats,
            )),
        ):
            try:
                _ray_files.write_json(dest / RAY_DIR, name, document)
            except OSError as error:  # the copies are in place; the next collect copies them again
                errors.append(f"{dest / RAY_DIR / name} not written: {error.strerror or error}")
    return CollectResult(dest, ordered, caveats, dead_actors, errors)


def _receive_node(dest: Path, result: NodeResult, before: dict[str, Any], stream: Any, deadline: float) -> None:
    """One node's stream into ``dest``: ``result`` says what came of it, ``before`` (its entry in
    ``state.json``) what was copied from it, for the next collect."""
    files = dict(before.get("files") or {})
    try:
        items = _items(stream, deadline)
        hello = next(items, None)
        if not isinstance(hello, dict) or hello.get("kind") != "hello":
            raise _ray_files.MalformedMessage("the node's first message is not its hello")
        result.host = _text(hello.get("host")) or result.host
        result.node_run_dir = _text(hello.get("run_dir"))
        if hello.get("missing") is True:
            result.errors.append(f"no run directory {result.node_run_dir!r} on this node")
        received = _ray_files.receive(dest, items, files, node_machine=_text(hello.get("machine")))
        result.files, result.bytes, result.removed = received.files, received.bytes, received.removed
        result.in_place = received.in_place
        result.errors.extend(received.errors)
        if received.done:
            result.state = "same-dir" if hello.get("same") is True else "collected"
    except Exception as error:
        result.state = "failed"
        first = (str(error).strip().splitlines() or [""])[0][:300]
        result.errors.insert(0, f"{type(error).__name__}: {first}")
    finally:
        try:
            ray.cancel(stream, force=True)
        except Exception:
            pass
    if result.state in ("collected", "same-dir"):
        result.last_collected_unix_ns = time.time_ns()
    before.update(host=result.host, ip=result.ip, files=files, last_collected_unix_ns=result.last_collected_unix_ns)


def _items(stream: Any, deadline: float) -> Iterator[dict[str, Any]]:
    """The node's stream, one object at a time, within the deadline."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the node did not finish within collect's timeout")
        ready, _ = ray.wait([stream], timeout=remaining)
        if not ready:
            raise TimeoutError("the node did not finish within collect's timeout")
        try:
            ref = next(stream)
        except StopIteration:
            return
        yield ray.get(ref)


def _caveats(nodes: list[NodeResult], dead_actors: list[dict[str, Any]]) -> list[str]:
    lines = []
    for node in nodes:
        if node.state == "left":
            why = f" ({node.reason})" if node.reason else ""
            if node.last_collected_unix_ns:
                lines.append(
                    f"Ray node {_node_name(node)} left the cluster{why}: what its processes wrote after the "
                    f"collect of {_utc(node.last_collected_unix_ns)} is missing"
                )
            else:
                lines.append(
                    f"Ray node {_node_name(node)} left the cluster{why} before any collect: its processes "
                    f"are missing from every total"
                )
        elif node.state not in ("collected", "same-dir"):
            first = node.errors[0] if node.errors else "no answer"
            lines.append(
                f"Ray node {_node_name(node)} could not be collected ({first}): its newest files may be missing"
            )
        elif node.errors:
            lines.append(f"Ray node {_node_name(node)}: {len(node.errors)} file(s) not copied; first: {node.errors[0]}")
    for actor in dead_actors:
        where = f" on {actor['host']}" if actor.get("host") else ""
        message = actor.get("message") or actor["reason"]
        lines.append(
            f"Ray actor {actor.get('class_name') or '?'} pid {actor.get('pid')}{where} died ({message}): "
            f"its numbers stop at its last snapshot"
        )
    return lines
