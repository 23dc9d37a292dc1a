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

Inside a connected Ray process, ``lineprofiler.accounting.identity`` asks Ray (a launcher that
:mod:`._ray_process` registers, only where Ray is imported) for what the environment does not
say: the run id ``ray-<session>-<job>`` (job ids start again at 1 on every new cluster, the
session does not); the host (the node's host name; its IP address where another live node has
that name; the name and the node id where another has both, as several nodes on one machine do);
the role (the actor's class name, the task's function name); an actor's rank (the order in which
the job's actors first constructed a Profiler, kept in Ray's key-value store, so that a
restarted actor keeps it). ``LINEPROFILER_RUN_ID``, ``LINEPROFILER_HOST``,
``LINEPROFILER_ROLE``, ``RANK`` and the like still win.

One Profiler per actor: an actor owns its worker process. A task runs in a pooled process that
runs many tasks: use :func:`task_profiler`, one Profiler per process and role.

:func:`collect` streams each live node's run directory to the driver through Ray's object store
(:mod:`._ray_collect`; :mod:`._ray_files` does the files), and writes
``run_dir/ray/collect.json``: the nodes, the dead actors that left no final flush, and ``caveats``, one line
each for the report. A node whose run directory is the driver's (the default ``node_run_dir`` on
one host, a shared file system) sends nothing: copying its files onto themselves would put a
copy over the live file each running process maps, and its numbers from then on would go to an
unlinked inode.
"""

from __future__ import annotations

try:
    import ray  # noqa: F401  (said here, before a part of this integration needs it)
except ImportError as _error:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "lineprofiler.integrations.ray needs Ray: pip install 'with-line-profiler[ray]'"
    ) from _error

from ..accounting.identity import ENV_PROFILE as ENV_PROFILE
from ..accounting.identity import ENV_RUN_DIR as ENV_RUN_DIR
from ._ray_collect import BACKPRESSURE_OBJECTS as BACKPRESSURE_OBJECTS
from ._ray_collect import CHUNK_BYTES as CHUNK_BYTES
from ._ray_collect import COLLECT_FILE as COLLECT_FILE
from ._ray_collect import COLLECT_KIND as COLLECT_KIND
from ._ray_collect import COLLECT_SCHEMA as COLLECT_SCHEMA
from ._ray_collect import STATE_FILE as STATE_FILE
from ._ray_collect import CollectResult, NodeResult, collect
from ._ray_collect import read_node as read_node
from ._ray_driver import init, runtime_env
from ._ray_process import actor_rank as actor_rank
from ._ray_process import adopt_job_env, task_profiler
from ._ray_process import connected as connected
from ._ray_process import host_label as host_label
from ._ray_process import node_host as node_host
from ._ray_process import ray_run as ray_run
from ._ray_process import run_id_from as run_id_from
from ._ray_process import task_role as task_role

__all__ = ["CollectResult", "NodeResult", "adopt_job_env", "collect", "init", "runtime_env", "task_profiler"]
