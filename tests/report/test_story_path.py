"""The story of built runs: the critical path, the findings, the clocks of two hosts, killed
workers and dropped spans, from documents written as the recorder writes them."""

from __future__ import annotations

import json

from lp_report_builders import MS, US

from lineprofiler.cli import main
from lineprofiler.report.compute.build import build_report
from lineprofiler.report.compute.story.assemble import story
from lineprofiler.report.read.merge import load_run

from .test_story_docs import Host, TracedWorker, write_all

NODE = Host("node07")


def slow_actor_run(run_dir, steps=20, wake=50 * US):
    """Two actors feed one learner through ``batches``: each step the learner needs one batch of
    each; the slow actor takes 100 ms a batch, the fast one 10 ms."""
    fast, slow = TracedWorker("actor", NODE, pid=5001), TracedWorker("actor", NODE, pid=5002)
    learner = TracedWorker("learner", NODE, pid=5000)
    sent = {}
    for actor, ns in ((fast, 10 * MS), (slow, 100 * MS)):
        for n in range(steps):
            with actor.phase("produce"):
                actor.work(ns)
                actor.signal("batches", f"{actor.pid}-{n}")
                sent[(actor.pid, n)] = actor.now
    for n in range(steps):
        with learner.phase("step"):
            with learner.phase("wait_batch"):
                for actor in (fast, slow):
                    learner.wait_until(sent[(actor.pid, n)] + wake)
                    learner.wait_on("batches", f"{actor.pid}-{n}")
            with learner.phase("train"):
                learner.work(5 * MS)
    write_all(run_dir, [fast, slow, learner])
    return fast, slow, learner


def test_the_slow_actor_sets_the_path_and_the_first_finding(tmp_path):
    fast, slow, learner = slow_actor_run(tmp_path)
    result, notes = story(load_run(tmp_path))
    assert result is not None and notes == []
    path = result.path
    assert path is not None
    first = path.shares[0]
    assert result.processes[first.process].pid == slow.pid
    assert first.phase == "produce"
    # The path: the slow actor's whole life, the learner's wake-up, its last train.
    assert [result.processes[s.process].pid for s in path.segments] == [slow.pid, learner.pid, learner.pid]
    assert path.segments[-1].phase == "step/train" and path.segments[-1].duration_ns == 5 * MS
    assert path.segments[1].kind == "wake" and path.segments[1].duration_ns == 50 * US
    assert path.duration_ns == result.duration_ns == 20 * 100 * MS + 50 * US + 5 * MS
    finding = result.findings[0]
    assert finding.kind == "critical_path" and finding.process == first.process
    assert f"pid {slow.pid}" in finding.text and "99.7%" in finding.text
    assert all(f"pid {fast.pid}" not in f.text for f in result.findings)
    # The learner blocked in wait_batch, with links saying on what: not a finding of its own.
    assert all(f.kind != "blocked_unknown" for f in result.findings)
    assert not any(a.backwards for a in result.arrows) and len(result.arrows) == 40
    assert sum(a.on_path for a in result.arrows) == 1


def test_the_trace_command_and_the_json_name_the_slow_actor(tmp_path, capsys):
    _, slow, _ = slow_actor_run(tmp_path)
    assert main(["trace", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Critical path 2.0s of 2.0s" in text and f"1. [99.7% of the run] actor pid {slow.pid}" in text
    assert "100 of 100 spans kept" in text
    assert main(["report", str(tmp_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["story"]["findings"][0]["figures"]["pid"] == slow.pid
    assert document["story"]["kept_line"] == "100 of 100 spans kept"


def test_fail_over_exits_non_zero_after_writing_the_report(tmp_path, capsys):
    slow_actor_run(tmp_path)
    assert main(["report", str(tmp_path), "--fail-over", "50"]) == 3
    captured = capsys.readouterr()
    assert "Runtime" in captured.out
    assert "costs 99.7% of the run, over --fail-over 50%" in captured.err
    assert main(["report", str(tmp_path), "--fail-over", "99.9"]) == 0
    capsys.readouterr()
    assert main(["trace", str(tmp_path), "--fail-over", "10", "-q"]) == 3
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "over --fail-over 10%" in err[0]  # -q: no progress lines


def test_a_single_trainer_busy_in_its_step_is_not_a_cost_to_remove(tmp_path, capsys):
    trainer = TracedWorker("trainer", NODE, pid=6201)
    for _ in range(10):
        with trainer.phase("step"):
            trainer.work(20 * MS)
    write_all(tmp_path, [trainer])
    result, _ = story(load_run(tmp_path))
    assert result is not None
    (finding,) = result.findings
    assert finding.kind == "critical_path" and finding.cost_fraction == 1.0 and finding.removable_ns is None
    assert main(["trace", str(tmp_path), "--fail-over", "20", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_the_slow_feeder_is_a_removable_cost(tmp_path):
    _, slow, _ = slow_actor_run(tmp_path)
    result, _ = story(load_run(tmp_path))
    assert result is not None
    feeder = result.findings[0]
    assert f"pid {slow.pid}" in feeder.text and feeder.removable_ns == feeder.cost_ns
    assert feeder.figures["channel"] == "batches"


def test_a_sleeping_actor_without_links_is_not_called_a_queue(tmp_path, capsys):
    actor = TracedWorker("actor", NODE, pid=6001)
    for _ in range(10):
        with actor.phase("act"):
            actor.work(10 * MS)
            actor.wait(90 * MS)  # time.sleep: off-CPU, and nothing says what for
    write_all(tmp_path, [actor])
    result, _ = story(load_run(tmp_path))
    assert result is not None
    blocked = [f for f in result.findings if f.kind == "blocked_unknown"]
    assert len(blocked) == 1
    assert "off-CPU for 90.0% of act" in blocked[0].text and "unknown" in blocked[0].text
    assert main(["trace", str(tmp_path)]) == 0
    assert "queue" not in capsys.readouterr().out.lower()


def two_host_run(run_dir, *, wall_error, both_ways=True, wake=50 * US):
    """An actor on node02 feeds a learner on node01 (which holds more processes: the
    reference); the learner sends weights back. node02 booted 4000 s later and its wall clock is
    ``wall_error`` ahead."""
    a = Host("node01", mono_base=9_000_000 * MS)
    b = Host("node02", mono_base=5_000_000 * MS, wall_error=wall_error)
    learner, helper = TracedWorker("learner", a, pid=7000), TracedWorker("helper", a, pid=7001)
    actor = TracedWorker("actor", b, pid=7002)
    with helper.phase("idle"):
        helper.work(MS)
    sent = {}
    weights = {}
    for n in range(5):
        if both_ways and n:
            with actor.phase("sync_weights"):
                actor.wait_until(weights[n - 1] + wake)
                actor.wait_on("weights", n - 1)
        with actor.phase("produce"):
            actor.work(30 * MS)
            actor.signal("batches", n)
            sent[n] = actor.now
        with learner.phase("wait_batch"):
            learner.wait_until(sent[n] + wake)
            learner.wait_on("batches", n)
        with learner.phase("train"):
            learner.work(5 * MS)
            learner.signal("weights", n)
            weights[n] = learner.now
    write_all(run_dir, [learner, helper, actor])
    return a.mono_base - b.mono_base  # t_node01 = t_node02 + offset


def test_two_hosts_offset_within_the_stated_bounds_and_no_arrow_backwards(tmp_path):
    truth = two_host_run(tmp_path, wall_error=3 * MS)
    result, notes = story(load_run(tmp_path))
    assert result is not None
    clock = next(c for c in result.hosts if c.host == "node02")
    assert clock.low_ns is not None and clock.high_ns is not None
    assert clock.low_ns <= truth <= clock.high_ns
    assert clock.uncertainty_ns is not None and clock.uncertainty_ns <= 50 * US
    assert abs(clock.offset_ns - truth) <= 2 * clock.uncertainty_ns
    # The clock pairs were 3 ms off: said, and the links' bound used.
    assert clock.disagreement is not None and "disagree" in clock.disagreement
    assert any("wall clocks of node02 and node01 disagree" in n for n in notes)
    assert result.arrows and not any(a.backwards for a in result.arrows)
    assert all(a.to_ns >= a.from_ns for a in result.arrows)


def test_two_hosts_with_agreeing_wall_clocks_keep_the_pairs_estimate(tmp_path):
    truth = two_host_run(tmp_path, wall_error=0)
    result, notes = story(load_run(tmp_path))
    assert result is not None
    clock = next(c for c in result.hosts if c.host == "node02")
    assert clock.disagreement is None and clock.source.startswith("clock pairs")
    assert clock.low_ns is not None and clock.high_ns is not None and clock.low_ns <= truth <= clock.high_ns
    assert abs(clock.offset_ns - truth) <= 2 * US
    assert not notes


def test_links_one_way_bound_the_offset_on_one_side_only(tmp_path):
    truth = two_host_run(tmp_path, wall_error=3 * MS, both_ways=False)
    result, _ = story(load_run(tmp_path))
    assert result is not None
    clock = next(c for c in result.hosts if c.host == "node02")
    assert clock.low_ns is None and clock.high_ns is not None and truth <= clock.high_ns
    assert clock.uncertainty_ns is None and "disagree" in (clock.disagreement or "")
    assert not any(a.backwards for a in result.arrows)


def test_a_killed_worker_is_drawn_open_and_dropped_spans_are_said(tmp_path, capsys):
    actor = TracedWorker("actor", NODE, pid=8001)
    for _ in range(30):
        with actor.phase("act"):
            actor.work(MS)
    actor.drop_oldest(10)
    victim = TracedWorker("actor", NODE, pid=8002)
    with victim.phase("act"):
        victim.work(MS)
    victim.open("act")
    victim.work(40 * MS)
    actor.write(tmp_path)
    victim.write(tmp_path, status="running", flush_at_ns=victim.sim.clock_ns)
    result, notes = story(load_run(tmp_path))
    assert result is not None
    assert result.kept_line == "21 of 31 spans kept (the oldest dropped)"
    assert any("21 of 31 spans kept (the oldest dropped" in n for n in notes)
    killed = next(p for p in result.processes if p.pid == victim.pid)
    assert killed.killed and killed.open_entries == 1
    lane = next(lane for lane in result.lanes if lane.process == killed.index)
    open_spans = [s for s in lane.spans if s.open]
    assert len(open_spans) == 1 and open_spans[0].end_ns == killed.end_ns
    assert open_spans[0].end_ns - open_spans[0].start_ns == 40 * MS
    assert main(["trace", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "21 of 31 spans kept (the oldest dropped)" in out and "died with 1 entry open" in out


def test_a_run_without_trace_has_no_story(tmp_path, capsys):
    from lp_report_builders import SimWorker

    sim = SimWorker("actor")
    with sim.phase("act"):
        sim.work(MS)
    from lineprofiler.runfiles import workerfile

    workerfile.write_worker_file(sim.path_in(tmp_path), sim.document())
    report = build_report(load_run(tmp_path))
    assert getattr(report, "story", None) is None
    assert main(["report", str(tmp_path), "--json"]) == 0
    assert "story" not in json.loads(capsys.readouterr().out)
    assert main(["trace", str(tmp_path)]) == 2
    assert "no worker of this run recorded a usable trace" in capsys.readouterr().err


def test_the_path_is_split_by_what_each_thread_was_doing(tmp_path):
    actor, learner = TracedWorker("actor", NODE, pid=9001), TracedWorker("learner", NODE, pid=9000)
    with actor.phase("setup"):
        actor.work(300 * MS)
    actor.work(50 * MS)  # in no phase
    for n in range(5):
        with actor.phase("produce"):
            with actor.phase("simulate"):
                actor.work(80 * MS)
            actor.work(20 * MS)
            actor.signal("batches", n)
    with learner.phase("wait"):
        learner.wait_until(actor.now + 10 * US)
        learner.wait_on("batches", 4)
    with learner.phase("train"):
        learner.work(10 * MS)
    write_all(tmp_path, [actor, learner])
    result, _ = story(load_run(tmp_path))
    assert result is not None and result.path is not None
    shares = {(result.processes[s.process].pid, s.phase): s.duration_ns for s in result.path.shares}
    assert shares == {
        (actor.pid, "produce/simulate"): 400 * MS,
        (actor.pid, "setup"): 300 * MS,
        (actor.pid, "produce"): 100 * MS,
        (actor.pid, None): 50 * MS,
        (learner.pid, "train"): 10 * MS,
        (learner.pid, "wait"): 10 * US,
    }
    assert result.path.segments[0].phase == "produce/simulate"


def test_the_rank_that_arrives_last_at_a_collective_is_the_straggler(tmp_path):
    ranks = [TracedWorker("trainer", NODE, rank=r, pid=9100 + r) for r in range(4)]
    for _ in range(10):
        # Rank 2 computes 20 ms longer; everyone leaves the all-reduce when the last arrives.
        arrive = {r: w.now + (30 if r == 2 else 10) * MS + r * US for r, w in enumerate(ranks)}
        leave = max(arrive.values()) + MS
        for r, worker in enumerate(ranks):
            with worker.phase("step"):
                with worker.phase("forward"):
                    worker.work(arrive[r] - worker.now)
                with worker.phase("allreduce", sync=True):
                    worker.wait_until(leave)
    write_all(tmp_path, ranks)
    result, _ = story(load_run(tmp_path))
    assert result is not None
    [row] = result.skew
    assert (row.phase, row.steps, row.ranks, row.straggler_rank, row.straggler_steps) == (
        "step/allreduce",
        10,
        4,
        2,
        10,
    )
    # The median arrival is between ranks 0/1 and 3 (10 ms in); rank 2 came 20 ms after, less the
    # median's microseconds, every step.
    assert row.late_ns == 10 * (20 * MS + 2 * US - (1 * US + 3 * US) // 2)
    finding = next(f for f in result.findings if f.kind == "skew")
    assert (
        "rank 2 (trainer pid 9102 on node07 (rank 2)) arrived last at step/allreduce in 10 of 10 steps" in finding.text
    )
    # The ranks blocked in allreduce, with no link: said to be unknown, never a queue.
    assert all("queue" not in f.text for f in result.findings)


def test_a_run_merged_in_a_pool_still_has_its_story(tmp_path, monkeypatch):
    # The pool's processes send the documents back as copies: the marker of a trace left in the
    # file must still be recognised (it is equal to the marker, not the same object).
    monkeypatch.setenv("LINEPROFILER_REPORT_JOBS", "2")
    _, slow, _ = slow_actor_run(tmp_path)
    result, notes = story(load_run(tmp_path))
    assert notes == [] and result is not None
    assert result.processes[result.path.shares[0].process].pid == slow.pid


def test_a_blocked_phase_on_the_path_costs_the_time_the_path_spent_in_it(tmp_path):
    # One trainer: each step waits for its batch (off-CPU, no link), then computes. The path's
    # segment is named after one phase only; the blocked finding must take the phase's own
    # share of the path, as the path's lines give it, not "not on the critical path".
    trainer = TracedWorker("trainer", NODE, pid=6101)
    for _ in range(10):
        with trainer.phase("step"):
            with trainer.phase("wait_for_batch"):
                trainer.wait(30 * MS)
            with trainer.phase("compute"):
                trainer.work(10 * MS)
    write_all(tmp_path, [trainer])
    result, _ = story(load_run(tmp_path))
    assert result is not None and result.path is not None
    (blocked,) = [f for f in result.findings if f.kind == "blocked_unknown"]
    assert blocked.figures["phase"] == "step/wait_for_batch"
    share = sum(s.duration_ns for s in result.path.shares if s.phase == "step/wait_for_batch")
    assert share == 10 * 30 * MS
    assert blocked.cost_ns == share and "it was on the critical path for 300.0ms" in blocked.text
    # One finding per (process, phase): the phase is not also a critical_path finding.
    assert [f.kind for f in result.findings if f.figures["phase"] == "step/wait_for_batch"] == ["blocked_unknown"]
    assert blocked.removable_ns == share  # all of it off-CPU, all of it on the path
