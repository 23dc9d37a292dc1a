"""Three Ray nodes on this machine (``ray.cluster_utils.Cluster``), each writing to its own run
directory, so that nothing is shared but Ray itself: actors on every node, one killed, one node
that leaves, ``collect`` while the job runs and after (``scenarios.py cluster``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lineprofiler.runfiles import workerfile

from .conftest import clean_env

pytestmark = [pytest.mark.slow, pytest.mark.ray]

PLACEMENT = {
    "learner_head": "head", "actor_head": "head", "actor_second": "second", "killed_second": "second",
    "actor_third": "third",
}


@pytest.fixture(scope="module")
def cluster(ray_scenario) -> tuple[Path, dict]:
    return ray_scenario("cluster")


def _hosts(seen: dict) -> dict[str, str]:
    """node name -> the host label its actors recorded."""
    return {PLACEMENT[name]: identity["host"] for name, identity in seen["identities"].items()}


def _by_host(collected: dict) -> dict[str, dict]:
    return {node["host"]: node for node in collected["nodes"]}


def test_nodes_sharing_a_host_name_and_address_get_distinct_hosts(cluster):
    _, seen = cluster
    hosts = _hosts(seen)
    assert len(set(hosts.values())) == 3, hosts
    for name, host in hosts.items():
        # the machine's host name and the node id's first 8 hex digits
        assert host.endswith("-" + seen["node_ids"][name][:8]), (name, host)
    assert sorted(i["rank"] for i in seen["identities"].values()) == [0, 1, 2, 3, 4]
    assert {i["role"] for i in seen["identities"].values()} == {"Actor", "Learner"}


def test_collect_while_running_brings_every_node_into_the_driver_run_dir(cluster):
    work, seen = cluster
    hosts = _hosts(seen)
    running = _by_host(seen["collect_running"])
    for node, host in hosts.items():
        assert running[host]["state"] == "collected", running[host]
        assert running[host]["files_copied"] > 0
        assert running[host]["node_run_dir"] == str(work / f"node-{node}")
    copied = {(p.parent.name, p.name) for p in workerfile.find_worker_files(work / "driver")}
    for name, identity in seen["identities"].items():
        assert any(host == identity["host"] and f"_{identity['pid']}_" in file for host, file in copied), name


def test_collect_after_names_the_node_that_left_and_the_killed_actor(cluster):
    work, seen = cluster
    hosts = _hosts(seen)
    after = _by_host(seen["collect_after"])
    assert after[hosts["third"]]["state"] == "left"
    assert after[hosts["head"]]["state"] == after[hosts["second"]]["state"] == "collected"
    killed = seen["identities"]["killed_second"]
    third = seen["identities"]["actor_third"]
    deaths = {a["pid"]: a["reason"] for a in seen["collect_after"]["dead_actors"]}
    assert deaths == {killed["pid"]: "RAY_KILL", third["pid"]: "NODE_DIED"}
    caveats = seen["collect_after"]["caveats"]
    assert any(c.startswith(f"Ray node {hosts['third']} ") and "left the cluster" in c for c in caveats), caveats
    assert any(f"pid {killed['pid']} on {hosts['second']} died" in c and "ray.kill" in c for c in caveats), caveats
    written = json.loads((work / "driver" / "ray" / "collect.json").read_text())
    assert written["caveats"] == seen["collect_again"]["caveats"]


def test_collect_is_incremental_and_idempotent(cluster):
    work, seen = cluster
    again = seen["collect_again"]
    assert again["files"] == 0 and again["bytes"] == 0
    # the driver's copies are byte for byte the nodes' files (every process had ended)
    for node in ("head", "second"):
        source = work / f"node-{node}"
        for path in source.rglob("*"):
            # a temporary file that a killed writer left on a node is not a run file: not copied
            if path.is_file() and path.parent != source and not path.name.startswith(".tmp_"):
                copy = work / "driver" / path.relative_to(source)
                assert copy.read_bytes() == path.read_bytes(), copy
    leftovers = [p for p in (work / "driver").rglob(".tmp*")]
    assert leftovers == []
    # the 9 MiB file went through the object store in 4 MiB pieces, and arrived whole
    assert (work / "driver" / "backend" / "large_trace.json").stat().st_size == 9 << 20


def test_the_report_shows_every_host_and_actor_and_the_ones_that_stopped(cluster, report):
    work, seen = cluster
    text = report(work / "driver")
    header = text.split("\n\n", 1)[0]
    hosts = _hosts(seen)
    assert f"Hosts {', '.join(sorted(hosts.values()))} (3 nodes)" in header
    assert "Processes 5" in header and "Actor x4" in header and "Learner x1" in header
    assert f"Run {seen['run_id']}" in header
    caveats = text.split("CAVEATS", 1)[1]
    for name in ("killed_second", "actor_third"):
        identity = seen["identities"][name]
        assert f"Actor pid {identity['pid']} on {identity['host']} (rank {identity['rank']}) stopped writing" in caveats
    # ...and every problem the last collect recorded: the node that left, the killed actor
    collected = json.loads((work / "driver" / "ray" / "collect.json").read_text())["caveats"]
    assert len(collected) >= 2
    for line in collected:  # Ray's reasons span lines; the report prints each caveat on one
        assert f"  - {' '.join(line.split())}\n" in caveats, line


def test_the_ray_pipeline_example_on_two_nodes(tmp_path, needs_ray):
    """examples/ray_pipeline.py, small: two nodes on this machine, a live collect, the report."""
    example = Path(__file__).resolve().parents[2] / "examples" / "ray_pipeline.py"
    result = subprocess.run(
        [sys.executable, str(example), "--actors", "2", "--games", "3", "--simulations", "16", "--nodes", "2",
         "--collect-every", "2", "--backend", "python", "--shard-size", "8", "--checkpoint-every", "5"],
        env=clean_env(), cwd=tmp_path, capture_output=True, text=True, timeout=420,
    )
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    out = result.stdout
    assert "driver: Ray with 2 node(s)" in out
    assert out.count(": collected, ") == 2  # the final collect reached both nodes
    header = out.split("Runtime ", 1)[1].split("\n\n", 1)[0]
    assert "Processes 3" in header and "Actor x2" in header and "Learner x1" in header
    assert "(2 nodes)" in header and "Job 01000000 (ray)" in header
    for phase in ("mcts", "wait_for_data", "train_step", "checkpoint"):
        assert phase in out
