"""Run identity from the environment: run ids, attempts, ranks, hosts, sanitised path parts."""

from __future__ import annotations

import re
import sys
import types

import pytest

from lineprofiler.accounting import identity, launchers
from lineprofiler.runfiles import layout


def test_an_inherited_run_id_wins():
    env = {"LINEPROFILER_RUN_ID": "20260813T2241-471c94", "LINEPROFILER_ATTEMPT": "2", "SLURM_JOB_ID": "99"}
    run = identity.resolve_run_id(env)
    assert (run.run_id, run.attempt, run.source, run.job_id) == ("20260813T2241-471c94", 2, "env", "99")


def test_slurm_job_and_step_make_a_deterministic_run_id_and_requeues_are_attempts():
    env = {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}
    first = identity.resolve_run_id(env)
    assert first == identity.resolve_run_id(dict(env))  # two processes of the job agree
    assert (first.run_id, first.attempt, first.source) == ("slurm-4242.0", 0, "slurm")
    again = identity.resolve_run_id(dict(env, SLURM_RESTART_COUNT="1"))
    assert (again.run_id, again.attempt) == ("slurm-4242.0-r1", 1000)


def test_torchrun_mpi_and_pmix_ids():
    torch = identity.resolve_run_id({"TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "3"})
    assert (torch.run_id, torch.attempt, torch.source) == ("torchrun-abc-t3", 3, "torchrun")
    # torchrun's default rendezvous id names no job
    assert identity.resolve_run_id({"TORCHELASTIC_RUN_ID": "none"}).source == "generated"
    mpi = identity.resolve_run_id({"OMPI_MCA_ess_base_jobid": "123456"})
    assert (mpi.run_id, mpi.source) == ("mpi-123456", "mpi")
    pmix = identity.resolve_run_id({"PMIX_NAMESPACE": "slurm.pmix.55.0"})
    assert (pmix.run_id, pmix.source) == ("pmix-slurm.pmix.55.0", "pmix")


def test_generated_ids_are_new_each_time():
    a, b = identity.resolve_run_id({}), identity.resolve_run_id({})
    assert a.source == "generated" and a.attempt == 0
    assert re.fullmatch(r"\d{8}T\d{4}-[0-9a-f]{6}", a.run_id)
    assert a.run_id != b.run_id  # a rerun into the same directory is a new run


def test_ranks_come_from_the_innermost_launcher():
    # torchrun inside a Slurm allocation: the worker's rank is torchrun's
    env = {"SLURM_PROCID": "1", "RANK": "5", "LOCAL_RANK": "1", "TORCHELASTIC_RUN_ID": "x", "WORLD_SIZE": "8",
           "GROUP_RANK": "2", "SLURM_NODEID": "1"}
    ident = identity.build_identity("actor", identity.resolve_run_id(env), env)
    assert (ident.rank, ident.local_rank, ident.node_rank, ident.world_size, ident.launcher) == (5, 1, 2, 8, "torchrun")
    slurm = {"SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "7"}
    ident = identity.build_identity(None, identity.resolve_run_id(slurm), slurm)
    assert (ident.rank, ident.local_rank, ident.node_rank, ident.world_size) == (3, 1, 1, 4)
    assert (ident.launcher, ident.job_id, ident.role) == ("slurm", "7", "main")
    mpi = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3"}
    assert identity.resolve_rank(mpi) == (2, "mpi")
    assert identity.resolve_rank({"PMI_RANK": "4"}) == (4, "pmi")
    assert identity.resolve_rank({"PMIX_RANK": "6"}) == (6, "pmi")
    assert identity.resolve_rank({"RANK": "not a number"}) == (None, None)
    assert identity.resolve_rank({}) == (None, None)


def test_host_and_role_are_kept_exactly_and_only_the_folder_name_is_escaped():
    env = {"LINEPROFILER_HOST": "../../etc/node 07", "LINEPROFILER_ROLE": "../actor"}
    ident = identity.build_identity(None, identity.resolve_run_id({}), env)
    assert (ident.host, ident.role) == ("../../etc/node 07", "../actor")
    folder = layout.host_component(ident.host)
    assert "/" not in folder and not folder.startswith(".") and folder not in (".", "..")
    assert identity.clean_role("learner/1", {}) == "learner/1"
    assert identity.clean_role(None, {"LINEPROFILER_ROLE": " 学习者 "}) == "学习者"
    assert identity.clean_role("", {}) == identity.clean_role("  ", {}) == identity.clean_role(None, {}) == "main"
    assert identity.resolve_host({"LINEPROFILER_HOST": "node07"}) == "node07"
    assert identity.resolve_host({}) != ""
    assert re.fullmatch(r"[0-9a-f]{8}", identity.new_uuid8())


def test_open_mpis_node_rank_is_not_the_node_index():
    # What mpirun -n 2 sets on one node for rank 1: OMPI_COMM_WORLD_NODE_RANK counts processes
    # on the node, so it is no node index.
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_NODE_RANK": "1",
           "OMPI_COMM_WORLD_SIZE": "2", "OMPI_MCA_ess_base_jobid": "1794637825", "PMIX_RANK": "1"}
    ident = identity.build_identity("worker", identity.resolve_run_id(env), env)
    assert (ident.rank, ident.local_rank, ident.node_rank, ident.launcher) == (1, 1, None, "mpi")
    assert (ident.run_id, ident.job_id) == ("mpi-1794637825", "1794637825")


@pytest.fixture
def no_launchers(monkeypatch):
    """An empty registry of launchers, and an environment that names no run, host, role or rank."""
    monkeypatch.setattr(launchers, "_registered", {})
    monkeypatch.setattr(launchers, "RUNTIMES", ())
    for name in ("LINEPROFILER_RUN_ID", "LINEPROFILER_HOST", "LINEPROFILER_ROLE", "LINEPROFILER_RUN_DIR",
                 "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
                 "RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)


def test_a_connected_launcher_answers_what_the_environment_does_not(no_launchers):
    adopted = []
    launchers.register(launchers.Launcher(
        "fake", lambda: True, run=lambda: ("fake-run", "job7"), host=lambda: "node3", role=lambda: "Actor",
        rank=lambda: 2, adopt_env=lambda: adopted.append(True),
    ))
    run = identity.resolve_run_id()
    assert (run.run_id, run.attempt, run.source, run.job_id) == ("fake-run", 0, "fake", "job7")
    ident = identity.build_identity(None, run)
    assert (ident.host, ident.role, ident.rank, ident.launcher) == ("node3", "Actor", 2, "fake")
    identity.adopt_ray_job_env()
    assert adopted == [True]
    # A mapping a caller made up is not this process: no launcher is asked about it.
    assert identity.resolve_run_id({}).source == "generated"
    assert identity.resolve_rank({}) == (None, None)


def test_a_launcher_that_is_not_connected_is_not_asked(no_launchers):
    def refuse():
        raise AssertionError("asked")

    launchers.register(launchers.Launcher("fake", lambda: False, run=refuse, host=refuse, role=refuse, rank=refuse))
    assert identity.resolve_run_id().source == "generated"
    assert identity.resolve_rank() == (None, None)
    assert identity.clean_role(None) == "main"


def test_a_launcher_declared_by_entry_point_is_imported_only_once_its_runtime_is(
    no_launchers, monkeypatch, tmp_path, request
):
    (tmp_path / "lp_fake_integration.py").write_text(
        "from lineprofiler.accounting import launchers\n"
        "launchers.register(launchers.Launcher('fake', lambda: True, run=lambda: ('fake-run', 'job1')))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(launchers, "RUNTIMES", ("fake",))
    declared = {"fake": "lp_fake_integration"}  # what an installed package's entry point would say
    monkeypatch.setattr(launchers, "_integration_of", declared.get)
    request.addfinalizer(lambda: sys.modules.pop("lp_fake_integration", None))
    assert identity.resolve_run_id().source == "generated"
    assert "lp_fake_integration" not in sys.modules
    monkeypatch.setitem(sys.modules, "fake", types.ModuleType("fake"))
    assert identity.resolve_run_id().source == "fake"
    assert "fake" in launchers.names()


def test_the_ray_integration_declares_its_launcher():
    """The installed package names, by entry point, the module that registers Ray's launcher."""
    assert "ray" in launchers.RUNTIMES
    module = launchers._integration_of("ray")
    assert module is not None and module.startswith("lineprofiler.")
