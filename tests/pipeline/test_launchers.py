"""Ranks started by real launchers, with no parent profiler: torchrun and mpirun.

Each rank constructs its own Profiler; they must join one run through the launcher's job id
(identity.py), carry the launcher's ranks, and merge into one role in the report.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import lp_pipeline_helpers as h
import pytest

STEPS = 12


@pytest.mark.slow
def test_torchrun_four_ranks_are_one_role_of_one_run(tmp_path):
    reason = h.torch_skip_reason()
    if reason:
        pytest.skip(reason)
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [torchrun] if torchrun.exists() else [sys.executable, "-m", "torch.distributed.run"]
    run_dir = tmp_path / "profile"
    batch = 32
    result = h.run(
        [*command, "--nproc-per-node", "4", h.EXAMPLES / "torchrun_ddp.py", "--run-dir", run_dir,
         "--steps", STEPS, "--batch", batch, "--skew", "0.5"],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]

    docs = h.documents(run_dir)
    assert len(docs) == 4
    identities = [d["identity"] for d in docs]
    assert sorted(i["rank"] for i in identities) == [0, 1, 2, 3]
    assert sorted(i["local_rank"] for i in identities) == [0, 1, 2, 3]
    assert {i["node_rank"] for i in identities} == {0}  # GROUP_RANK: one node
    assert {i["world_size"] for i in identities} == {4}
    assert {i["launcher"] for i in identities} == {"torchrun"}
    assert {i["role"] for i in identities} == {"trainer"}
    (run_id,) = {i["run_id"] for i in identities}  # one run, from TORCHELASTIC_RUN_ID
    (job,) = {i["job_id"] for i in identities}
    assert run_id == f"torchrun-{job}" and {i["run_id_source"] for i in identities} == {"torchrun"}
    for doc in docs:
        rank = doc["identity"]["rank"]
        phases = h.by_path(doc)
        assert phases["iteration"]["entries"] == STEPS and phases["setup"]["entries"] == 1
        assert h.counter(doc, "iteration", "samples") == STEPS * (batch + (batch // 2 if rank == 0 else 0))
        assert doc["times"]["status"] == "exited" and doc["errors"] == []

    text = h.report(run_dir)
    assert "Processes 4   Roles trainer x4" in text
    assert re.search(r"^TRAINER  \(4 processes, imbalance \d+\.\d\d\)$", text, re.M), text
    assert f"Ranks 0-3   Job {job} (torchrun)" in text
    assert f"Run {run_id}" in text
    assert "iteration/backward" in text
    assert "CAVEATS" not in text, text


@pytest.mark.slow
def test_mpirun_four_ranks_are_one_role_of_one_run(tmp_path):
    reason = h.mpi_skip_reason()
    if reason:
        pytest.skip(reason)
    run_dir = tmp_path / "profile"
    # Open MPI refuses to run as root unless told twice (CI runs as root in a container), and
    # 4 ranks on 2 cores need oversubscription; set through the environment, so the command
    # line is the plain one users type. Open MPI 5 (PRRTE: Debian sid's) reads its own variable.
    env = h.clean_env(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe",
    )
    result = h.run(
        ["mpirun", "-n", "4", sys.executable, h.EXAMPLES / "mpi_allreduce.py", "--run-dir", run_dir, "--steps", STEPS,
         "--work", "2000"],
        env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert f"allreduce: {STEPS} steps, last sum {1 + 2 + 3 + 4}" in result.stdout

    docs = h.documents(run_dir)
    assert len(docs) == 4
    identities = [d["identity"] for d in docs]
    assert sorted(i["rank"] for i in identities) == [0, 1, 2, 3]  # OMPI_COMM_WORLD_RANK
    assert sorted(i["local_rank"] for i in identities) == [0, 1, 2, 3]  # OMPI_COMM_WORLD_LOCAL_RANK
    assert {i["world_size"] for i in identities} == {4}
    assert {i["node_rank"] for i in identities} == {None}  # Open MPI sets no node index
    assert {i["launcher"] for i in identities} == {"mpi"}
    (run_id,) = {i["run_id"] for i in identities}  # one run across ranks: Open MPI's job id
    (job,) = {i["job_id"] for i in identities}
    (source,) = {i["run_id_source"] for i in identities}
    if job.isdigit():  # Open MPI 4 exports its job id
        assert (run_id, source) == (f"mpi-{job}", "mpi")
    else:  # Open MPI 5 (PRRTE) exports only its PMIx namespace, "prterun-<host>-<pid>@1"
        assert "@" in job and source == "pmix" and run_id.startswith("pmix-prterun-"), (run_id, job)
    assert {i["pid"] for i in identities}.isdisjoint({os.getpid()})
    for doc in docs:
        assert h.by_path(doc)["iteration/allreduce"]["entries"] == STEPS
        assert h.counter(doc, "iteration", "steps") == STEPS
        assert doc["times"]["status"] == "exited" and doc["errors"] == []

    text = h.report(run_dir)
    assert "Processes 4   Roles worker x4" in text
    assert re.search(r"^WORKER  \(4 processes, imbalance \d+\.\d\d\)$", text, re.M), text
    assert f"Ranks 0-3   Job {job} (mpi)" in text
    assert f"Run {run_id}" in text
    assert "CAVEATS" not in text, text


FORKSERVER_FIRST = """
import multiprocessing as mp
import sys

from lineprofiler.accounting import Profiler


def noop():
    pass


def actor(i):
    profiler = Profiler(role="actor")  # nothing passed: whatever the environment says
    with profiler:
        with profiler.phase("iteration"):
            profiler.count("games", i + 1)


if __name__ == "__main__":
    ctx = mp.get_context("forkserver")
    early = ctx.Process(target=noop)  # the server starts now, before any profiler exists
    early.start()
    early.join()
    learner = Profiler(run_dir=sys.argv[1], role="learner")
    actors = [ctx.Process(target=actor, args=(i,)) for i in range(3)]
    for p in actors:
        p.start()
    for p in actors:
        p.join()
    learner.close()
    sys.exit(max(p.exitcode for p in actors))
"""


def test_a_forkserver_started_before_the_profiler_joins_the_parents_run(tmp_path):
    # The seed's forkserver advice: export LINEPROFILER_PROFILE=1 (and the run dir) in the
    # shell. The server's children then lack LINEPROFILER_RUN_ID, which the learner exported
    # after the server started; each finds its parent's worker file and joins that run.
    script = tmp_path / "forkserver_first.py"
    script.write_text(FORKSERVER_FIRST)
    run_dir = tmp_path / "profile"
    env = h.clean_env(LINEPROFILER_PROFILE="1", LINEPROFILER_RUN_DIR=str(run_dir))
    result = h.run([sys.executable, script, run_dir], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    docs = h.documents(run_dir)
    assert sorted(d["identity"]["role"] for d in docs) == ["actor"] * 3 + ["learner"]
    (learner,) = [d for d in docs if d["identity"]["role"] == "learner"]
    assert {d["identity"]["run_id"] for d in docs} == {learner["identity"]["run_id"]}
    text = h.report(run_dir)
    assert "Processes 4   Roles " in text and "Superseded" not in text


def test_a_forkserver_started_before_the_profiler_joins_the_run_when_the_shell_exports_it(tmp_path):
    # The forkserver caveat of docs/pipelines.md: the server's children inherit the server's
    # environment as it was when it started, so exporting LINEPROFILER_PROFILE and
    # LINEPROFILER_RUN_DIR is not enough; LINEPROFILER_RUN_ID must be exported too, or every
    # actor is a run of its own. With all three exported, the actors join the learner's run.
    script = tmp_path / "forkserver_first.py"
    script.write_text(FORKSERVER_FIRST)
    run_dir = tmp_path / "profile"
    env = h.clean_env(LINEPROFILER_PROFILE="1", LINEPROFILER_RUN_DIR=str(run_dir), LINEPROFILER_RUN_ID="exported-1")
    result = h.run([sys.executable, script, run_dir], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    docs = h.documents(run_dir)
    assert sorted(d["identity"]["role"] for d in docs) == ["actor"] * 3 + ["learner"]
    assert {d["identity"]["run_id"] for d in docs} == {"exported-1"}
    text = h.report(run_dir)
    assert "Processes 4   Roles " in text and "Superseded" not in text
