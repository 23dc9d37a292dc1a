"""The RL pipeline of examples/rl_pipeline and `make demo`, run for real and held against
what the pipeline says it did (its --summary).

Actors are real multiprocessing children (spawn, fork, forkserver), the learner trains the
real model (torch on the CPU where it is installed), shards and checkpoints are real files.
Counts, entries and io=True bytes are asserted exactly; times are not asserted.
"""

from __future__ import annotations

import json
import re
import sys

import lp_pipeline_helpers as h
import pytest

from lineprofiler.report import format as fmt

SIMULATIONS = 16
GAMES = 3
SHARD = 24  # positions per shard file; a game has 5 to 9
BATCH = 16


def run_pipeline(tmp_path, *args, env=None):
    run_dir = tmp_path / "profile"
    summary_path = tmp_path / "summary.json"
    command = [
        sys.executable, h.PIPELINE, "--run-dir", run_dir, "--summary", summary_path, "--data-dir", tmp_path,
        "--simulations", SIMULATIONS, "--games", GAMES, "--shard-size", SHARD, "--batch-size", BATCH, *args,
    ]
    result = h.run(command, env=env if env is not None else h.clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(summary_path.read_text())
    return run_dir, summary, result


def check_run(run_dir, summary, actors):
    """Everything the worker files and the report must say about a pipeline run."""
    docs = h.documents(run_dir)
    assert sorted(d["identity"]["role"] for d in docs) == ["actor"] * actors + ["learner"]
    assert {d["identity"]["run_id"] for d in docs} == {summary["run_id"]}  # one run, joined via the environment
    assert all(d["times"]["status"] == "exited" for d in docs), [d["times"] for d in docs]
    assert all(d["errors"] == [] for d in docs), [d["errors"] for d in docs]

    actor_docs = [d for d in docs if d["identity"]["role"] == "actor"]
    games = sum(h.counter(d, "iteration", "games") for d in actor_docs)
    moves = sum(h.counter(d, "iteration/self_play/env_step", "moves") for d in actor_docs)
    simulations = sum(h.counter(d, "iteration/self_play/mcts", "mcts_simulations") for d in actor_docs)
    searches = sum(h.by_path(d)["iteration/self_play/mcts"]["entries"] for d in actor_docs)
    assert games == summary["trajectories"] == actors * GAMES
    assert moves == searches == summary["samples"]  # one search per move, every move reached the learner
    assert simulations == summary["samples"] * SIMULATIONS
    for doc in actor_docs:
        assert h.by_path(doc)["iteration"]["entries"] == GAMES

    (learner,) = [d for d in docs if d["identity"]["role"] == "learner"]
    phases = h.by_path(learner)
    assert phases["setup"]["entries"] == 1
    assert phases["iteration/train_step"]["entries"] == summary["train_steps"] > 0
    assert h.counter(learner, "iteration/train_step", "samples_trained") == BATCH * summary["train_steps"]
    assert phases["iteration/load_batch"]["entries"] == summary["batches"]
    assert phases["iteration/write_shard"]["entries"] == summary["shards"]
    # io=True is exact: the bytes handed to write()/read() inside the phase, nothing else
    assert phases["iteration/write_shard"]["io_bytes"]["wchar"] == summary["shard_bytes"]
    assert phases["iteration/load_batch"]["io_bytes"]["rchar"] == summary["batch_bytes"]
    assert phases["iteration/load_batch"]["io_bytes"]["wchar"] == 0
    if summary["checkpoints"]:
        checkpoint = phases["iteration/checkpoint"]
        assert checkpoint["entries"] == checkpoint["io_bytes"]["measured_entries"] == summary["checkpoints"]
        assert checkpoint["io_bytes"]["wchar"] == summary["checkpoint_bytes"]
        # fsynced inside the phase: the writeback is billed to it, in whole pages
        assert checkpoint["io_bytes"]["write_bytes"] >= summary["checkpoint_bytes"]
    assert phases["iteration/train_step"]["io_bytes"] is None  # not an io=True phase

    text = h.report(run_dir)
    assert f"Processes {actors + 1}   Roles " in text
    assert re.search(rf"\bactor x{actors}\b", text) and "learner x1" in text
    assert re.search(rf"^ACTOR  \({actors} processes, imbalance \d+\.\d\d\)$", text, re.M), text
    assert re.search(r"^LEARNER  \(1 process, imbalance 1\.00\)$", text, re.M), text
    assert re.search(rf"^    \+ mcts_simulations +{re.escape(fmt.count(simulations))} ", text, re.M), text
    assert re.search(rf"^    \+ samples_trained +{re.escape(fmt.count(BATCH * summary['train_steps']))} ", text, re.M)
    assert "iteration/self_play/mcts" in text
    assert f"Run {summary['run_id']}" in text
    assert "CAVEATS" not in text, text  # a clean run has nothing to excuse
    return docs, text


def test_four_actors_and_a_learner_are_reported_exactly(tmp_path):
    run_dir, summary, result = run_pipeline(tmp_path, "--checkpoint-every", "2")
    assert summary["checkpoints"] >= 1 and summary["shards"] >= 1
    if h.torch_skip_reason() is None:
        assert "learner: model torch (CPU)" in result.stdout
        assert summary["backend"] == "torch (CPU)"
    else:  # the fallback says so (checked in its own test with torch hidden)
        assert "falls back to" in result.stdout
    check_run(run_dir, summary, 4)
    assert "Warning" not in result.stderr, result.stderr


def test_without_torch_the_learner_falls_back_and_says_so(tmp_path):
    # Hide torch and numpy from the pipeline: importing either raises ImportError, as when absent.
    hidden = tmp_path / "hidden"
    for name in ("torch", "numpy"):
        (hidden / name).mkdir(parents=True)
        (hidden / name / "__init__.py").write_text(f"raise ImportError('{name} hidden by the test')\n")
    env = h.clean_env(PYTHONPATH=str(hidden))
    run_dir, summary, result = run_pipeline(tmp_path, "--checkpoint-every", "2", env=env)
    assert "learner: torch and numpy not installed: the learner falls back to pure Python" in result.stdout
    assert summary["backend"].startswith("pure Python")
    check_run(run_dir, summary, 4)


def test_asking_for_a_missing_backend_is_one_line_and_exit_2(tmp_path):
    hidden = tmp_path / "hidden" / "torch"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('torch hidden by the test')\n")
    result = h.run(
        [sys.executable, h.PIPELINE, "--run-dir", tmp_path / "profile", "--backend", "torch"],
        env=h.clean_env(PYTHONPATH=str(hidden.parent)),
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "pipeline: --backend torch: torch cannot be imported (torch hidden by the test)"
    ]


def test_profile_0_turns_every_process_off(tmp_path):
    run_dir, summary, result = run_pipeline(tmp_path, "--backend", "python", env=h.clean_env(LINEPROFILER_PROFILE="0"))
    assert "profiler off (LINEPROFILER_PROFILE=0)" in result.stdout
    assert summary["profiler_enabled"] is False and summary["trajectories"] == 4 * GAMES
    assert not (run_dir / "workers").exists()  # nothing written anywhere, by the learner or an actor


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_fork_and_forkserver_actors_join_the_run(tmp_path, method):
    run_dir, summary, _ = run_pipeline(tmp_path, "--backend", "python", "--start-method", method)
    docs, _ = check_run(run_dir, summary, 4)
    actor_pids = {d["identity"]["pid"] for d in docs if d["identity"]["role"] == "actor"}
    assert len(actor_pids) == 4


@pytest.mark.slow
def test_sixteen_actors(tmp_path):
    run_dir, summary, _ = run_pipeline(tmp_path, "--backend", "python", "--actors", "16")
    check_run(run_dir, summary, 16)


def test_an_actor_that_raises_fails_the_pipeline_and_keeps_its_data(tmp_path):
    # Actor 0 raises after its first game and never sends its last message: the learner must
    # notice rather than wait forever, and exit 1; the actor's game is still in its file.
    command = [
        sys.executable, h.PIPELINE, "--run-dir", tmp_path / "profile", "--backend", "python", "--games", "3",
        "--simulations", "8", "--actors", "2", "--data-dir", tmp_path, "--crash-actor", "0",
    ]
    result = h.run(command, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pipeline: actor(s) failed: {0: 1}" in result.stderr
    assert "RuntimeError: actor 0 crashes on purpose (--crash-actor)" in result.stderr
    docs = h.documents(tmp_path / "profile")
    assert sorted(d["identity"]["role"] for d in docs) == ["actor", "actor", "learner"]
    games = sorted(h.counter(d, "iteration", "games") for d in docs if d["identity"]["role"] == "actor")
    assert games == [1, 3]
    assert all(d["times"]["status"] == "exited" for d in docs)


def test_demo_runs_the_pipeline_the_report_and_the_actors_lines_from_that_run(tmp_path):
    result = h.run(
        [sys.executable, h.EXAMPLES / "demo.py", "--pipeline-args", "--games 3 --simulations 8 --backend python",
         "--lines-window", "2", "3"],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    banners = [line for line in out.splitlines() if line.startswith("=== ")]
    assert [b.split()[1] for b in banners] == ["1.", "2.", "3."], banners
    assert "Processes 5   Roles " in out and "ACTOR  (4 processes" in out
    assert (tmp_path / "profile" / "workers").is_dir()  # the demo's run directory is ./profile
    step2, step3 = out.split(banners[1], 1)[1].split(banners[2], 1)
    assert "report profile/ --lines" in banners[2]
    # The LINES block of the pipeline's own run: the four actors' windows, their MCTS lines.
    assert step3.lstrip().startswith("LINES  (") and "CAVEATS" not in step3 and "I/O" not in step3, step3
    assert "ACTOR  (4 of 4 processes left line stats; entries 2..2 of iteration" in step3, step3
    assert "mcts.py" in step3, step3
    assert len(list((tmp_path / "profile" / "lines").rglob("l_*.json"))) == 4
    # The report's STORY: every process traced, the learner's waits linked to the actors.
    story = step2[step2.index("STORY (exact spans and links)") :]
    assert "5 traced process(es)" in story, story
    assert "Critical path" in story and "link(s) followed" in story, story  # findings: none in 3 games
