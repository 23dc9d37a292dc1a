"""This process as Ray sees it: whether it is connected to Ray, its job's run id, its host label,
role and actor rank, the run's settings Ray keeps for its job, and its task profilers.

Registers Ray as a launcher of :mod:`lineprofiler.accounting.launchers` when imported: inside a
connected Ray process, :mod:`lineprofiler.accounting.identity` asks the functions below for what
the environment does not say (see :mod:`lineprofiler.integrations.ray`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from typing import Any

import ray

from .. import _lifecycle
from ..accounting import launchers
from ..accounting.identity import ENV_ATTEMPT, ENV_HOST, ENV_PROFILE, ENV_RUN_DIR, ENV_RUN_ID

#: Where the profiler's keys lie in Ray's key-value store (actor ranks, a job's settings).
KV_NAMESPACE = "lineprofiler"

_forked = False
_lock = threading.Lock()
#: What Ray answered once for this process: its host label, its actors' ranks.
_cache: dict[Any, Any] = {}
_task_profilers: dict[str, Any] = {}


def _after_fork_child() -> None:
    # A fork child of a Ray process shares its parent's connection to Ray, which must not be
    # used from here: the profiler then takes what the parent exported (run id, host).
    global _forked
    _forked = True
    _task_profilers.clear()


_lifecycle.at_fork(after_in_child=_after_fork_child)


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
        existing = kv._internal_kv_get(mine, namespace=KV_NAMESPACE)
        if existing is not None:
            rank = int(existing)
        else:
            rank = len(kv._internal_kv_list(f"{run}/rank/", namespace=KV_NAMESPACE))
            # put(overwrite=False) answers whether the key existed: another actor got there first
            while kv._internal_kv_put(f"{run}/rank/{rank}", actor_id, overwrite=False, namespace=KV_NAMESPACE):
                rank += 1
            kv._internal_kv_put(mine, str(rank), namespace=KV_NAMESPACE)
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


# ---------------------------------------------------------------------- a job Ray started without us

#: The variables ``lp_ray.init`` hands to the job's workers; nothing else is taken from the store.
JOB_ENV_NAMES = (ENV_RUN_DIR, ENV_PROFILE, ENV_RUN_ID, ENV_ATTEMPT)
_UNSET_VARIABLE = re.compile(r"\$\{[A-Za-z0-9_]+\}")


def job_env_key(job_id: str) -> str:
    return f"job/{job_id}/env"


def _expand(value: str) -> str:
    """``${VAR}`` from this process's environment, as Ray expands a runtime environment's
    variables: a variable that is not set becomes empty."""
    return _UNSET_VARIABLE.sub("", os.path.expandvars(value))


def adopt_job_env() -> bool:
    """In a Ray worker process whose environment lacks ``LINEPROFILER_RUN_DIR``: export the
    variables ``lp_ray.init`` left in Ray's key-value store for this job, when Ray was already running
    without the profiler's runtime environment, so that the Profiler constructed next joins the
    run. True when it exported them. Never raises; once the process has the variables, it costs
    an environment lookup."""
    if os.environ.get(ENV_RUN_DIR) or not connected() or not _is_worker():
        return False
    try:
        from ray.experimental import internal_kv as kv

        job = str(ray.get_runtime_context().get_job_id())
        raw = kv._internal_kv_get(job_env_key(job), namespace=KV_NAMESPACE)
        found = json.loads(raw) if raw else None
    except Exception:
        return False
    if not isinstance(found, dict) or not isinstance(found.get(ENV_RUN_DIR), str):
        return False
    for name in JOB_ENV_NAMES:
        value = found.get(name)
        if isinstance(value, str):
            os.environ[name] = _expand(value)
    return bool(os.environ.get(ENV_RUN_DIR))


launchers.register(launchers.Launcher(
    "ray", connected, run=ray_run, host=node_host, role=task_role, rank=actor_rank, adopt_env=adopt_job_env,
))
