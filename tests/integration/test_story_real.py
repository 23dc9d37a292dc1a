"""The story of a real traced run: processes, queues and links, killed workers, another clock.

Everything here is real: spawn-started actors feeding a learner through a multiprocessing
queue, each recording with ``Profiler(trace=True)`` and ``signal``/``wait_on``; the report is
``lineprofiler trace`` as a user runs it. One actor does three times the work of the others per
item, so the learner, which needs every item, waits on it last: the critical path and the first
finding must name that actor's pid. Another actor runs under a time namespace whose
CLOCK_MONOTONIC is 5,000 s ahead, as a process on another host would be.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers.cli import run_cli

pytestmark = pytest.mark.slow

ITEMS = 16
WORKLOAD = textwrap.dedent(
    """
    import json, os, sys, time
    import multiprocessing as mp
    from lineprofiler.accounting import Profiler


    def busy(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass


    def actor(run_dir, index, items, work_s, queue, barrier):
        profiler = Profiler(run_dir, role="actor", trace=True)
        barrier.wait()  # all start producing together: a late spawn must not make a fast actor last
        for seq in range(items):
            with profiler.phase("produce"):
                busy(work_s)
            profiler.signal("items", f"{index}:{seq}")  # before the put: the learner may take it at once
            queue.put((index, seq, os.getpid()))
        profiler.close()


    if __name__ == "__main__":
        run_dir, items = sys.argv[1], int(sys.argv[2])
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        profiler = Profiler(run_dir, role="learner", trace=True)
        # The third actor: 7.5 times the others' work per item (480 ms against 64 ms in all), so a
        # fast actor starved of CPU on a loaded machine does not finish after it.
        work = [0.004, 0.004, 0.03]
        barrier = ctx.Barrier(len(work) + 1)
        actors = [ctx.Process(target=actor, args=(run_dir, i, items, w, queue, barrier)) for i, w in enumerate(work)]
        for process in actors:
            process.start()
        barrier.wait()
        pids = {}
        for _ in range(items * len(actors)):
            with profiler.phase("wait_item"):
                index, seq, pid = queue.get()
            profiler.wait_on("items", f"{index}:{seq}")
            pids[index] = pid
            with profiler.phase("train"):
                busy(0.001)
        for process in actors:
            process.join()
        profiler.close()
        print(json.dumps({"slow_pid": pids[2], "fast_pids": [pids[0], pids[1]], "learner_pid": os.getpid()}))
    """
)


def _story(run_dir: Path) -> dict:
    done = run_cli("trace", run_dir, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["story"]


def test_the_slow_actor_sets_the_runs_length(tmp_path):
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    done = subprocess.run(
        [sys.executable, str(script), str(run_dir), str(ITEMS)], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    pids = json.loads(done.stdout)
    story = _story(run_dir)

    processes = story["processes"]
    pid_of = {p["index"]: p["pid"] for p in processes}
    assert sorted(p["pid"] for p in processes) == sorted([*pids["fast_pids"], pids["slow_pid"], pids["learner_pid"]])
    # Every span the processes recorded is there: a ring of 200,000 holds them all.
    assert story["spans_kept"] == story["spans_recorded"] == ITEMS * 3 + ITEMS * 3 * 2

    path = story["path"]
    on_path = {pid_of[s["process"]] for s in path["segments"]}
    assert pids["slow_pid"] in on_path and pids["learner_pid"] in on_path
    assert path["jumps"] >= 1  # the learner's last wait, followed to the slow actor's signal
    slow_share = sum(s["duration_ns"] for s in path["shares"] if pid_of[s["process"]] == pids["slow_pid"])
    fast_share = sum(s["duration_ns"] for s in path["shares"] if pid_of[s["process"]] in pids["fast_pids"])
    assert slow_share > fast_share

    # A blocked phase's time on the path is what the path's own lines give that phase.
    shares: dict[tuple[int, str], int] = {}
    for share in path["shares"]:
        if share["phase"] is not None:
            shares[share["process"], share["phase"]] = share["duration_ns"]
    for finding in story["findings"]:
        if finding["kind"] == "blocked_unknown":
            phase, process = finding["figures"]["phase"], finding["process"]
            expected = sum(
                ns
                for (p, name), ns in shares.items()
                if p == process and (name == phase or name.startswith(phase + "/"))
            )
            assert finding["figures"]["on_path_ns"] == expected, finding
    # The learner's wait_on came right after its get's own phase: that phase's wait is known.
    assert not any(f["kind"] == "blocked_unknown" and "wait_item" in f["text"] for f in story["findings"])
    first = story["findings"][0]
    assert pid_of[first["process"]] == pids["slow_pid"], first
    assert str(pids["slow_pid"]) in first["text"]
    # Matched links: one per item, none drawn backwards on one host's clock.
    assert story["arrows"] and not any(a["backwards"] for a in story["arrows"])

    # The text says the same, and --fail-over gates on it after printing.
    text = run_cli("trace", run_dir)
    assert text.returncode == 0 and str(pids["slow_pid"]) in text.stdout
    gated = run_cli("report", run_dir, "--fail-over", "1")
    assert gated.returncode == 3, gated.stderr
    assert gated.stdout and str(pids["slow_pid"]) in gated.stderr


KILLED = textwrap.dedent(
    """
    import sys, time
    from lineprofiler.accounting import Profiler

    profiler = Profiler(sys.argv[1], role="doomed", trace=True, snapshot_interval_s=None)
    for step in range(5):
        with profiler.phase("step"):
            time.sleep(0.001)
    with profiler.phase("stuck"):
        print("ready", flush=True)
        time.sleep(600)
    """
)


def test_a_killed_workers_last_spans_and_open_phase_are_in_the_story(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    run_dir = tmp_path / "run"
    child = subprocess.Popen([sys.executable, str(script), str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    story = _story(run_dir)
    (process,) = story["processes"]
    assert process["pid"] == child.pid and process["killed"] is True
    assert process["spans_kept"] == 5 and process["open_entries"] == 1
    lane = story["lanes"][0]
    assert [s["phase"] for s in lane["spans"] if not s["open"]] == ["step"] * 5
    assert [s["phase"] for s in lane["spans"] if s["open"]] == ["stuck"]


REMOTE_ACTOR = textwrap.dedent(
    """
    import os, sys, time
    from multiprocessing.connection import Client
    from lineprofiler.accounting import Profiler

    run_dir, address, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
    profiler = Profiler(run_dir, role="actor", trace=True)
    with Client(address, authkey=b"story") as connection:
        for seq in range(items):
            with profiler.phase("produce"):
                time.sleep(0.005)
            profiler.signal("items", seq)
            connection.send(seq)
    profiler.close()
    """
)

LEARNER = textwrap.dedent(
    """
    import sys, time
    from multiprocessing.connection import Listener
    from lineprofiler.accounting import Profiler

    run_dir, address, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
    profiler = Profiler(run_dir, role="learner", trace=True)
    with Listener(address, authkey=b"story") as listener:
        print("listening", flush=True)
        with listener.accept() as connection:
            for _ in range(items):
                with profiler.phase("wait_item"):
                    seq = connection.recv()
                profiler.wait_on("items", seq)
                with profiler.phase("train"):
                    time.sleep(0.001)
    profiler.close()
    """
)


#: A process whose CLOCK_MONOTONIC is 5,000 s ahead of ours, as another host's would be.
ANOTHER_CLOCK = ["unshare", "--time", "--fork", "--monotonic", "5000"]


def _time_namespaces() -> str | None:
    """Why another clock cannot be had here, or None."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(
        [*ANOTHER_CLOCK, sys.executable, "-c", "import time; print(time.monotonic())"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        return f"no time namespace here (unshare --time: {probe.stderr.strip() or probe.returncode})"
    if float(probe.stdout) - time.monotonic() < 4000:
        return "unshare --time did not move CLOCK_MONOTONIC"
    return None


def test_another_hosts_clock_is_offset_within_its_stated_uncertainty(tmp_path):
    reason = _time_namespaces()
    if reason is not None:
        pytest.skip(reason)
    run_dir = tmp_path / "run"
    (tmp_path / "actor.py").write_text(REMOTE_ACTOR)
    (tmp_path / "learner.py").write_text(LEARNER)
    address = str(tmp_path / "items.sock")
    items = 20
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    learner = subprocess.Popen(
        [sys.executable, str(tmp_path / "learner.py"), str(run_dir), address, str(items)],
        stdout=subprocess.PIPE,
        text=True,
        env={**env, "LINEPROFILER_HOST": "node-a", "LINEPROFILER_RUN_ID": "two-hosts"},
    )
    try:
        assert learner.stdout is not None and learner.stdout.readline().strip() == "listening"
        actor = subprocess.run(
            [
                *ANOTHER_CLOCK,
                sys.executable,
                str(tmp_path / "actor.py"),
                str(run_dir),
                address,
                str(items),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**env, "LINEPROFILER_HOST": "node-b", "LINEPROFILER_RUN_ID": "two-hosts"},
        )
        assert actor.returncode == 0, actor.stderr
    finally:
        assert learner.wait(timeout=300) == 0
    story = _story(run_dir)
    hosts = {h["host"]: h for h in story["hosts"]}
    assert set(hosts) == {"node-a", "node-b"}
    reference, other = (
        (hosts["node-a"], hosts["node-b"]) if hosts["node-a"]["offset_ns"] == 0 else (hosts["node-b"], hosts["node-a"])
    )
    true_offset = -5000 * 10**9 if other["host"] == "node-b" else 5000 * 10**9
    assert reference["source"] == "reference"
    # Both hosts' wall clocks are this machine's, so the clock pairs put the offset within a
    # microsecond, and the twenty links (each signalled before its send) agree with them.
    assert other["links"] == 20 and other["disagreement"] is None, other
    low = other["low_ns"] if other["low_ns"] is not None else true_offset
    high = other["high_ns"] if other["high_ns"] is not None else true_offset
    assert low - 1_000 <= true_offset <= high + 1_000
    assert abs(other["offset_ns"] - true_offset) < 10_000
    assert not any(a["backwards"] for a in story["arrows"])
