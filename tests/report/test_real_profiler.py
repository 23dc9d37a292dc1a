"""The report over files written by the real accounting core, driven exactly as the seed shows.

A learner process spawns actor processes (real ``multiprocessing`` spawn); every process
constructs ``Profiler(run_dir="profile", role=...)``; actors run
``iteration/self_play/mcts`` with ``count("mcts_simulations", 64)``; the learner uses phases
without ``with profiler:`` and checkpoints under ``phase("checkpoint", io=True)``. One actor
raises part-way. The pipeline runs twice into the same directory: the report must show the
second attempt only and name the first. Numbers are asserted from what the script did: exact
entries and counts, and times bounded below by the sleeps inside the phases.
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from helpers.cli import run_cli

ACTORS = 4
STEPS = 75
RAISING_AFTER = 10
LEARNER_STEPS = 12
CHECKPOINT_EVERY = 4
MCTS_SLEEP_S = 0.004
TRAIN_SPIN_S = 0.003

PIPELINE = textwrap.dedent(
    f"""
    import multiprocessing as mp
    import os
    import time

    from lineprofiler.accounting import Profiler


    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass


    def actor(index, steps):
        profiler = Profiler(run_dir="profile", role="actor")
        with profiler:
            for step in range(steps):
                with profiler.phase("iteration"), profiler.phase("self_play"):
                    with profiler.phase("mcts"):
                        time.sleep({MCTS_SLEEP_S})
                        profiler.count("mcts_simulations", 64)
                    with profiler.phase("env_step"):
                        spin(0.0005)
                if index == 0 and step + 1 == {RAISING_AFTER}:
                    raise RuntimeError("actor 0 fails on purpose")


    def main():
        profiler = Profiler(run_dir="profile", role="learner")
        ctx = mp.get_context("spawn")
        workers = [ctx.Process(target=actor, args=(i, {STEPS})) for i in range({ACTORS})]
        for w in workers:
            w.start()
        for step in range({LEARNER_STEPS}):
            with profiler.phase("train_step"):
                spin({TRAIN_SPIN_S})
            if (step + 1) % {CHECKPOINT_EVERY} == 0:
                with profiler.phase("checkpoint", io=True):
                    with open("model.bin", "wb") as handle:
                        handle.write(os.urandom(1 << 20))
                        handle.flush()
                        os.fsync(handle.fileno())
        for w in workers:
            w.join()


    if __name__ == "__main__":
        main()
    """
)


def run_pipeline(workdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    result = subprocess.run(
        [sys.executable, "pipeline.py"], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    # Actor 0 raises on purpose: its traceback is on stderr, the pipeline itself exits 0.
    assert result.returncode == 0, result.stderr
    assert "actor 0 fails on purpose" in result.stderr


def report(*args):
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def number(text):
    return int(text.replace(",", ""))


def seconds(text):
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    match = re.fullmatch(r"([\d.]+)(ns|us|ms|s)", text)
    assert match, text
    return float(match.group(1)) * units[match.group(2)]


@pytest.mark.slow
def test_report_over_a_real_pipeline_run_twice(tmp_path):
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    run_pipeline(tmp_path)
    run_pipeline(tmp_path)
    text = report("report", tmp_path / "profile")
    lines = text.splitlines()

    assert re.match(rf"Runtime \S+( \S+)?   Processes {ACTORS + 1}   Roles actor x{ACTORS}, learner x1$", lines[0])
    assert "(1 node)" in lines[1]
    superseded = [line for line in lines if line.startswith("Superseded attempt")]
    assert len(superseded) == 1 and f"actor x{ACTORS}, learner x1" in superseded[0]

    # Counts are exact, and the raising actor still contributed what it recorded.
    sims = 64 * (STEPS * (ACTORS - 1) + RAISING_AFTER)
    dominant = next(i for i, line in enumerate(lines) if line.startswith("DOMINANT PHASES"))
    table = lines[dominant:]
    row_at = dominant + next(i for i, line in enumerate(table) if line.startswith("iteration/self_play/mcts"))
    _, _, wait, p50, p99, entries, role = lines[row_at].split()
    assert role == "actor" and number(entries) == STEPS * (ACTORS - 1) + RAISING_AFTER
    # mcts sleeps: nearly all of it is off-CPU, and no entry is shorter than the sleep.
    assert number(wait.rstrip("%")) >= 50
    assert seconds(p50) >= MCTS_SLEEP_S * (1 - 0.05)
    assert seconds(p99) >= seconds(p50)
    # Under the row: why its threads waited (the sampler measured it), then its counter.
    assert lines[row_at + 1].startswith("    waited: "), lines[row_at + 1]
    counter = lines[row_at + 2].split()
    assert counter[:2] == ["+", "mcts_simulations"] and number(counter[2]) == sims
    rate = number(counter[3].removesuffix("/s").split(".")[0])
    each = seconds(counter[4].removesuffix("/ea"))
    assert rate <= 64 / MCTS_SLEEP_S * 1.01 and each >= MCTS_SLEEP_S / 64 * 0.99

    train = next(line for line in table if line.startswith("train_step"))
    assert train.split()[-1] == "learner"
    # Spinning is on-CPU, sleeping is not. How much of the spin is off-CPU depends on the
    # machine's load (a runnable thread waiting for a core counts as waiting), so compare.
    assert number(train.split()[2].rstrip("%")) < number(wait.rstrip("%"))
    assert any(line.startswith("checkpoint") and line.split()[-1] == "learner" for line in table)

    # Each role its own loop: the actors' "iteration", their most-entered top-level phase.
    at = next(i for i, line in enumerate(lines) if line.startswith("ITERATIONS"))
    entries = STEPS * (ACTORS - 1) + RAISING_AFTER
    assert f"  ACTOR  ({entries:,} entries)  phase iteration (the most-entered top-level phase)" in lines[at : at + 6]

    # Nothing was lost silently: no unreadable files, no stale workers in a clean run.
    caveats = text[text.index("CAVEATS"):] if "CAVEATS" in text else ""
    assert "unreadable" not in caveats and "stopped writing" not in caveats
    assert "killed before any data" not in caveats

    compared = report("compare", tmp_path / "profile", tmp_path / "profile", "--json")
    assert '"kind": "lineprofiler-compare"' in compared
