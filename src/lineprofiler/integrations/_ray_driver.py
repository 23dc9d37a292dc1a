"""The driver's side of a profiled Ray job: the runtime environment that puts every worker into
the run, and :func:`init`, which starts Ray with it or joins the job of a Ray already running.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Mapping
from typing import Any

import ray

from ..accounting.identity import ENV_ATTEMPT, ENV_PROFILE, ENV_RUN_DIR, ENV_RUN_ID
from ._ray_process import JOB_ENV_NAMES, KV_NAMESPACE, job_env_key, ray_run

#: What :func:`init` set up in this process (run_dir, node_run_dir, run_id, start_ns), for collect.
_settings: dict[str, Any] = {}


def driver_settings() -> dict[str, Any]:
    """What :func:`init` set up in this driver; empty before it ran."""
    return _settings


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
    _settings.update({"run_dir": driver_dir, "node_run_dir": node_dir, "run_id": run, "start_ns": time.time_ns()})
    return run


def _publish_job_env(variables: Mapping[str, str]) -> None:
    """Leaves ``variables`` in Ray's key-value store for this job's workers. RuntimeError when it
    cannot: the workers would then record outside the run."""
    try:
        from ray.experimental import internal_kv as kv

        job = str(ray.get_runtime_context().get_job_id())
        value = json.dumps({name: str(variables[name]) for name in JOB_ENV_NAMES})
        kv._internal_kv_put(job_env_key(job), value, overwrite=True, namespace=KV_NAMESPACE)
    except Exception as error:
        raise RuntimeError(
            f"lineprofiler: Ray is running without the profiler's runtime environment, and its key-value store "
            f"cannot take it ({type(error).__name__}: {error}); call lp_ray.init(run_dir, ...) before Ray starts, or "
            f"pass runtime_env=lp_ray.runtime_env(run_dir) to ray.init"
        ) from None
