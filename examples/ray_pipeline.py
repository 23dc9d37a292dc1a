"""The actor/learner pipeline of examples/rl_pipeline/ as Ray actors, profiled, collected, reported.

N ``Actor`` actors play tic-tac-toe with the pure-Python MCTS and put each game on a Ray queue;
one ``Learner`` actor takes them, writes shards, loads batches back, trains the small model
(torch on the CPU, else numpy, else pure Python) and checkpoints it. The driver starts Ray
through ``lp_ray.init``, runs the job, collects every node's profile into its run directory
(while the job runs, with ``--collect-every``, and at the end) and prints the report.

    python examples/ray_pipeline.py --actors 4 --run-dir profile
    python examples/ray_pipeline.py --nodes 2       # two Ray nodes on this machine, one folder each

Every actor constructs ``Profiler()`` with no arguments: the run directory, run id, host, role
(the class name) and rank all come from Ray. ``--nodes N`` starts N Ray nodes on this machine
(``ray.cluster_utils.Cluster``) whose processes write to ``<run-dir>.nodes/<i>``, so that, as on
a cluster without a shared file system, only ``collect`` brings their files together.
``--address`` joins a running cluster instead. Ray ships the rl_pipeline folder to every node
(the job's ``working_dir``).
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray
from ray.util.queue import Empty, Queue

from lineprofiler.accounting import Profiler
from lineprofiler.integrations import ray as lp_ray

PIPELINE = Path(__file__).resolve().parent / "rl_pipeline"
POLL_S = 1.0


@ray.remote(num_cpus=1)
class Actor:
    """Self-play: one MCTS game after another, each sent to the learner through the queue."""

    def __init__(self, actor_id: int, queue: Queue, simulations: int, seed: int) -> None:
        self.profiler = Profiler()  # role "Actor", rank, host and run: from Ray
        self.actor_id, self.queue, self.simulations = actor_id, queue, simulations
        self.rng = random.Random(seed)

    def play(self, games: int) -> int:
        import mcts
        from game import Board

        profiler = self.profiler
        moves = 0
        for _ in range(games):
            with profiler.phase("iteration"):
                with profiler.phase("self_play"):
                    board, trajectory = Board(), []
                    while board.winner() is None:
                        with profiler.phase("mcts"):
                            visits = mcts.search(board, self.simulations, self.rng)
                            profiler.count("mcts_simulations", self.simulations)
                        total = sum(visits)
                        trajectory.append((board.features(), [v / total for v in visits]))
                        with profiler.phase("env_step"):
                            board.play(self.rng.choices(range(9), weights=visits)[0])
                            profiler.count("moves")
                    moves += len(trajectory)
                with profiler.phase("send_trajectory"):
                    self.queue.put((self.actor_id, trajectory))
                profiler.count("games")
        self.queue.put((self.actor_id, None))
        return moves

    def close(self) -> None:
        self.profiler.close()  # the final snapshot, before Ray ends the process


@ray.remote(num_cpus=1)
class Learner:
    """Shards, batches, train steps and checkpoints, as the multiprocessing pipeline's learner."""

    def __init__(self, backend: str, seed: int) -> None:
        self.profiler = Profiler()  # role "Learner"
        with self.profiler.phase("setup"):
            from model import make_model

            self.model = make_model(backend, seed=seed)
        self.rng = random.Random(seed)

    def run(self, queue: Queue, actors: int, shard_size: int, batch_size: int, checkpoint_every: int) -> dict:
        profiler, done, pending, shards = self.profiler, set(), [], []
        totals = dict(games=0, positions=0, train_steps=0, checkpoints=0)
        data_dir = Path(tempfile.mkdtemp(prefix="ray_pipeline_"))
        try:
            while len(done) < actors:
                with profiler.phase("iteration"):
                    with profiler.phase("wait_for_data"):
                        try:
                            actor_id, trajectory = queue.get(timeout=POLL_S)
                        except Empty:
                            continue
                    if trajectory is None:
                        done.add(actor_id)
                        continue
                    totals["games"] += 1
                    totals["positions"] += len(trajectory)
                    pending.extend(trajectory)
                    if len(pending) >= shard_size:
                        with profiler.phase("write_shard", io=True):
                            shards.append(_write(data_dir / f"shard_{len(shards):05d}.pkl", pending))
                        pending = []
                    if not shards:
                        continue
                    with profiler.phase("load_batch", io=True):
                        with open(self.rng.choice(shards), "rb") as handle:
                            samples = pickle.load(handle)
                        batch = self.rng.sample(samples, min(batch_size, len(samples)))
                    with profiler.phase("train_step"):
                        self.model.train_step(batch)
                        profiler.count("samples_trained", len(batch))
                    totals["train_steps"] += 1
                    if totals["train_steps"] % checkpoint_every == 0:
                        with profiler.phase("checkpoint", io=True):
                            path = data_dir / f"checkpoint_{totals['train_steps']:06d}.pt"
                            with open(path, "wb") as handle:
                                self.model.save(handle)
                                handle.flush()
                                os.fsync(handle.fileno())
                        totals["checkpoints"] += 1
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
        return dict(totals, shards=len(shards), model=self.model.name)

    def close(self) -> None:
        self.profiler.close()


def _write(path: Path, samples: list) -> Path:
    with open(path, "wb") as handle:
        pickle.dump(samples, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.flush()
        os.fsync(handle.fileno())
    return path


def start_ray(args: argparse.Namespace) -> object | None:
    """Ray for the job: a cluster of ``--nodes`` on this machine, the one at ``--address``, or a
    local one. Returns the local cluster to shut down, if one was started."""
    # working_dir: Ray ships the rl_pipeline folder to every node and imports from it there.
    ray_args = dict(include_dashboard=False, log_to_driver=False, runtime_env={"working_dir": str(PIPELINE)})
    if args.address:
        lp_ray.init(run_dir=args.run_dir, address=args.address, **ray_args)
        return None
    if args.nodes == 1:
        lp_ray.init(run_dir=args.run_dir, address="local", num_cpus=args.actors + 1, **ray_args)
        return None
    from ray.cluster_utils import Cluster

    node_root = Path(os.path.abspath(args.run_dir + ".nodes"))
    shutil.rmtree(node_root, ignore_errors=True)
    per_node = -(-(args.actors + 1) // args.nodes)  # logical CPUs: room for every actor
    cluster = Cluster()
    for i in range(args.nodes):
        # Each node's processes see their own folder, as on machines without a shared disk.
        cluster.add_node(num_cpus=per_node, env_vars={"LP_NODE_DIR": str(node_root / str(i))}, include_dashboard=False)
    cluster.wait_for_nodes()
    lp_ray.init(run_dir=args.run_dir, node_run_dir="${LP_NODE_DIR}", address=cluster.address, **ray_args)
    return cluster


def main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    cluster = start_ray(args)
    print(f"driver: Ray with {len(ray.nodes())} node(s), run directory {os.path.abspath(args.run_dir)}", flush=True)
    queue = Queue(actor_options={"num_cpus": 0})
    learner = Learner.remote(args.backend, args.seed)
    actors = [
        Actor.options(scheduling_strategy="SPREAD").remote(i, queue, args.simulations, args.seed + 1 + i)
        for i in range(args.actors)
    ]
    learning = learner.run.remote(queue, args.actors, args.shard_size, args.batch_size, args.checkpoint_every)
    playing = [a.play.remote(args.games) for a in actors]
    while True:
        ready, _ = ray.wait([learning], timeout=args.collect_every)
        if ready:
            break
        live = lp_ray.collect()  # a live profile: the report could run on it now
        print(f"driver: collected {live.files} file(s), {live.bytes:,} bytes, while the job runs", flush=True)
    totals = ray.get(learning)
    moves = sum(ray.get(playing))
    ray.get([a.close.remote() for a in [learner, *actors]])
    print(
        f"driver: {args.actors} actors, {totals['games']} games, {moves} positions, {totals['train_steps']} train "
        f"steps, {totals['checkpoints']} checkpoints, model {totals['model']} in {time.monotonic() - started:.1f}s",
        flush=True,
    )
    result = lp_ray.collect()
    for node in result.nodes:
        print(f"driver: node {node.host}: {node.state}, {node.files} file(s) copied, {node.bytes:,} bytes")
    ray.shutdown()
    if cluster is not None:
        cluster.shutdown()  # type: ignore[attr-defined]
    if args.no_report:
        return 0
    print(flush=True)
    return subprocess.call([sys.executable, "-m", "lineprofiler", "report", args.run_dir])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--games", type=int, default=60, help="games per actor (default 60)")
    parser.add_argument("--simulations", type=int, default=256, help="MCTS playouts per move (default 256)")
    parser.add_argument("--run-dir", default="profile", help="the driver's run directory (default profile)")
    parser.add_argument("--nodes", type=int, default=1, help="Ray nodes to start on this machine (default 1)")
    parser.add_argument("--address", default=None, help="join this running Ray cluster instead")
    parser.add_argument("--collect-every", type=float, default=10.0, help="seconds between live collects")
    parser.add_argument("--backend", default="auto", choices=["auto", "torch", "numpy", "python"])
    parser.add_argument("--shard-size", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-report", action="store_true", help="collect, but do not print the report")
    args = parser.parse_args(argv)
    if min(args.actors, args.games, args.simulations, args.nodes) < 1:
        parser.error("--actors, --games, --simulations and --nodes must be at least 1")
    return args


if __name__ == "__main__":
    sys.exit(main(parse_args()))
