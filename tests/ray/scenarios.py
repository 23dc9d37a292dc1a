"""Ray driver programs for the tests, each run as its own process by ``test_ray_*.py``:

    python scenarios.py local   RUN_DIR  OUT_JSON    # ray.init(num_cpus=2) on this machine
    python scenarios.py cluster WORK_DIR OUT_JSON    # ray.cluster_utils.Cluster: three nodes, each
                                                     # writing to WORK_DIR/node-<name>, the driver
                                                     # to WORK_DIR/driver
    python scenarios.py shared  WORK_DIR OUT_JSON    # two nodes writing to the driver's own run
                                                     # directory: the default node_run_dir, then
                                                     # one shared path spelled two ways

Each writes what it saw (identities, pids, collect results) to OUT_JSON; the tests hold the run
directory and ``lineprofiler report`` against it. Nothing here asserts: a scenario that cannot
go on raises, and the test shows its output.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
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


def _file_id(path: str | os.PathLike[str]) -> list[int]:
    info = os.stat(path)
    return [info.st_dev, info.st_ino]


def _mappings_of(path: str) -> list[dict]:
    """This process's mappings of the file named ``path`` (``/proc/self/maps``): the inode each
    maps, and whether the kernel says that inode was unlinked (``(deleted)``)."""
    name = os.path.basename(path)
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and os.path.basename(fields[5].strip().removesuffix(" (deleted)")) == name:
                found.append({"inode": int(fields[4]), "deleted": fields[5].strip().endswith("(deleted)")})
    return found


@ray.remote(num_cpus=0, max_concurrency=2)
class Recorder:
    """Enters one phase over and over on a thread of its own, until told to stop: it records
    while collect runs. No snapshot but the start file until it closes, so that what it recorded
    is in its live file only."""

    def __init__(self, role: str) -> None:
        self.profiler = Profiler(role=role, snapshot_interval_s=3600.0)
        self.live = str(self.profiler.live_path)
        self.live_id = _file_id(self.live)
        self.entries = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._record, daemon=True)

    def start(self) -> dict:
        self.thread.start()
        return {"pid": os.getpid(), "live": self.live, "live_id": self.live_id}

    def _record(self) -> None:
        while not self.stopping.is_set():
            with self.profiler.phase("step"):
                self.profiler.count("items")
            self.entries += 1
            time.sleep(0.002)

    def entries_so_far(self) -> int:
        return self.entries

    def stop(self) -> dict:
        self.stopping.set()
        self.thread.join()
        return {
            "entries": self.entries,
            "live_id_after": _file_id(self.live),
            "mappings": _mappings_of(self.live),
            "mapped_inode_now": os.stat(self.live).st_ino,
        }

    def finish(self) -> None:
        self.profiler.close()


def _wait_for_more(recorders: list, than: list[int], timeout_s: float = 120.0) -> list[int]:
    """Every recorder's entry count, once each has gone past ``than``."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = ray.get([r.entries_so_far.remote() for r in recorders])
        if all(n > before for n, before in zip(now, than, strict=True)):
            return now
        if time.monotonic() > deadline:
            raise RuntimeError(f"the recorders stopped recording: {now} after {than}")
        time.sleep(0.05)


def _report_json(run_dir: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "report", "--json", str(run_dir)],
        env={k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    if result.returncode != 0:
        raise RuntimeError(f"report failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout)


def _shared_job(address: str, node_ids: dict, run_dir: Path, node_run_dir: str | None) -> dict:
    """One job whose nodes write to ``run_dir`` itself: two recorders per node, a collect while
    they record, a final one while they still record, the report while they run, then closed."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    for name in ("LINEPROFILER_RUN_ID", "LINEPROFILER_ATTEMPT"):
        os.environ.pop(name, None)  # the previous job's, exported by its lp_ray.init
    seen: dict = {"run_id": lp_ray.init(run_dir=run_dir, node_run_dir=node_run_dir, address=address)}
    roles = [f"{node}{i}" for node in node_ids for i in range(2)]
    recorders = [
        Recorder.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_ids[role[:-1]], soft=False)).remote(
            role
        )
        for role in roles
    ]
    seen["started"] = dict(zip(roles, ray.get([r.start.remote() for r in recorders]), strict=True))
    counts = _wait_for_more(recorders, [0] * len(roles))
    seen["collects"] = []
    for _ in range(2):  # a collect during the job, and the final one: both while the actors record
        seen["collects"].append(_collect_summary(lp_ray.collect()))
        counts = _wait_for_more(recorders, counts)  # ...and record on after it
    seen["stopped"] = dict(zip(roles, ray.get([r.stop.remote() for r in recorders]), strict=True))
    seen["live_report"] = _report_json(run_dir)  # the actors run on: their numbers are in the live files
    ray.get([r.finish.remote() for r in recorders])
    seen["after_close"] = _collect_summary(lp_ray.collect())
    # A state.json edited by hand or by another program: collect goes on with what it can use.
    state = {"gone": 5, node_ids["second"]: {"host": 7, "files": {"workers/x": 3}, "last_collected_unix_ns": "now"}}
    (run_dir / "ray" / "state.json").write_text(json.dumps({"nodes": state}))
    try:
        seen["corrupt_state"] = _collect_summary(lp_ray.collect())
    except Exception as error:
        seen["corrupt_state"] = {"raised": f"{type(error).__name__}: {error}"}
    ray.shutdown()
    return seen


def shared(work: Path, out: Path) -> None:
    from ray.cluster_utils import Cluster

    work.mkdir(parents=True, exist_ok=True)
    explicit = work / "explicit"
    explicit.mkdir()
    spelled_otherwise = work / "explicit-link"  # the same folder by another path, as another mount
    spelled_otherwise.symlink_to(explicit)
    common = {"include_dashboard": False, "object_store_memory": 80 * 1024 * 1024}
    c = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "env_vars": {"LP_SHARED": str(explicit)}, **common}
    )
    second = c.add_node(num_cpus=1, env_vars={"LP_SHARED": str(spelled_otherwise)}, **common)
    c.wait_for_nodes()
    node_ids = {"head": c.head_node.node_id, "second": second.node_id}
    seen = {
        "node_ids": node_ids,
        # lp_ray.init's default: every node writes to the driver's path, here one host's folder
        "default": _shared_job(c.address, node_ids, work / "default", None),
        "explicit": _shared_job(c.address, node_ids, explicit, "${LP_SHARED}"),
    }
    c.shutdown()
    out.write_text(json.dumps(seen, indent=1))


if __name__ == "__main__":
    what, folder, result = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    {"local": local, "cluster": cluster, "shared": shared}[what](folder, result)
