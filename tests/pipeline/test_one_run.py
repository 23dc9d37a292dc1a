"""One run means one run: every process of one job lands in one attempt, with real processes.

Parents profiled and unprofiled start workers with multiprocessing (Process under spawn, fork
and forkserver; Pool; ProcessPoolExecutor) or subprocess, and each worker constructs its own
``Profiler(run_dir=..., role="actor")``. The job itself is ``one_run_job.py``. What must
hold: one run id (or, for subprocess children of an unprofiled parent, one attempt merged by
time), every worker's file counted, a raising worker's data in the totals and a SIGKILLed
worker named under CAVEATS; a sequential rerun is still a superseded attempt and two
concurrent jobs with their own explicit run ids stay apart.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lp_installed import START_METHODS
from lp_pipeline_helpers import clean_env, documents, run

from helpers.cli import run_cli
from lineprofiler.report.read.merge import load_run

JOB = Path(__file__).resolve().with_name("one_run_job.py")
STEPS = 5  # one_run_job.STEPS


def start_job(run_dir: Path, *, kind="process", method="spawn", workers=4, profiled=False, faults=False,
              barrier: Path | None = None, peers=1, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, str(JOB), str(run_dir), "--kind", kind, "--method", method, "--workers", str(workers)]
    command += ["--profiled"] * profiled + ["--faults"] * faults
    if barrier is not None:
        command += ["--barrier", str(barrier), "--peers", str(peers)]
    return subprocess.Popen(command, env=env or clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(proc: subprocess.Popen[str]) -> list[int]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "multi-threaded" not in err
    return [int(code) for code in out.strip().split(",")]


def job(run_dir: Path, **options) -> list[int]:
    return finish(start_job(run_dir, **options))


def report(run_dir: Path, *args: str) -> str:
    result = run_cli("report", run_dir, *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def caveats(text: str) -> list[str]:
    return text.split("\nCAVEATS\n", 1)[1].splitlines()[1:] if "\nCAVEATS\n" in text else []


def check_one_run(run_dir: Path, *, workers: int, profiled: bool, faults: bool, sources: set[str]) -> str:
    """Every worker file in one run id and one merged attempt; the report says so."""
    docs = documents(run_dir)
    actors = [d for d in docs if d["identity"]["role"] == "actor"]
    assert len(actors) == workers
    assert len(docs) == workers + profiled
    assert len({d["identity"]["run_id"] for d in docs}) == 1, sorted(d["identity"]["run_id"] for d in docs)
    assert {d["identity"]["run_id_source"] for d in actors} <= sources, [d["identity"] for d in actors]

    run_ = load_run(run_dir)
    assert len(run_.workers) == workers + profiled
    assert not run_.superseded and not run_.concurrent and not run_.merged
    # Each worker counted (index + 1) per step; the raising and the killed one's too.
    assert run_.roles["actor"].counters[("iteration", "items")] == STEPS * sum(i + 1 for i in range(workers))

    text = report(run_dir)
    roles = f"actor x{workers}" + (", learner x1" if profiled else "")
    assert re.search(rf"   Processes {workers + profiled}   Roles {roles}$", text.splitlines()[0]), text
    for word in ("Superseded", "Concurrent", "Merged by time", "--attempt"):
        assert word not in text
    if faults and workers >= 2:
        (killed,) = [d for d in actors if d["times"]["status"] == "running"]
        pid = killed["identity"]["pid"]
        assert any(f"actor pid {pid} on " in line and "never wrote a final flush" in line for line in caveats(text))
    return text


def process_case(tmp_path: Path, method: str, workers: int, profiled: bool) -> None:
    run_dir = tmp_path / "profile"
    codes = job(run_dir, kind="process", method=method, workers=workers, profiled=profiled, faults=True)
    # the last worker raised; with two or more, the one before it killed itself after a flush
    assert codes == ([0] * (workers - 2) + [-9, 1] if workers >= 2 else [1])
    sources = {"env", "parent"} if profiled else {"parent-process"}
    check_one_run(run_dir, workers=workers, profiled=profiled, faults=True, sources=sources)


@pytest.mark.parametrize("profiled", [False, True], ids=["unprofiled-parent", "profiled-parent"])
@pytest.mark.parametrize("method", START_METHODS)
@pytest.mark.parametrize("workers", [1, 4])
def test_process_children_are_one_run(tmp_path, method, workers, profiled):
    process_case(tmp_path, method, workers, profiled)


@pytest.mark.slow
@pytest.mark.parametrize("profiled", [False, True], ids=["unprofiled-parent", "profiled-parent"])
@pytest.mark.parametrize("method", START_METHODS)
def test_sixteen_process_children_are_one_run(tmp_path, method, profiled):
    process_case(tmp_path, method, 16, profiled)


@pytest.mark.parametrize("profiled", [False, True], ids=["unprofiled-parent", "profiled-parent"])
@pytest.mark.parametrize("kind, method", [("pool", "fork"), ("pool", "forkserver"), ("executor", "spawn"),
                                          ("executor", "fork")])
def test_pool_and_executor_workers_are_one_run(tmp_path, kind, method, profiled):
    run_dir = tmp_path / "profile"
    workers = 3
    task_pids = job(run_dir, kind=kind, method=method, workers=workers, profiled=profiled)
    docs = documents(run_dir)
    assert len({d["identity"]["run_id"] for d in docs}) == 1
    actors = [d for d in docs if d["identity"]["role"] == "actor"]
    # Every worker the pool started has a file (an executor may start fewer than its maximum).
    assert set(task_pids) <= {d["identity"]["pid"] for d in actors} and 1 <= len(actors) <= workers
    assert {d["times"]["status"] for d in actors} == {"exited"}
    assert {d["identity"]["run_id_source"] for d in actors} <= ({"env", "parent"} if profiled else {"parent-process"})
    run_ = load_run(run_dir)
    assert len(run_.workers) == len(actors) + profiled and not run_.superseded and not run_.merged
    # 2 x workers tasks, task i counting (i + 1) per step, wherever it ran
    assert run_.roles["actor"].counters[("iteration", "items")] == STEPS * sum(i + 1 for i in range(2 * workers))


def test_subprocess_children_of_a_profiled_parent_join_through_the_environment(tmp_path):
    run_dir = tmp_path / "profile"
    assert job(run_dir, kind="subprocess", workers=3, profiled=True, barrier=tmp_path / "ready") == [0, 0, 0]
    docs = documents(run_dir)
    (learner,) = [d for d in docs if d["identity"]["role"] == "learner"]
    assert learner["identity"]["run_id_source"] == "generated"
    actors = [d for d in docs if d["identity"]["role"] == "actor"]
    assert {(d["identity"]["run_id"], d["identity"]["run_id_source"]) for d in actors} == {
        (learner["identity"]["run_id"], "env")
    }
    check_one_run(run_dir, workers=3, profiled=True, faults=False, sources={"env"})


def test_subprocess_children_of_an_unprofiled_parent_are_merged_by_time(tmp_path):
    run_dir = tmp_path / "profile"
    # The barrier keeps all three alive at once: each one's lifetime overlaps the others'.
    assert job(run_dir, kind="subprocess", workers=3, barrier=tmp_path / "ready") == [0, 0, 0]
    docs = documents(run_dir)
    assert len({d["identity"]["run_id"] for d in docs}) == 3  # nothing tells them they are one job
    assert {d["identity"]["run_id_source"] for d in docs} == {"generated"}
    run_ = load_run(run_dir)
    assert len(run_.workers) == 3 and len(run_.merged) == 2 and not run_.superseded
    assert run_.roles["actor"].counters[("iteration", "items")] == STEPS * (1 + 2 + 3)
    text = report(run_dir)
    assert "   Processes 3   Roles actor x3" in text.splitlines()[0]
    (line,) = [line for line in text.splitlines() if line.startswith("Merged by time")]
    assert "2 process(es) under 2 other generated run id(s)" in line and "LINEPROFILER_RUN_ID" in line
    assert "Superseded" not in text


def test_a_sequential_rerun_is_still_a_superseded_attempt(tmp_path):
    run_dir = tmp_path / "profile"
    job(run_dir, kind="process", method="fork", workers=2)
    first = {d["identity"]["run_id"] for d in documents(run_dir)}
    job(run_dir, kind="process", method="fork", workers=2)
    (second,) = {d["identity"]["run_id"] for d in documents(run_dir)} - first
    (first_id,) = first
    assert second.startswith("mp") and first_id.startswith("mp")  # each rerun's parent, a new id

    text = report(run_dir)
    lines = text.splitlines()
    assert "   Processes 2   Roles actor x2" in lines[0] and f"Run {second}" in lines[1]
    (superseded,) = [line for line in lines if line.startswith("Superseded attempt")]
    assert superseded.startswith(f"Superseded attempt {first_id} (not merged): 2 worker file(s), actor x2, started ")
    assert ", ran " in superseded
    assert "Merged by time" not in text

    # Any attempt can be shown; the header then names the newest.
    older = report(run_dir, "--attempt", first_id).splitlines()
    assert "   Processes 2   Roles actor x2" in older[0] and f"Run {first_id}" in older[1]
    assert f"Showing the superseded attempt {first_id} (--attempt); the newest is {second}" in older
    assert any(line.startswith(f"Newest attempt {second} (shown by default; not merged): 2 worker file(s)")
               for line in older)

    bad = run_cli("report", run_dir, "--attempt", "nope")
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    assert "no attempt 'nope'" in bad.stderr and second in bad.stderr and "Traceback" not in bad.stderr

    compared = run_cli("compare", run_dir, run_dir, "--attempt-a", first_id, "--json")
    assert compared.returncode == 0, compared.stderr
    document = json.loads(compared.stdout)
    assert (document["a"]["run_id"], document["b"]["run_id"]) == (first_id, second)


def test_two_concurrent_jobs_with_explicit_run_ids_stay_apart(tmp_path):
    run_dir = tmp_path / "profile"
    ready = tmp_path / "ready"
    jobs = [
        start_job(run_dir, kind="process", method="fork", workers=2, profiled=True, barrier=ready, peers=2,
                  env=clean_env(LINEPROFILER_RUN_ID=name))
        for name in ("job-a", "job-b")
    ]
    for proc in jobs:
        assert finish(proc) == [0, 0]
    docs = documents(run_dir)
    assert sorted(d["identity"]["run_id"] for d in docs) == ["job-a"] * 3 + ["job-b"] * 3
    assert {d["identity"]["run_id_source"] for d in docs} == {"env"}

    text = report(run_dir)
    lines = text.splitlines()
    assert "   Processes 3   Roles actor x2, learner x1" in lines[0]
    shown = re.search(r"Run (job-[ab])", lines[1]).group(1)
    other = "job-b" if shown == "job-a" else "job-a"
    (line,) = [line for line in lines if line.startswith("Concurrent run")]
    assert line.startswith(f"Concurrent run {other} (another job overlapping this one in time; not merged): "
                           f"3 worker file(s), actor x2, learner x1, started ")
    assert "Superseded" not in text and "Merged by time" not in text

    other_text = report(run_dir, "--attempt", other).splitlines()
    assert f"Run {other}" in other_text[1] and "   Processes 3   " in other_text[0]
    assert any(line.startswith(f"Newest attempt {shown} (overlapping this one in time; not merged)")
               for line in other_text)


def test_a_rerun_in_a_container_with_the_same_parent_pid_is_a_new_run(tmp_path):
    # A parent's worker file from an earlier run whose parent had the same pid (pid namespaces
    # make that common) must not be joined: it was written before this parent started.
    run_dir = tmp_path / "profile"
    script = tmp_path / "stale_parent.py"
    script.write_text(
        "import json, multiprocessing as mp, os, sys\n"
        "from lineprofiler.runfiles import workerfile\n"
        "def work(run_dir):\n"
        "    from lineprofiler.accounting import Profiler\n"
        "    Profiler(run_dir=run_dir, role='actor').close()\n"
        "if __name__ == '__main__':\n"
        "    run_dir, stale = sys.argv[1], json.loads(sys.argv[2])\n"
        "    stale['identity']['pid'] = os.getpid()\n"
        "    folder = workerfile.worker_dir(run_dir, stale['identity']['host'])\n"
        "    folder.mkdir(parents=True, exist_ok=True)\n"
        "    name = workerfile.worker_file_name('oldrun', os.getpid(), stale['identity']['uuid'])\n"
        "    workerfile.write_worker_file(folder / name, stale)\n"
        "    p = mp.get_context('forkserver').Process(target=work, args=(run_dir,))\n"
        "    p.start(); p.join(); sys.exit(p.exitcode)\n"
    )
    # A complete worker file of a process that started an hour before this one.
    job(tmp_path / "template", kind="process", method="fork", workers=1)
    (template,) = documents(tmp_path / "template")
    template["identity"].update(run_id="oldrun", run_id_source="env")
    hour = 3600 * 10**9
    for key in ("start_unix_ns", "last_flush_unix_ns", "end_unix_ns"):
        template["times"][key] -= hour
    result = run([sys.executable, script, run_dir, json.dumps(template)])
    assert result.returncode == 0, result.stderr
    docs = documents(run_dir)
    (stale,) = [d for d in docs if d["identity"]["run_id"] == "oldrun"]
    (actor,) = [d for d in docs if d["identity"]["run_id"] != "oldrun"]
    assert actor["identity"]["run_id_source"] == "parent-process"
    assert actor["identity"]["run_id"] == f"mp{stale['identity']['pid']}-" + actor["identity"]["run_id"][-6:]


def test_the_derived_id_names_the_parent_and_is_the_same_for_every_child(tmp_path):
    # Two children read the parent's /proc entries independently and agree; the id carries
    # the parent's pid, not the forkserver's.
    run_dir = tmp_path / "profile"
    job(run_dir, kind="process", method="forkserver", workers=2)
    docs = documents(run_dir)
    (run_id,) = {d["identity"]["run_id"] for d in docs}
    assert re.fullmatch(r"mp\d+-[0-9a-f]{6}", run_id)
    parent = int(run_id[2:].split("-")[0])
    assert all(d["identity"]["parent_pid"] != parent for d in docs)  # their OS parent is the forkserver
    assert parent != os.getpid()
