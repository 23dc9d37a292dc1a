"""A real Ray on this machine (``lp_ray.init(num_cpus=2)``): what the profiler takes from Ray inside
actors, tasks and their children, and what the report makes of the run (``scenarios.py local``)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from lineprofiler.runfiles import workerfile

pytestmark = [pytest.mark.slow, pytest.mark.ray]


@pytest.fixture(scope="module")
def local(ray_scenario) -> tuple[Path, dict]:
    return ray_scenario("local")


def _documents(run_dir: Path) -> list[dict]:
    return [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]


def _phases(document: dict) -> set[str]:
    return {p["path"] for p in document["phases"]}


def test_every_process_joins_the_run_that_ray_names(local):
    run_dir, seen = local
    run = seen["run_id"]
    # ray-<session start>-<head pid>-<job id>: a new cluster is a new run even with the same job id
    assert re.fullmatch(r"ray-\d{8}T\d{6}\.\d+-\d+-01000000", run), run
    identities = [
        seen["driver"], seen["learner"], *seen["actors"], seen["fork"]["identity"],
        seen["restart"]["before"], seen["restart"]["after"], seen["named"]["argument"], seen["named"]["env"],
        *(t["identity"] for t in seen["tasks"]),
    ]
    assert {i["run_id"] for i in identities} == {run}
    documents = _documents(run_dir)
    assert {d["identity"]["run_id"] for d in documents} == {run}
    # The first Profiler of a Ray process asks Ray; later ones, and the driver (after lp_ray.init),
    # read the run id the first one exported.
    for identity in (seen["learner"], *seen["actors"], seen["tasks"][0]["identity"]):
        assert identity["run_id_source"] == "ray" and identity["job_id"] == "01000000"
        assert identity["launcher"] == "ray"
    assert {t["identity"]["run_id_source"] for t in seen["tasks"]} <= {"ray", "env"}
    assert seen["driver"]["run_id_source"] == "env"
    assert len({i["host"] for i in identities}) == 1  # one node: its host name


def test_roles_default_to_the_actor_class_or_the_task_function(local):
    _, seen = local
    assert seen["learner"]["role"] == "Learner"
    assert {a["role"] for a in seen["actors"]} == {"Actor"}
    assert seen["named"]["argument"]["role"] == "evaluator"  # Profiler(role=...) wins
    assert seen["named"]["env"]["role"] == "from_env"  # and so does LINEPROFILER_ROLE
    assert {t["identity"]["role"] for t in seen["tasks"]} == {"load", "score"}
    assert seen["fork"]["identity"]["role"] == "helper"


def test_actor_ranks_follow_the_order_of_their_first_profiler_and_survive_a_restart(local):
    _, seen = local
    assert seen["learner"]["rank"] == 0  # constructed before any other actor existed
    assert sorted(a["rank"] for a in seen["actors"]) == [1, 2, 3]
    before, after = seen["restart"]["before"], seen["restart"]["after"]
    assert after is not None, "the restarted actor never answered"
    assert before["pid"] != after["pid"] and before["rank"] == after["rank"] == 4
    # tasks and the driver are no ranks
    assert seen["driver"]["rank"] is None
    assert {t["identity"]["rank"] for t in seen["tasks"]} == {None}


def test_a_fork_child_of_an_actor_joins_through_what_the_actor_exported(local):
    _, seen = local
    fork, parent = seen["fork"], seen["actors"][0]
    assert fork["exitcode"] == 0
    assert fork["identity"]["host"] == parent["host"]
    assert fork["identity"]["run_id_source"] == "env"


def test_tasks_of_two_roles_in_one_worker_process_keep_separate_files(local):
    run_dir, seen = local
    files = defaultdict(set)
    roles_by_pid = defaultdict(set)
    for task in seen["tasks"]:
        files[(task["pid"], task["identity"]["role"])].add(task["file"])
        roles_by_pid[task["pid"]].add(task["identity"]["role"])
    # one Profiler per (process, role), reused by the next task of that role
    assert all(len(names) == 1 for names in files.values()), files
    shared = [pid for pid, roles in roles_by_pid.items() if roles == {"load", "score"}]
    assert shared, f"Ray ran the two functions in different processes: {dict(roles_by_pid)}"
    by_name = {d["identity"]["pid"]: [] for d in _documents(run_dir)}
    for document in _documents(run_dir):
        by_name[document["identity"]["pid"]].append(document)
    for document in by_name[shared[0]]:
        expected = {"load": {"read"}, "score": {"evaluate"}}[document["identity"]["role"]]
        assert _phases(document) == expected  # never the other role's phases
        assert document["times"]["status"] == "running"  # flushed at the end of each task


def test_collect_on_one_node_copies_nothing_onto_itself(local):
    run_dir, seen = local
    for name in ("collect", "collect_again"):
        (node,) = seen[name]["nodes"]
        assert node["state"] == "same-dir" and node["files_copied"] == 0, seen[name]
    assert seen["collect"]["caveats"] == []
    written = json.loads((run_dir / "ray" / "collect.json").read_text())
    assert written["kind"] == "lineprofiler-ray-collect" and written["run_id"] == seen["run_id"]
    assert written["nodes"][0]["state"] == "same-dir" and written["caveats"] == []


def test_init_refuses_ray_arguments_once_ray_runs(local):
    _, seen = local
    assert "already running" in seen["init_twice"]


def test_the_report_shows_the_ray_run(local, report):
    run_dir, seen = local
    text = report(run_dir)
    header = text.split("\n\n", 1)[0]
    assert f"Run {seen['run_id']}" in header
    assert "Job 01000000 (ray)" in header
    assert f"Hosts {seen['driver']['host']} (1 node)" in header
    # Ray hands each task to an idle worker process, not always the same one: as many processes
    # per task role as the tasks themselves saw.
    tasks = {
        role: len({t["pid"] for t in seen["tasks"] if t["identity"]["role"] == role}) for role in ("load", "score")
    }
    roles = ("Learner x1", "Actor x3", f"load x{tasks['load']}", f"score x{tasks['score']}", "driver x1", "helper x1")
    for role in (*roles, "Restartable x2"):
        assert role in header, header
    assert "LEARNER" in text and "train_step" in text and "self_play" in text
    # the restarted actor: two files with one rank, and the report says so
    assert "rank(s) 4 appear in more than one worker file" in text
    # the clean collect (ray/collect.json, no caveats) adds no CAVEATS line
    assert "Ray " not in text.split("CAVEATS", 1)[-1]
