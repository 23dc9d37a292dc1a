"""Ray started by someone else: the user's own ``ray.init()`` (as Ray Tune, Ray Train and a
notebook's cluster do it), then ``lp_ray.init(run_dir)``. Ray has fixed the job's runtime
environment by then, so the profiler's variables cannot reach the workers through it; the
actors and tasks created afterwards must join the run all the same, on every node.

Two Ray nodes on this machine, each writing to a folder of its own (``node_run_dir`` names one
variable that each node's environment sets differently): a Learner and two Actor actors, and
tasks on both nodes, each making a known number of phase entries. The driver program is this
file, run as a script by the module's fixture; the tests read what it saw and the report of the
run directory it collected.

A framework's own ``ray.init`` is stood in for by the plain ``ray.init()`` here; Ray Tune and
Ray Train themselves are run in ``test_ray_tune.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray]

LEARNER_STEPS = 4
ACTOR_GAMES = 3
TASKS_PER_NODE = 2
SAMPLES_PER_STEP = 5
NODES = ("head", "second")


def scenario(work: Path, out: Path) -> None:
    """The driver: a plain ray.init() first, lp_ray.init() after it, then the job."""
    import ray
    from ray.cluster_utils import Cluster
    from ray.experimental import internal_kv
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from lineprofiler.accounting import Profiler
    from lineprofiler.integrations import ray as lp_ray

    @ray.remote(num_cpus=0)
    class Learner:
        def __init__(self) -> None:
            self.profiler = Profiler()  # role, run, host: from Ray and what lp_ray.init left in it

        def train(self, steps: int) -> dict:
            for _ in range(steps):
                with self.profiler.phase("train_step"):
                    self.profiler.count("samples", SAMPLES_PER_STEP)
            self.profiler.close()
            return {"identity": self.profiler.identity.to_json(), "path": str(self.profiler.path)}

    @ray.remote(num_cpus=0)
    class Actor:
        def __init__(self) -> None:
            self.profiler = Profiler()

        def play(self, games: int) -> dict:
            for _ in range(games):
                with self.profiler.phase("self_play"):
                    self.profiler.count("games")
            self.profiler.close()
            return {"identity": self.profiler.identity.to_json(), "path": str(self.profiler.path)}

    @ray.remote(num_cpus=1)
    def load(rows: int) -> dict:
        with lp_ray.task_profiler() as profiler:
            with profiler.phase("read"):
                profiler.count("rows", rows)
        return {"identity": profiler.identity.to_json(), "path": str(profiler.path)}

    work.mkdir(parents=True, exist_ok=True)
    node_dirs = {name: work / f"node-{name}" for name in NODES}
    common = {"include_dashboard": False, "object_store_memory": 80 * 1024 * 1024}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "env_vars": {"LP_NODE_DIR": str(node_dirs["head"])}, **common},
    )
    nodes = {"head": cluster.head_node}
    nodes["second"] = cluster.add_node(num_cpus=1, env_vars={"LP_NODE_DIR": str(node_dirs["second"])}, **common)
    cluster.wait_for_nodes()
    node_ids = {name: node.node_id for name, node in nodes.items()}

    def on(name: str) -> dict:
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_ids[name], soft=False)}

    seen: dict = {"node_ids": node_ids}
    ray.init(address=cluster.address)  # the user's own: no runtime environment of ours
    seen["job_env_vars"] = dict((ray.get_runtime_context().runtime_env or {}).get("env_vars") or {})
    seen["run_id"] = lp_ray.init(run_dir=work / "driver", node_run_dir="${LP_NODE_DIR}")
    job = str(ray.get_runtime_context().get_job_id())
    stored = internal_kv._internal_kv_get(f"job/{job}/env", namespace="lineprofiler")
    seen["stored"] = json.loads(stored) if stored else None
    driver = Profiler(role="driver")
    with driver.phase("schedule"):
        learner = Learner.options(**on("head")).remote()
        actors = {name: Actor.options(**on(name)).remote() for name in NODES}
        seen["learner"] = ray.get(learner.train.remote(LEARNER_STEPS), timeout=300)
        seen["actors"] = {name: ray.get(a.play.remote(ACTOR_GAMES), timeout=300) for name, a in actors.items()}
        # One after the other on each node, so that Ray may hand the idle worker to the next task.
        seen["tasks"] = {
            name: [ray.get(load.options(**on(name)).remote(7), timeout=300) for _ in range(TASKS_PER_NODE)]
            for name in NODES
        }
    started = time.monotonic()
    seen["collect"] = [node.to_json() for node in lp_ray.collect().nodes]
    seen["collect_s"] = time.monotonic() - started
    driver.close()
    ray.shutdown()
    cluster.shutdown()
    out.write_text(json.dumps(seen, indent=1))


# ---------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def own_init(tmp_path_factory) -> tuple[Path, dict]:
    from .conftest import TIMEOUT_S, clean_env, ray_skip_reason

    reason = ray_skip_reason()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("ray-own-init")
    out = folder / "seen.json"
    result = subprocess.run(
        [sys.executable, __file__, str(folder / "work"), str(out)],
        env=clean_env(),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if result.returncode != 0:
        pytest.fail(f"the driver failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}")
    return folder / "work", json.loads(out.read_text())


def _report(run_dir: Path) -> dict:
    from helpers.cli import run_cli  # here: this file is also the driver script, run without tests/ on sys.path

    result = run_cli("report", "--json", run_dir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return json.loads(result.stdout)


def _processes(seen: dict) -> list[dict]:
    return [seen["learner"], *seen["actors"].values(), *(t for tasks in seen["tasks"].values() for t in tasks)]


def test_lp_ray_init_after_ray_init_joins_ray_s_job(own_init):
    work, seen = own_init
    assert "LINEPROFILER_RUN_DIR" not in seen["job_env_vars"]  # Ray really was started without us
    assert seen["run_id"].startswith("ray-") and seen["run_id"].endswith("-01000000")
    # What the job's workers take: the node folder unexpanded (each node expands it), the run id left to
    # Ray (every process of the job derives the same one).
    assert seen["stored"] == {
        "LINEPROFILER_RUN_DIR": "${LP_NODE_DIR}",
        "LINEPROFILER_PROFILE": "1",
        "LINEPROFILER_RUN_ID": "",
        "LINEPROFILER_ATTEMPT": "",
    }


def test_actors_and_tasks_created_after_it_write_into_the_run_on_their_own_node(own_init):
    work, seen = own_init
    assert {p["identity"]["run_id"] for p in _processes(seen)} == {seen["run_id"]}
    placed = {"head": [seen["learner"], seen["actors"]["head"], *seen["tasks"]["head"]]}
    placed["second"] = [seen["actors"]["second"], *seen["tasks"]["second"]]
    for node, processes in placed.items():
        for process in processes:
            # ${LP_NODE_DIR} as that node's environment sets it
            assert Path(process["path"]).is_relative_to(work / f"node-{node}"), (node, process["path"])
    assert seen["learner"]["identity"]["role"] == "Learner"
    assert {a["identity"]["role"] for a in seen["actors"].values()} == {"Actor"}
    assert {t["identity"]["role"] for tasks in seen["tasks"].values() for t in tasks} == {"load"}


def test_collect_brings_both_nodes_into_the_driver_run_dir(own_init):
    work, seen = own_init
    states = {node["node_id"]: node for node in seen["collect"]}
    for name, node_id in seen["node_ids"].items():
        node = states[node_id]
        assert node["state"] == "collected" and node["files_copied"] > 0, node
        assert node["node_run_dir"] == str(work / f"node-{name}"), node


def test_the_report_groups_them_by_role_with_exact_counts(own_init):
    work, seen = own_init
    report = _report(work / "driver")
    assert report["run"]["run_id"] == seen["run_id"]
    task_processes = len({(t["identity"]["host"], t["identity"]["pid"]) for ts in seen["tasks"].values() for t in ts})
    assert report["run"]["roles"] == {"Learner": 1, "Actor": 2, "load": task_processes, "driver": 1}
    found = {}
    for phase in report["dominant"]["phases"]:
        found[(phase["role"], phase["path"])] = (
            phase["entries"],
            {c["name"]: c["total"] for c in phase["counters"]},
        )
    tasks = TASKS_PER_NODE * len(NODES)
    assert found[("Learner", "train_step")] == (LEARNER_STEPS, {"samples": LEARNER_STEPS * SAMPLES_PER_STEP})
    assert found[("Actor", "self_play")] == (2 * ACTOR_GAMES, {"games": 2 * ACTOR_GAMES})
    assert found[("load", "read")] == (tasks, {"rows": 7 * tasks})
    assert found[("driver", "schedule")][0] == 1


if __name__ == "__main__":
    scenario(Path(sys.argv[1]), Path(sys.argv[2]))
