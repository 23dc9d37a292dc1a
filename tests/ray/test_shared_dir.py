"""Two Ray nodes on this machine writing to the driver's own run directory (``scenarios.py
shared``): with ``lp_ray.init``'s default ``node_run_dir`` (every node writes to the driver's
path), and with one explicit path that the second node reaches by another name. Actors record on
while ``collect`` runs, during the job and at its end: collect must leave every file where it is,
above all the live files the actors map, and the report must hold every entry they made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.ray]

JOBS = ("default", "explicit")


@pytest.fixture(scope="module")
def shared(ray_scenario) -> tuple[Path, dict]:
    return ray_scenario("shared")


def _run_dir(work: Path, job: str) -> Path:
    return work / job


@pytest.mark.parametrize("job", JOBS)
def test_collect_recognises_the_shared_directory_on_every_node(shared, job):
    _, seen = shared
    node_ids = set(seen["node_ids"].values())
    for collected in (*seen[job]["collects"], seen[job]["after_close"]):
        nodes = {node["node_id"]: node for node in collected["nodes"]}
        assert set(nodes) == node_ids, collected
        for node in nodes.values():
            assert node["state"] == "same-dir", node
            assert (node["files_copied"], node["bytes_copied"], node["files_removed"]) == (0, 0, 0), node
            assert node["errors"] == [], node
        assert collected["caveats"] == []


@pytest.mark.parametrize("job", JOBS)
def test_a_corrupt_state_file_costs_what_it_no_longer_says(shared, job):
    _, seen = shared
    collected = seen[job]["corrupt_state"]
    assert "raised" not in collected, collected["raised"]
    assert {node["state"] for node in collected["nodes"]} == {"same-dir"}
    assert collected["caveats"] == []


@pytest.mark.parametrize("job", JOBS)
def test_no_live_file_is_replaced_under_a_running_actor(shared, job):
    _, seen = shared
    for role, started in seen[job]["started"].items():
        stopped = seen[job]["stopped"][role]
        # the name still leads to the file the actor created...
        assert stopped["live_id_after"] == started["live_id"], role
        # ...and that is the file it maps, not an unlinked one
        assert stopped["mappings"], f"{role}: no mapping of {started['live']} in /proc/self/maps"
        for mapping in stopped["mappings"]:
            assert mapping == {"inode": started["live_id"][1], "deleted": False}, (role, stopped["mappings"])


def _entries_by_role(report: dict) -> dict[str, tuple[int, int]]:
    """role -> (entries of phase "step", total of its counter "items")."""
    found = {}
    for phase in report["dominant"]["phases"]:
        if phase["path"] == "step":
            items = [c["total"] for c in phase["counters"] if c["name"] == "items"]
            found[phase["role"]] = (phase["entries"], items[0] if items else None)
    return found


@pytest.mark.parametrize("job", JOBS)
def test_the_report_while_the_actors_run_has_every_entry_they_made(shared, job):
    _, seen = shared
    made = {role: stopped["entries"] for role, stopped in seen[job]["stopped"].items()}
    assert all(n > 0 for n in made.values()), made
    assert _entries_by_role(seen[job]["live_report"]) == {role: (n, n) for role, n in made.items()}
    assert not any("replaced" in line for line in seen[job]["live_report"]["caveats"])


@pytest.mark.parametrize("job", JOBS)
def test_the_report_after_the_job_has_every_entry(shared, job):
    work, seen = shared
    run_dir = _run_dir(work, job)
    made = {role: stopped["entries"] for role, stopped in seen[job]["stopped"].items()}
    result = run_cli("report", "--json", run_dir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    final = json.loads(result.stdout)
    assert _entries_by_role(final) == {role: (n, n) for role, n in made.items()}
    assert final["header"]["processes"] == len(made)
    written = json.loads((run_dir / "ray" / "collect.json").read_text())
    assert {n["state"] for n in written["nodes"]} == {"same-dir"}
    assert list(run_dir.rglob(".tmp*")) == []
