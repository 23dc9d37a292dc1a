"""Ray driver programs for the tests, each run as its own process by ``test_ray_*.py``:

    python scenarios.py local   RUN_DIR  OUT_JSON    # ray.init(num_cpus=2) on this machine
    python scenarios.py cluster WORK_DIR OUT_JSON    # ray.cluster_utils.Cluster: three nodes, each
                                                     # writing to WORK_DIR/node-<name>, the driver
                                                     # to WORK_DIR/driver

Each writes what it saw (identities, pids, collect results) to OUT_JSON; the tests hold the run
directory and ``lineprofiler report`` against it. Nothing here asserts: a scenario that cannot
go on raises, and the test shows its output.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import ray

from lineprofiler.accounting import Profiler
from lineprofiler.integrations import ray as lp_ray

SNAPSHOT_S = 0.3
STALE_WAIT_S = 11.0


def _spin(profiler: Profiler, name: str, seconds: float, count: str | None = None) -> None:
    end = time.monotonic() + seconds
    with profiler.phase(name):
        n = 0
        while time.monotonic() < end:
            sum(range(2000))
            n += 1
        if count:
            profiler.count(count, n)


@ray.remote(num_cpus=0)
class Learner:
    def __init__(self) -> None:
        self.profiler = Profiler(snapshot_interval_s=SNAPSHOT_S)  # role, rank, host: from Ray

    def step(self, seconds: float = 0.2) -> dict:
        with self.profiler.phase("iteration"):
            _spin(self.profiler, "train_step", seconds, "samples")
        self.profiler.flush()
        return self.profiler.identity.to_json()

    def finish(self) -> None:
        self.profiler.close()


@ray.remote(num_cpus=0)
class Actor:
    def __init__(self) -> None:
        self.profiler = Profiler(snapshot_interval_s=SNAPSHOT_S)

    def play(self, seconds: float = 0.2) -> dict:
        with self.profiler.phase("iteration"):
            _spin(self.profiler, "self_play", seconds, "games")
        self.profiler.flush()
        return self.profiler.identity.to_json()

    def fork_helper(self) -> dict:
        """A fork child of this actor constructs its own Profiler: it must join the run (and the
        host) through what the actor exported, without touching Ray's connection."""
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_helper, args=(queue,))
        child.start()
        identity = queue.get(timeout=60)
        child.join(60)
        return {"identity": identity, "exitcode": child.exitcode}

    def finish(self) -> None:
        self.profiler.close()


def _helper(queue: multiprocessing.Queue) -> None:
    with Profiler(role="helper", snapshot_interval_s=SNAPSHOT_S) as profiler:
        _spin(profiler, "help", 0.05)
        queue.put(profiler.identity.to_json())


@ray.remote(num_cpus=0, max_restarts=1)
class Restartable:
    def __init__(self) -> None:
        self.profiler = Profiler(snapshot_interval_s=SNAPSHOT_S)

    def who(self) -> dict:
        return self.profiler.identity.to_json()


@ray.remote(num_cpus=0)
class Named:
    def __init__(self, role: str | None) -> None:
        self.profiler = Profiler(role=role, snapshot_interval_s=SNAPSHOT_S)

    def who(self) -> dict:
        self.profiler.close()
        return self.profiler.identity.to_json()


@ray.remote(num_cpus=1)
def load(seconds: float) -> dict:
    with lp_ray.task_profiler(snapshot_interval_s=SNAPSHOT_S) as profiler:
        _spin(profiler, "read", seconds)
        return {"pid": os.getpid(), "file": profiler.path.name, "identity": profiler.identity.to_json()}


@ray.remote(num_cpus=1)
def score(seconds: float) -> dict:
    with lp_ray.task_profiler(snapshot_interval_s=SNAPSHOT_S) as profiler:
        _spin(profiler, "evaluate", seconds)
        return {"pid": os.getpid(), "file": profiler.path.name, "identity": profiler.identity.to_json()}


def _collect_summary(result: lp_ray.CollectResult) -> dict:
    return {
        "files": result.files,
        "bytes": result.bytes,
        "nodes": [node.to_json() for node in result.nodes],
        "caveats": result.caveats,
        "dead_actors": result.dead_actors,
    }


def local(run_dir: Path, out: Path) -> None:
    seen: dict = {}
    seen["run_id"] = lp_ray.init(run_dir=run_dir, address="local", num_cpus=2, include_dashboard=False)
    driver = Profiler(role="driver", snapshot_interval_s=SNAPSHOT_S)
    seen["driver"] = driver.identity.to_json()

    learner = Learner.remote()
    seen["learner"] = ray.get(learner.step.remote())  # the first actor to construct a Profiler
    actors = [Actor.remote() for _ in range(3)]
    seen["actors"] = ray.get([a.play.remote() for a in actors])
    seen["fork"] = ray.get(actors[0].fork_helper.remote(), timeout=120)

    restartable = Restartable.remote()
    before = ray.get(restartable.who.remote())
    ray.kill(restartable, no_restart=False)  # Ray starts it again, in a new process
    after = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the kill is asynchronous: the old process may answer first
        try:
            answer = ray.get(restartable.who.remote(), timeout=30)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            answer = None
        if answer is not None and answer["pid"] != before["pid"]:
            after = answer
            break
        time.sleep(0.5)
    seen["restart"] = {"before": before, "after": after}

    seen["named"] = {
        "argument": ray.get(Named.remote("evaluator").who.remote()),
        "env": ray.get(
            Named.options(runtime_env={"env_vars": {"LINEPROFILER_ROLE": "from_env"}}).remote(None).who.remote()
        ),
    }
    # One after the other, so that Ray hands the idle worker process to the next task.
    seen["tasks"] = [ray.get(fn.remote(0.05)) for fn in (load, score, load, score, load, score)]

    for a in [learner, *actors]:
        ray.get(a.finish.remote())
    with driver.phase("collect"):
        seen["collect"] = _collect_summary(lp_ray.collect())
    seen["collect_again"] = _collect_summary(lp_ray.collect())
    try:
        lp_ray.init(run_dir=run_dir, num_cpus=1)
        seen["init_twice"] = None
    except RuntimeError as error:
        seen["init_twice"] = str(error)
    driver.close()
    ray.shutdown()
    out.write_text(json.dumps(seen, indent=1))


def cluster(work: Path, out: Path) -> None:
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    driver_dir = work / "driver"
    node_dirs = {name: work / f"node-{name}" for name in ("head", "second", "third")}
    work.mkdir(parents=True, exist_ok=True)
    common = {"include_dashboard": False, "object_store_memory": 80 * 1024 * 1024}
    started = time.monotonic()
    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "env_vars": {"LP_NODE_DIR": str(node_dirs["head"])}, **common},
    )
    nodes = {"head": c.head_node}
    for name in ("second", "third"):
        nodes[name] = c.add_node(num_cpus=1, env_vars={"LP_NODE_DIR": str(node_dirs[name])}, **common)
    c.wait_for_nodes()
    seen: dict = {"startup_s": time.monotonic() - started}
    # Every node writes to its own folder: nothing is shared but Ray itself.
    seen["run_id"] = lp_ray.init(run_dir=driver_dir, node_run_dir="${LP_NODE_DIR}", address=c.address)
    node_ids = {name: node.node_id for name, node in nodes.items()}
    seen["node_ids"] = node_ids

    def on(name: str) -> dict:
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_ids[name], soft=False)}

    placed = {
        "learner_head": Learner.options(**on("head")).remote(),
        "actor_head": Actor.options(**on("head")).remote(),
        "actor_second": Actor.options(**on("second")).remote(),
        "killed_second": Actor.options(**on("second")).remote(),
        "actor_third": Actor.options(**on("third")).remote(),
    }
    calls = {name: (h.step if name.startswith("learner") else h.play) for name, h in placed.items()}
    seen["identities"] = dict(zip(placed, ray.get([calls[n].remote() for n in placed]), strict=True))

    # A file larger than collect's chunk (4 MiB) on the second node: it travels in pieces.
    large = node_dirs["second"] / "backend" / "large_trace.json"
    large.parent.mkdir(parents=True, exist_ok=True)
    large.write_bytes(os.urandom(9 << 20))
    # While the job runs: every node's files so far, in the driver's run directory.
    seen["collect_running"] = _collect_summary(lp_ray.collect())
    ray.kill(placed["killed_second"])
    c.remove_node(nodes["third"])  # the third node leaves, with its actor
    survivors = [n for n in placed if n not in ("killed_second", "actor_third")]
    ray.get([calls[n].remote() for n in survivors])
    # The survivors go on for longer than the report's staleness threshold (10 s), so that it
    # names the two actors that stopped writing, not only counts them.
    time.sleep(STALE_WAIT_S)
    ray.get([calls[n].remote() for n in survivors])
    ray.get([placed[n].finish.remote() for n in survivors])
    seen["collect_after"] = _collect_summary(lp_ray.collect())
    seen["collect_again"] = _collect_summary(lp_ray.collect())
    seen["elapsed_s"] = time.monotonic() - started
    ray.shutdown()
    c.shutdown()
    out.write_text(json.dumps(seen, indent=1))


if __name__ == "__main__":
    what, folder, result = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    {"local": local, "cluster": cluster}[what](folder, result)
