"""The problems Ray's collect recorded in ``RUN_DIR/ray/collect.json`` are CAVEATS lines of the report.

The run directory is written by a real ``Profiler`` in its own interpreter, under the run id a
Ray job would give it; ``collect.json`` beside it is written with the document builder and writer
that ``lineprofiler.integrations.ray.collect`` uses (so these tests need no Ray). The end-to-end
check with a real Ray cluster, a node that leaves and an actor killed, is in
tests/ray/test_ray_cluster.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lp_report_builders import run_lineprofiler as lineprofiler

from lineprofiler.runfiles import raycollect, workerfile
from lineprofiler.runfiles.layout import write_atomic

RUN_ID = "ray-20261130T093029.711881-31561-01000000"
# Lines as collect words them (integrations/ray.py, _caveats).
LEFT = (
    "Ray node node-3 (10.0.0.3, node 3c1a9e2f) left the cluster (the node was terminated) before any collect: "
    "its processes are missing from every total"
)
UNREACHABLE = (
    "Ray node node-4 (10.0.0.4, node 77d0b1aa) could not be collected (TimeoutError: the node did not finish "
    "within collect's timeout): its newest files may be missing"
)
DIED = "Ray actor Actor pid 4242 on node-2 died (killed by ray.kill): its numbers stop at its last snapshot"
#: Ray's reason as it gives it for an actor whose node left: on two lines.
NODE_DIED = (
    "Ray actor Actor pid 4250 on node-3 died (The actor died because its node has died. Node Id: 3c1a9e2f\n"
    "\tthe actor's node was terminated expectedly: received SIGTERM): its numbers stop at its last snapshot"
)

PROFILED = textwrap.dedent(
    """
    import sys
    from lineprofiler.accounting import Profiler

    with Profiler(run_dir=sys.argv[1], role="Actor") as profiler:
        with profiler.phase("play"):
            profiler.count("games", 3)
    """
)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> Path:
    """A run directory one real process wrote, under a Ray job's run id."""
    run_dir = tmp_path_factory.mktemp("ray-run") / "profile"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    env["LINEPROFILER_RUN_ID"] = RUN_ID
    subprocess.run([sys.executable, "-c", PROFILED, str(run_dir)], check=True, env=env, timeout=120)
    assert len(workerfile.find_worker_files(run_dir)) == 1
    return run_dir


@pytest.fixture
def run_dir(profiled, tmp_path) -> Path:
    """A copy of the profiled run directory, for one test to put its own ray/collect.json in."""
    copy = tmp_path / "profile"
    subprocess.run(["cp", "-a", str(profiled), str(copy)], check=True)
    return copy


def write_collect(run_dir: Path, caveats: list[str], run_id: str | None = RUN_ID) -> None:
    document = raycollect.build_document(
        run_id=run_id, job_id="01000000", collected_unix_ns=1_796_000_000_000_000_000, nodes=[], dead_actors=[],
        caveats=caveats,
    )
    folder = run_dir / raycollect.RAY_DIR
    folder.mkdir(exist_ok=True)
    write_atomic(folder / raycollect.COLLECT_FILE, json.dumps(document).encode())


def caveats_of(text: str) -> list[str]:
    if "\nCAVEATS\n" not in text:
        return []
    block = text.split("\nCAVEATS\n", 1)[1].split("\n", 1)[1]  # past the rule
    return [line.removeprefix("  - ") for line in block.splitlines() if line.startswith("  - ")]


def test_every_problem_collect_recorded_is_a_caveat_in_every_renderer(run_dir, tmp_path):
    write_collect(run_dir, [LEFT, UNREACHABLE, DIED])
    text = lineprofiler("report", run_dir)
    assert text.returncode == 0 and text.stderr == "", text.stderr
    assert [line for line in caveats_of(text.stdout) if line.startswith("Ray ")] == [LEFT, UNREACHABLE, DIED]

    as_json = lineprofiler("report", run_dir, "--json")
    document = json.loads(as_json.stdout)
    for caveats in (document["caveats"], document["run"]["caveats"]):
        assert [line for line in caveats if line.startswith("Ray ")] == [LEFT, UNREACHABLE, DIED]

    page = tmp_path / "report.html"
    assert lineprofiler("report", run_dir, "--html", page).returncode == 0
    html = page.read_text()
    for line in (LEFT, UNREACHABLE, DIED):
        assert line.replace("'", "&#x27;") in html

    # compare names the count on each side, and its JSON carries the lines
    compared = json.loads(lineprofiler("compare", run_dir, run_dir, "--json").stdout)
    assert [line for line in compared["b"]["caveats"] if line.startswith("Ray ")] == [LEFT, UNREACHABLE, DIED]


def test_a_run_without_a_collect_file_or_with_a_clean_collect_says_nothing_of_ray(run_dir):
    assert not any("Ray" in line or "ray" in line for line in caveats_of(lineprofiler("report", run_dir).stdout))
    write_collect(run_dir, [])
    result = lineprofiler("report", run_dir)
    assert result.returncode == 0 and result.stderr == ""
    assert not any("Ray" in line or "ray" in line for line in caveats_of(result.stdout))


def test_a_reason_on_several_lines_is_one_line_and_control_characters_are_escaped(run_dir):
    write_collect(run_dir, [NODE_DIED, "Ray node \x1b[2Jnode-5 left the cluster"])
    result = lineprofiler("report", run_dir)
    assert result.returncode == 0 and "\x1b" not in result.stdout
    assert [line for line in caveats_of(result.stdout) if line.startswith("Ray ")] == [
        "Ray actor Actor pid 4250 on node-3 died (The actor died because its node has died. Node Id: 3c1a9e2f "
        "the actor's node was terminated expectedly: received SIGTERM): its numbers stop at its last snapshot",
        "Ray node \\x1b[2Jnode-5 left the cluster",
    ]


def test_the_collect_of_another_run_does_not_concern_this_one(run_dir):
    # An earlier Ray job collected into this directory; the run reported is not the one it collected.
    write_collect(run_dir, [LEFT], run_id="ray-20261129T080000.000000-100-01000000")
    assert LEFT not in caveats_of(lineprofiler("report", run_dir).stdout)
    write_collect(run_dir, [LEFT], run_id=None)  # Ray named no run: it can only be this one's
    assert LEFT in caveats_of(lineprofiler("report", run_dir).stdout)


def test_past_ten_problems_one_line_counts_the_rest(run_dir):
    write_collect(run_dir, [f"Ray node node-{i} (10.0.1.{i}) left the cluster before any collect" for i in range(25)])
    ray_lines = [line for line in caveats_of(lineprofiler("report", run_dir).stdout) if "Ray" in line]
    assert ray_lines[:10] == [f"Ray node node-{i} (10.0.1.{i}) left the cluster before any collect" for i in range(10)]
    assert ray_lines[10:] == [
        f"... and 15 more problems of Ray's collect, listed in {run_dir / 'ray' / 'collect.json'}"
    ]


def _truncated(path: Path) -> None:
    path.write_text('{"kind": "lineprofiler-ray-collect", "schema_version": 1, "caveats": ["Ray no')


def _directory(path: Path) -> None:
    path.mkdir()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _document(**changes: object):
    def write(path: Path) -> None:
        document = raycollect.build_document(run_id=RUN_ID, job_id=None, collected_unix_ns=1, nodes=[],
                                             dead_actors=[], caveats=[LEFT])
        document.update(changes)
        path.write_text(json.dumps(document))

    return write


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_truncated, "corrupt or truncated JSON (JSONDecodeError)"),
        (_directory, "cannot read: not a regular file (a directory)"),
        (_fifo, "cannot read: not a regular file (a FIFO)"),
        (_link, "cannot read: a symbolic link (not followed)"),
        (_document(kind="something-else"), "not a Ray collect file (its kind is not 'lineprofiler-ray-collect')"),
        (_document(schema_version=2), "written by a newer lineprofiler (schema 2; this one reads 1)"),
        (_document(caveats="Ray node gone"), "caveats is not a list of lines"),
        (_document(caveats=[LEFT, 3]), "caveats is not a list of lines"),
        (_document(run_id=7), "run_id is not text"),
    ],
    ids=["truncated", "directory", "fifo", "link", "kind", "newer", "caveats-text", "caveats-number", "run-id"],
)
def test_a_collect_file_that_cannot_be_used_is_one_caveat_line_not_a_traceback(run_dir, damage, reason):
    folder = run_dir / "ray"
    folder.mkdir()
    damage(folder / "collect.json")
    result = lineprofiler("report", run_dir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    ray_lines = [line for line in caveats_of(result.stdout) if "ray" in line.lower()]
    assert ray_lines == [
        "Ray collect record not used, so what collect failed to bring here is unknown: "
        f"{run_dir / 'ray' / 'collect.json'}: {reason}"
    ]
    assert "Roles Actor x1" in result.stdout  # the report itself is all there


def test_the_collect_file_reads_back_what_collect_writes(tmp_path):
    assert raycollect.read_collect_file(tmp_path) is None
    assert raycollect.read_collect_file(tmp_path / "missing") is None
    write_collect(tmp_path, [LEFT, DIED])
    read = raycollect.read_collect_file(tmp_path)
    assert read is not None
    assert (read.run_id, read.collected_unix_ns, read.caveats) == (RUN_ID, 1_796_000_000_000_000_000, (LEFT, DIED))


def test_a_collect_that_brought_no_worker_files_is_named_in_the_error(tmp_path):
    # Every node unreachable: nothing arrived, and the report says what collect recorded.
    run_dir = tmp_path / "profile"
    run_dir.mkdir()
    write_collect(run_dir, [UNREACHABLE, LEFT])
    result = lineprofiler("report", run_dir)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "no worker files under" in line and f"Ray's collect recorded: {UNREACHABLE} (and 1 more)" in line
    # Without a collect file, or with an unusable one, the error is the plain one.
    (run_dir / raycollect.RAY_DIR / raycollect.COLLECT_FILE).write_text("{")
    plain = lineprofiler("report", run_dir)
    assert plain.returncode == 2 and "Ray" not in plain.stderr and len(plain.stderr.splitlines()) == 1
