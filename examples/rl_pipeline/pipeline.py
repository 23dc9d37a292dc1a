"""A small actor/learner pipeline, profiled with lineprofiler.accounting.

N actor processes play tic-tac-toe with a tiny MCTS (pure Python) and send trajectories
through a multiprocessing queue; the learner (this process) writes them to shard files,
loads batches back from the shards, trains a small model and checkpoints it.

    python examples/rl_pipeline/pipeline.py --actors 4 --run-dir profile
    lineprofiler report profile/

The learner uses phases without `with profiler:` around them (the layer is always on;
its worker file is flushed at exit), the actors use `with profiler:` as in the seed.
LINEPROFILER_PROFILE=0 turns all of it off, for measuring the profiler's overhead.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import mcts  # noqa: E402
from game import Board  # noqa: E402


def play_game(profiler, rng: random.Random, simulations: int) -> list:
    board = Board()
    trajectory = []
    while board.winner() is None:
        with profiler.phase("mcts"):
            visits = mcts.search(board, simulations, rng)
            profiler.count("mcts_simulations", simulations)
        total = sum(visits)
        trajectory.append((board.features(), [v / total for v in visits]))
        with profiler.phase("env_step"):
            move = rng.choices(range(9), weights=visits)[0]
            board.play(move)
            profiler.count("moves")
    return trajectory


def actor_main(actor_id: int, games: int, simulations: int, queue, seed: int) -> None:
    # Sys.path for the spawned child: it imports this module by path.
    from lineprofiler.accounting import Profiler

    profiler = Profiler(role="actor")  # joins the learner's run through the environment
    rng = random.Random(seed)
    with profiler:
        for _ in range(games):
            with profiler.phase("iteration"):
                with profiler.phase("self_play"):
                    trajectory = play_game(profiler, rng, simulations)
                with profiler.phase("send_trajectory"):
                    queue.put(trajectory)
                profiler.count("games")
    queue.put(None)


def write_shard(directory: Path, index: int, samples: list) -> Path:
    path = directory / f"shard_{index:05d}.pkl"
    with open(path, "wb") as handle:
        pickle.dump(samples, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.flush()
        os.fsync(handle.fileno())
    return path


def load_batch(shards: list[Path], rng: random.Random, batch_size: int) -> list:
    with open(rng.choice(shards), "rb") as handle:
        samples = pickle.load(handle)
    return rng.sample(samples, min(batch_size, len(samples)))


def checkpoint(model, directory: Path, step: int) -> None:
    path = directory / f"checkpoint_{step:06d}.pt"
    with open(path, "wb") as handle:
        model.save(handle)
        handle.flush()
        os.fsync(handle.fileno())


def learner_main(args) -> int:
    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=args.run_dir, role="learner")
    from model import make_model

    model = make_model(seed=args.seed)
    print(f"learner: model backend {model.name}; {args.actors} actors x {args.games} games", flush=True)

    context = multiprocessing.get_context(args.start_method)
    queue = context.Queue(maxsize=64)
    actors = [
        context.Process(target=actor_main, args=(i, args.games, args.simulations, queue, args.seed + 1 + i))
        for i in range(args.actors)
    ]
    for actor in actors:
        actor.start()

    rng = random.Random(args.seed)
    data_dir = Path(tempfile.mkdtemp(prefix="rl_pipeline_"))
    pending: list = []
    shards: list[Path] = []
    running = len(actors)
    step = 0
    started = time.monotonic()
    while running:
        with profiler.phase("iteration"):
            with profiler.phase("wait_for_data"):
                trajectory = queue.get()
            if trajectory is None:
                running -= 1
                continue
            pending.extend(trajectory)
            if len(pending) >= args.shard_size:
                with profiler.phase("write_shard", io=True):
                    shards.append(write_shard(data_dir, len(shards), pending))
                pending = []
            if not shards:
                continue
            with profiler.phase("load_batch", io=True):
                batch = load_batch(shards, rng, args.batch_size)
            with profiler.phase("train_step"):
                model.train_step(batch)
                profiler.count("samples_trained", len(batch))
            step += 1
            if step % args.checkpoint_every == 0:
                with profiler.phase("checkpoint", io=True):
                    checkpoint(model, data_dir, step)
    for actor in actors:
        actor.join()
    failed = [a.exitcode for a in actors if a.exitcode != 0]
    for path in data_dir.iterdir():
        path.unlink()
    data_dir.rmdir()
    print(f"learner: {step} train steps, {len(shards)} shards in {time.monotonic() - started:.1f}s", flush=True)
    return 1 if failed else 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--games", type=int, default=40, help="games per actor")
    parser.add_argument("--simulations", type=int, default=64, help="MCTS playouts per move")
    parser.add_argument("--run-dir", default="profile")
    parser.add_argument("--start-method", default="spawn", choices=["spawn", "fork", "forkserver"])
    parser.add_argument("--shard-size", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(learner_main(parse_args()))
