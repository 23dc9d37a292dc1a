"""Slurm, without Slurm: the environment srun gives its tasks, real signals in the order Slurm
sends them, requeues, and two hosts (by LINEPROFILER_HOST, and by real UTS namespaces).

Each rank is tests/pipeline/worker.py, which logs every completed step to a progress file
with one unbuffered write: the ground truth a worker file is held against. What a signal
may cost is asserted exactly (a flush on SIGUSR1 or SIGTERM loses nothing), and a SIGKILL
is allowed to lose exactly the steps completed after the last snapshot the file holds.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import lp_pipeline_helpers as h
import pytest

JOB = "4242"


def slurm_env(rank: int, ntasks: int, tasks_per_node: int, *, host: str | None = None, **extra: str) -> dict[str, str]:
    """What srun sets for task ``rank`` of a one-step job (plus our host name, if given)."""
    env = dict(
        SLURM_JOB_ID=JOB, SLURM_JOBID=JOB, SLURM_STEP_ID="0", SLURM_PROCID=str(rank),
        SLURM_LOCALID=str(rank % tasks_per_node), SLURM_NODEID=str(rank // tasks_per_node),
        SLURM_NTASKS=str(ntasks), SLURM_JOB_NAME="train",
    )
    if host is not None:
        env["LINEPROFILER_HOST"] = host
    env.update(extra)
    return h.clean_env(**env)


def start(run_dir: Path, env: dict[str, str], *args: object, prefix: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    command = [*prefix, sys.executable, str(h.WORKER), str(run_dir), *map(str, args)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=h.TIMEOUT)
    finally:
        proc.kill()
    return proc.returncode, out, err


def wait_ready(proc: subprocess.Popen[str]) -> None:
    line = proc.stdout.readline() if proc.stdout else ""
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"worker not ready: {line!r} {proc.communicate()}")


def progress(path: Path) -> tuple[list[tuple[int, int]], list[int]]:
    """``([(completed, unix_ns), ...], [completed at each SIGTERM])`` from a progress file."""
    steps, sigterms = [], []
    for line in path.read_text().splitlines():
        first, second = line.split()
        if first == "sigterm":
            sigterms.append(int(second))
        else:
            steps.append((int(first), int(second)))
    return steps, sigterms


def wait_for_steps(path: Path, n: int) -> None:
    deadline = time.monotonic() + h.TIMEOUT
    while time.monotonic() < deadline:
        if path.exists() and len(progress(path)[0]) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} steps in {h.TIMEOUT} s")


def only_document(run_dir: Path) -> dict:
    (doc,) = h.documents(run_dir)
    return doc


def recorded_steps(doc: dict) -> int:
    entries = h.by_path(doc).get("iteration", {}).get("entries", 0)
    assert h.counter(doc, "iteration", "steps") == entries
    return entries


# -- two nodes, one job ------------------------------------------------------------------------


def test_a_job_on_two_nodes_is_one_run_that_names_both_nodes_and_the_job(run_dir):
    procs = []
    for rank in range(4):
        host = "node07" if rank < 2 else "node08"
        step_s = 0.04 if rank == 3 else 0.01  # rank 3 is the straggler
        procs.append(start(run_dir, slurm_env(rank, 4, 2, host=host), "--steps", 10, "--step-s", step_s))
    for proc in procs:
        code, out, err = finish(proc)
        assert code == 0, err

    # one folder per node, two ranks in each
    assert sorted(p.name for p in (run_dir / "workers").iterdir()) == ["node07", "node08"]
    assert [len(list((run_dir / "workers" / n).glob("w_*.json"))) for n in ("node07", "node08")] == [2, 2]
    docs = sorted(h.documents(run_dir), key=lambda d: d["identity"]["rank"])
    ids = [d["identity"] for d in docs]
    assert [(i["rank"], i["local_rank"], i["node_rank"], i["host"]) for i in ids] == [
        (0, 0, 0, "node07"), (1, 1, 0, "node07"), (2, 0, 1, "node08"), (3, 1, 1, "node08"),
    ]
    assert {(i["run_id"], i["job_id"], i["launcher"], i["world_size"]) for i in ids} == {
        ("slurm-4242.0", JOB, "slurm", 4)
    }
    assert [recorded_steps(d) for d in docs] == [10, 10, 10, 10]

    text = h.report(run_dir)
    assert "Hosts node07, node08 (2 nodes)   Run slurm-4242.0" in text
    assert "Ranks 0-3   Job 4242 (slurm)" in text
    assert re.search(r"^TRAINER  \(4 processes, imbalance \d+\.\d\d\)$", text, re.M), text
    # the straggler slept 4x as long per step: it is the one named
    assert re.search(r"straggler: trainer pid \d+ on node08 \(rank 3\)", text), text
    assert "CAVEATS" not in text, text


# -- preemption --------------------------------------------------------------------------------


@pytest.mark.parametrize("signame", ["SIGUSR1", "SIGTERM"])
def test_a_preemption_signal_flushes_the_last_interval_before_exit(run_dir, tmp_path, signame):
    # sbatch --signal=USR1@120, or Slurm's SIGTERM at the time limit. The periodic snapshot is
    # an hour away, so whatever the file holds past its start, the signal's flush wrote.
    log = tmp_path / "progress"
    proc = start(run_dir, slurm_env(0, 1, 1), "--steps", 0, "--step-s", 0.005, "--snapshot-s", 3600,
                 "--progress", log)
    wait_ready(proc)
    wait_for_steps(log, 20)
    proc.send_signal(getattr(signal, signame))
    code, _, err = finish(proc)
    assert code == -getattr(signal, signame), err  # then it ends as the signal's default action would

    doc = only_document(run_dir)
    assert doc["times"]["status"] == "signalled" and doc["times"]["signal"] == signame
    assert doc["snapshot"]["writes"] == 2  # the start file, then the signal's flush: nothing periodic
    done = len(progress(log)[0])
    # Nothing lost. The signal can land between a phase's exit and the progress write, so
    # the file may hold one step the log does not yet.
    assert done <= recorded_steps(doc) <= done + 1, (done, recorded_steps(doc))

    text = h.report(run_dir)
    assert f"1 worker(s) flushed on a signal ({signame})" in text


def check_loss_is_what_followed_the_last_snapshot(doc: dict, steps: list[tuple[int, int]]) -> int:
    """What the seed allows a SIGKILL to cost: the steps completed after the last snapshot the
    file holds, and nothing before it. Returns the steps lost."""
    recorded = recorded_steps(doc)
    last_flush = doc["times"]["last_flush_unix_ns"]
    before = sum(1 for _, at in steps if at <= last_flush)
    # A step's phase closes just before its progress line: one step can be in the file and not
    # yet logged, and the snapshot's clock is read just after the tree is copied, so one step
    # can be logged before that clock reading and not be in the copy.
    assert before - 1 <= recorded <= before + 1, (recorded, before, len(steps))
    lost = len(steps) - recorded
    assert lost >= -1
    return lost


def test_sigterm_kept_going_then_sigkill_after_the_grace_period_loses_only_the_last_interval(run_dir, tmp_path):
    # The job catches SIGTERM and goes on (a handler that only logs it); Slurm SIGKILLs it
    # KillWait later. The profiler flushed on SIGTERM before calling the job's handler, and
    # its periodic snapshots went on: only the steps after the last of them may be lost.
    log = tmp_path / "progress"
    proc = start(run_dir, slurm_env(0, 1, 1), "--steps", 0, "--step-s", 0.02, "--snapshot-s", 0.5,
                 "--progress", log, "--on-sigterm", "keep-going")
    wait_ready(proc)
    wait_for_steps(log, 10)
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + h.TIMEOUT
    while not progress(log)[1] and time.monotonic() < deadline:
        time.sleep(0.02)
    (at_sigterm,) = progress(log)[1]
    # The grace period: more steps, and a periodic snapshot after the SIGTERM's flush (waited
    # for, not slept: a loaded machine may take longer to write one).
    writes = only_document(run_dir)["snapshot"]["writes"]
    deadline = time.monotonic() + h.TIMEOUT
    while only_document(run_dir)["snapshot"]["writes"] <= writes and time.monotonic() < deadline:
        time.sleep(0.05)
    wait_for_steps(log, len(progress(log)[0]) + 5)
    proc.send_signal(signal.SIGKILL)
    code, _, _ = finish(proc)
    assert code == -signal.SIGKILL

    doc = only_document(run_dir)
    steps, _ = progress(log)
    assert doc["times"]["signal"] == "SIGTERM"  # the flush on SIGTERM happened, and is recorded
    assert recorded_steps(doc) >= at_sigterm  # everything up to SIGTERM survived the SIGKILL
    assert len(steps) > at_sigterm  # it really did go on after SIGTERM
    check_loss_is_what_followed_the_last_snapshot(doc, steps)


def test_sigkill_without_warning_loses_only_what_followed_the_last_periodic_snapshot(run_dir, tmp_path):
    log = tmp_path / "progress"
    proc = start(run_dir, slurm_env(0, 1, 1), "--steps", 0, "--step-s", 0.02, "--snapshot-s", 0.5,
                 "--progress", log)
    wait_ready(proc)
    deadline = time.monotonic() + h.TIMEOUT
    while time.monotonic() < deadline:  # until a periodic snapshot has written data
        docs = h.documents(run_dir)
        if docs and docs[0]["times"]["status"] == "running" and recorded_steps(docs[0]) > 0:
            break
        time.sleep(0.05)
    wait_for_steps(log, len(progress(log)[0]) + 5)
    proc.send_signal(signal.SIGKILL)
    code, _, _ = finish(proc)
    assert code == -signal.SIGKILL

    doc = only_document(run_dir)
    assert doc["times"]["status"] == "running" and doc["times"]["end_unix_ns"] is None
    assert recorded_steps(doc) > 0
    check_loss_is_what_followed_the_last_snapshot(doc, progress(log)[0])
    text = h.report(run_dir)
    # The worker file stops at its last snapshot; the live file kept the rest, and the report uses it.
    assert "numbers from its live file" in text


# -- requeue -----------------------------------------------------------------------------------


def test_a_requeued_job_reports_the_newest_attempt_and_names_the_superseded_one(run_dir, tmp_path):
    # Attempt 0: two ranks, preempted by SIGUSR1 part-way. Slurm requeues the job: the same
    # job id, SLURM_RESTART_COUNT=1, the same run directory. Attempt 1 runs to the end.
    first = []
    for rank in range(2):
        log = tmp_path / f"progress0_{rank}"
        env = slurm_env(rank, 2, 1, host=f"node0{rank}", SLURM_RESTART_COUNT="0")
        first.append((start(run_dir, env, "--steps", 0, "--step-s", 0.005, "--progress", log), log))
    for proc, log in first:
        wait_ready(proc)
        wait_for_steps(log, 5)
    for proc, _ in first:
        proc.send_signal(signal.SIGUSR1)
    first_steps = 0
    for proc, log in first:
        code, _, err = finish(proc)
        assert code == -signal.SIGUSR1, err
        first_steps += len(progress(log)[0])

    second = [
        start(run_dir, slurm_env(rank, 2, 1, host=f"node0{rank}", SLURM_RESTART_COUNT="1"), "--steps", 7)
        for rank in range(2)
    ]
    for proc in second:
        code, _, err = finish(proc)
        assert code == 0, err

    docs = h.documents(run_dir)
    assert sorted((d["identity"]["run_id"], d["identity"]["attempt"]) for d in docs) == [
        ("slurm-4242.0", 0), ("slurm-4242.0", 0), ("slurm-4242.0-r1", 1000), ("slurm-4242.0-r1", 1000),
    ]
    text = h.report(run_dir)
    assert "Run slurm-4242.0-r1 #1000" in text
    assert re.search(
        r"^Superseded attempt slurm-4242\.0 \(not merged\): 2 worker file\(s\), trainer x2, started ", text, re.M
    ), text
    assert "Processes 2   Roles trainer x2" in text
    # totals are the newest attempt's alone: 2 x 7 steps, not that plus the first attempt's
    assert re.search(r"^ITERATIONS  \(14 entries\)", text, re.M), text
    assert re.search(r"^    \+ steps +14 ", text, re.M), text
    assert first_steps >= 10
    assert "flushed on a signal" not in text  # that was the superseded attempt


# -- two hosts by UTS namespace ----------------------------------------------------------------

SET_HOSTNAME_AND_EXEC = "import os, socket, sys; socket.sethostname(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])"


def test_two_uts_namespaces_are_two_hosts_of_one_run(run_dir):
    probe = subprocess.run(
        ["unshare", "--uts", sys.executable, "-c", "import socket; socket.sethostname('lp-probe')"],
        capture_output=True, text=True,
    ) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        why = "unshare not found" if probe is None else probe.stderr.strip().splitlines()[-1:]
        pytest.skip(f"cannot make a UTS namespace here (needs CAP_SYS_ADMIN): {why}")

    procs = []
    for rank, host in enumerate(("lp-node-a", "lp-node-b")):
        # no LINEPROFILER_HOST: the host name is the namespace's, as on two real machines
        prefix = ("unshare", "--uts", sys.executable, "-c", SET_HOSTNAME_AND_EXEC, host)
        procs.append(start(run_dir, slurm_env(rank, 2, 1), "--steps", 5, prefix=prefix))
    for proc in procs:
        code, _, err = finish(proc)
        assert code == 0, err

    assert sorted(p.name for p in (run_dir / "workers").iterdir()) == ["lp-node-a", "lp-node-b"]
    docs = sorted(h.documents(run_dir), key=lambda d: d["identity"]["rank"])
    assert [(d["identity"]["host"], d["identity"]["rank"]) for d in docs] == [("lp-node-a", 0), ("lp-node-b", 1)]
    text = h.report(run_dir)
    assert "Hosts lp-node-a, lp-node-b (2 nodes)   Run slurm-4242.0" in text
    assert "Processes 2   Roles trainer x2" in text
    assert re.search(r"^ITERATIONS  \(10 entries\)", text, re.M), text
