"""A small actor/learner pipeline, profiled with lineprofiler.accounting.

N actor processes play tic-tac-toe with a tiny MCTS (pure Python) and send trajectories
through a multiprocessing queue; the learner (this process) writes them to shard files,
loads batches back from the shards, trains a small model (torch on the CPU, else numpy,
else pure Python) and checkpoints it.

    python examples/rl_pipeline/pipeline.py --actors 4 --run-dir profile [--lines-window 100 110]
    lineprofiler report profile/ [--lines]

Every process constructs one Profiler, tagged with its role. The learner uses phases without
`with profiler:` around them (the layer records from construction; its worker file is
flushed at exit); the actors use `with profiler:` as in the README. The actors join the
learner's run through the environment the learner's Profiler exported, so nothing is passed
to them. LINEPROFILER_PROFILE=0 turns all of it off (benchmarks/bench_pipeline.py measures
the profiler's overhead that way).

The defaults (4 actors x 300 games x 256 simulations) take about 30 s on a quiet 2-core
machine. --summary writes what the pipeline did (games, moves, train steps, bytes written
and read) as JSON, which the tests hold the report against.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import queue as queue_module
import random
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import mcts  # noqa: E402
from game import Board  # noqa: E402

#: How long the learner waits on the queue before it checks whether an actor died.
POLL_S = 1.0


# -- actors ------------------------------------------------------------------------------------


def play_game(profiler, rng: random.Random, simulations: int) -> list:
    """One self-play game: (features, visit distribution) per move."""
    board = Board()
    trajectory = []
    while board.winner() is None:
        with profiler.phase("mcts"):
            visits = mcts.search(board, simulations, rng)
            # count() inside the phase: the report rates it per second of mcts
            profiler.count("mcts_simulations", simulations)
        total = sum(visits)
        trajectory.append((board.features(), [v / total for v in visits]))
        with profiler.phase("env_step"):
            move = rng.choices(range(9), weights=visits)[0]
            board.play(move)
            profiler.count("moves")
    return trajectory


def actor_main(
    actor_id: int, games: int, simulations: int, queue, seed: int, crash: bool = False, lines_window=None,
    trace: bool = False,
) -> None:
    from lineprofiler.accounting import Profiler

    # Joins the learner's run through the environment. With a lines window, games start..stop-1
    # of this actor are line-profiled as well: its MCTS lines land in run_dir/lines/.
    window = dict(backend="lines", backend_window=lines_window, window_phase="iteration") if lines_window else {}
    with warnings.catch_warnings():
        # Written for 0.11.0's window (stop excluded): the note for 0.10.0's code is not ours.
        warnings.filterwarnings("ignore", message="backend_window=", category=RuntimeWarning)
        profiler = Profiler(role="actor", trace=trace, **window)
    rng = random.Random(seed)
    with profiler:
        for game in range(games):
            with profiler.phase("iteration"):
                with profiler.phase("self_play"):
                    trajectory = play_game(profiler, rng, simulations)
                with profiler.phase("send_trajectory"):
                    # --trace: the learner's wait for this game links back here (signal before the put)
                    profiler.signal("trajectories", f"{actor_id}:{game}")
                    queue.put((actor_id, trajectory))
                profiler.count("games")
            if crash and game == 0:
                raise RuntimeError(f"actor {actor_id} crashes on purpose (--crash-actor)")
    queue.put((actor_id, None))  # this actor is done


# -- the learner's data path -------------------------------------------------------------------


def write_shard(directory: Path, index: int, samples: list) -> Path:
    path = directory / f"shard_{index:05d}.pkl"
    with open(path, "wb") as handle:
        pickle.dump(samples, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.flush()
        os.fsync(handle.fileno())
    return path


def load_batch(shards: list[Path], rng: random.Random, batch_size: int) -> tuple[list, int]:
    """A random batch from one random shard, and the size of the file it read."""
    path = rng.choice(shards)
    with open(path, "rb") as handle:
        samples = pickle.load(handle)
        size = handle.tell()
    return rng.sample(samples, min(batch_size, len(samples))), size


def checkpoint(model, directory: Path, step: int) -> int:
    """Write the model and optimizer state, fsynced; returns the file's size."""
    path = directory / f"checkpoint_{step:06d}.pt"
    with open(path, "wb") as handle:
        model.save(handle)
        handle.flush()
        os.fsync(handle.fileno())
    return path.stat().st_size


# -- the learner -------------------------------------------------------------------------------


def learner_main(args: argparse.Namespace) -> int:
    from lineprofiler.accounting import Profiler

    started = time.monotonic()
    profiler = Profiler(run_dir=args.run_dir, role="learner", trace=args.trace)
    from model import BackendUnavailable, make_model

    with profiler.phase("setup"):  # importing torch takes seconds: let the report show it
        try:
            model = make_model(args.backend, seed=args.seed)
        except BackendUnavailable as error:
            print(f"pipeline: {error}", file=sys.stderr)
            return 2
    print(f"learner: model {model.name}", flush=True)
    if model.fallback_reason:
        print(f"learner: {model.fallback_reason}", flush=True)
    state = "on" if profiler.enabled else "off (LINEPROFILER_PROFILE=0)"
    print(
        f"learner: {args.actors} actors x {args.games} games x {args.simulations} simulations per move, "
        f"start method {args.start_method}, profiler {state}",
        flush=True,
    )

    context = multiprocessing.get_context(args.start_method)
    queue = context.Queue(maxsize=max(64, 4 * args.actors))
    actors = [
        # daemon: if the learner dies, its actors do not outlive it blocked on a full queue
        context.Process(
            target=actor_main,
            args=(
                i, args.games, args.simulations, queue, args.seed + 1 + i, i == args.crash_actor, args.lines_window,
                args.trace,
            ),
            name=f"actor-{i}",
            daemon=True,
        )
        for i in range(args.actors)
    ]
    for actor in actors:
        actor.start()

    rng = random.Random(args.seed)
    data_dir = Path(tempfile.mkdtemp(prefix="rl_pipeline_", dir=args.data_dir))
    done: set[int] = set()
    received = [0] * args.actors  # per actor: the game the next trajectory is (the queue keeps its order)
    failed: dict[int, int | None] = {}
    pending: list = []
    shards: list[Path] = []
    totals = dict(
        trajectories=0, samples=0, train_steps=0, shard_bytes=0, batches=0, batch_bytes=0,
        checkpoints=0, checkpoint_bytes=0,
    )
    try:
        while len(done) < len(actors):
            with profiler.phase("iteration"):
                with profiler.phase("wait_for_data"):
                    try:
                        actor_id, trajectory = queue.get(timeout=POLL_S)
                    except queue_module.Empty:
                        actor_id, trajectory = None, None
                if actor_id is None:
                    # Nothing for a while: an actor that died never sends its last message.
                    for i, actor in enumerate(actors):
                        if i not in done and actor.exitcode not in (None, 0):
                            done.add(i)
                            failed[i] = actor.exitcode
                    continue
                if trajectory is None:
                    done.add(actor_id)
                    continue
                profiler.wait_on("trajectories", f"{actor_id}:{received[actor_id]}")
                received[actor_id] += 1
                totals["trajectories"] += 1
                totals["samples"] += len(trajectory)
                pending.extend(trajectory)
                if len(pending) >= args.shard_size:
                    with profiler.phase("write_shard", io=True):
                        shards.append(write_shard(data_dir, len(shards), pending))
                    totals["shard_bytes"] += shards[-1].stat().st_size
                    pending = []
                if not shards:
                    continue
                with profiler.phase("load_batch", io=True):
                    batch, size = load_batch(shards, rng, args.batch_size)
                totals["batches"] += 1
                totals["batch_bytes"] += size
                with profiler.phase("train_step"):
                    model.train_step(batch)
                    profiler.count("samples_trained", len(batch))
                totals["train_steps"] += 1
                if totals["train_steps"] % args.checkpoint_every == 0:
                    with profiler.phase("checkpoint", io=True):
                        totals["checkpoint_bytes"] += checkpoint(model, data_dir, totals["train_steps"])
                    totals["checkpoints"] += 1
        for actor in actors:
            actor.join()
    finally:
        for actor in actors:
            if actor.is_alive():
                actor.terminate()
                actor.join()
        shutil.rmtree(data_dir, ignore_errors=True)

    for i, actor in enumerate(actors):
        if actor.exitcode != 0:
            failed.setdefault(i, actor.exitcode)
    wall = time.monotonic() - started
    print(
        f"learner: {totals['trajectories']} games, {totals['samples']} positions, {totals['train_steps']} train "
        f"steps, {len(shards)} shards, {totals['checkpoints']} checkpoints in {wall:.1f}s",
        flush=True,
    )
    if failed:
        print(f"pipeline: actor(s) failed: {failed}", file=sys.stderr)
    if args.summary:
        summary = dict(
            totals,
            actors=args.actors,
            games_per_actor=args.games,
            simulations=args.simulations,
            shards=len(shards),
            backend=model.name,
            start_method=args.start_method,
            profiler_enabled=profiler.enabled,
            run_id=profiler.run_id,
            failed_actors={str(k): v for k, v in failed.items()},
            wall_s=wall,
        )
        Path(args.summary).write_text(json.dumps(summary, indent=1))
    return 1 if failed else 0


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=positive_int, default=4)
    parser.add_argument("--games", type=positive_int, default=300, help="games per actor (default 300)")
    parser.add_argument("--simulations", type=positive_int, default=256, help="MCTS playouts per move (default 256)")
    parser.add_argument("--run-dir", default="profile", help="the profiler's run directory (default profile)")
    parser.add_argument("--start-method", default="spawn", choices=["spawn", "fork", "forkserver"])
    parser.add_argument(
        "--backend", default="auto", choices=["auto", "torch", "numpy", "python"],
        help="the learner's model: auto takes torch, else numpy, else pure Python",
    )
    parser.add_argument("--shard-size", type=positive_int, default=512, help="positions per shard file")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--checkpoint-every", type=positive_int, default=100, help="train steps between checkpoints")
    parser.add_argument("--data-dir", default=None, help="where shards and checkpoints go (a temporary folder)")
    parser.add_argument("--summary", default=None, help="write what the pipeline did as JSON to this file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--lines-window", type=positive_int, nargs=2, default=None, metavar=("START", "STOP"),
        help="line-profile each actor's games START..STOP-1 (backend=\"lines\"; lineprofiler report --lines)",
    )
    parser.add_argument(
        "--trace", action="store_true",
        help="exact spans and queue links in every process (Profiler(trace=True)): lineprofiler trace RUN_DIR",
    )
    parser.add_argument(
        "--crash-actor", type=int, default=None, metavar="ID",
        help="actor ID raises after its first game (to see what the report keeps of a failed worker)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(learner_main(parse_args()))
