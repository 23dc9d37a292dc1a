"""The findings of a traced run whose processes measured why their threads waited: "what it waited
on is unknown" gives way to the measured split, with what a user can change; a CPU wait is a cost
someone can remove (``--fail-over``); still one finding per (process, phase)."""

from __future__ import annotations

import json

from lp_report_builders import MS, S

from lineprofiler.cli import main
from lineprofiler.report.compute.story.assemble import story
from lineprofiler.report.read.merge import load_run

from .test_off_cpu import cpus, off_cpu, process_cpu, row
from .test_story_docs import Host, TracedWorker

NODE = Host("node07")


def trainer_run(run_dir, split_rows, *, quota=None, links=False, on_ms=10, workers=4):
    """A trainer whose ``step`` is ``on_ms`` on a CPU and the rest of 100 ms off it, ten times,
    on a host whose two CPUs its ``workers`` and nine threads share (with none, two threads: the
    trainer's and its sampler's); ``split_rows``: what its sampler measured (None: a file from
    before it did)."""
    trainer = TracedWorker("trainer", NODE, pid=6100)
    for n in range(10):
        with trainer.phase("step"):
            trainer.work(on_ms * MS)
            trainer.wait((100 - on_ms) * MS)
            if links:
                trainer.wait_on("batches", n)
    measured = {} if split_rows is None else {"off_cpu": off_cpu(split_rows)}
    samples = trainer.sim.write_samples(
        run_dir, {"rss_bytes": [1, 1]}, process_cpu=process_cpu(400 * MS, 9 if workers else 2),
        cpus=cpus(2, 2, quota), **measured
    )
    if split_rows is None:
        samples.pop("off_cpu", None)  # a file from before the sampler measured it
    trainer.write(run_dir, samples=samples)
    for pid in range(6101, 6101 + workers):
        worker = TracedWorker("worker", NODE, pid=pid)
        with worker.phase("load"):
            worker.work(1 * S)
        samples = worker.sim.write_samples(run_dir, {"rss_bytes": [1, 1]}, process_cpu=process_cpu(300 * MS, 1),
                                           cpus=cpus(2, 2, quota))
        worker.write(run_dir, samples=samples)
    return run_dir


def step_findings(run_dir):
    result, _ = story(load_run(run_dir))
    assert result is not None
    return [f for f in result.findings if f.figures.get("phase") == "step"]


def test_a_phase_that_waited_for_a_cpu_says_so_and_what_to_change(tmp_path):
    trainer_run(tmp_path, [row("step", 100, 700, 0, 200)])
    (finding,) = step_findings(tmp_path)  # one finding per (process, phase)
    assert finding.kind == "cpu_queue"
    assert (
        "waited for a CPU 70% of its time (the host's 2 CPUs ran 13 threads of this run, which used 1.60 cores "
        "on average): fewer workers, torch.set_num_threads, OMP_NUM_THREADS" in finding.text
    )
    assert "blocked 20%: on what is unknown (no wait_on link was recorded in it)" in finding.text
    assert "what it waited on is unknown" not in finding.text
    assert finding.figures["runqueue_share"] == 0.7 and finding.figures["host_threads"] == 13
    # All of its time is on the critical path (it is the run's only trainer): the CPU wait and
    # the unexplained sleep are removable, its time on a CPU is not.
    assert finding.removable_ns == round(0.9 * finding.cost_ns)


def test_a_cpu_wait_fails_the_gate_where_an_unexplained_half_off_cpu_did_not(tmp_path, capsys):
    # Half its time off a CPU: not a finding without the split (under 60 %), the run's only
    # trainer busy in its phase, which never gates.
    trainer_run(tmp_path / "before", None, on_ms=50)
    assert main(["trace", str(tmp_path / "before"), "--fail-over", "20", "-q"]) == 0
    trainer_run(tmp_path / "after", [row("step", 500, 450, 0, 50)], on_ms=50)
    (finding,) = step_findings(tmp_path / "after")
    assert finding.kind == "cpu_queue" and "waited for a CPU 45% of its time" in finding.text
    capsys.readouterr()
    assert main(["trace", str(tmp_path / "after"), "--fail-over", "20", "-q"]) == 3
    assert "over --fail-over 20%" in capsys.readouterr().err


def test_the_cgroups_quota_is_named_where_it_throttled(tmp_path):
    trainer_run(tmp_path, [row("step", 100, 100, 500, 300)], quota=1.5)
    (finding,) = step_findings(tmp_path)
    assert finding.kind == "throttled"
    assert "the cgroup's CPU quota (1.5 CPUs) throttled it 50%: raise the quota or use fewer threads" in finding.text
    assert "(the host's 1.5 CPUs ran 13 threads of this run, which used 1.60 cores on average)" in finding.text


def test_a_queue_on_a_host_the_run_did_not_fill_is_others_load_not_a_cost_to_remove(tmp_path):
    # The trainer alone: two threads on two CPUs, 0.4 cores used; other processes held the CPUs.
    trainer_run(tmp_path, [row("step", 100, 700, 0, 200)], workers=0)
    (finding,) = step_findings(tmp_path)
    assert finding.kind == "host_contention"
    assert (
        "waited for a CPU 70% of its time, held by processes outside this run (the host's 2 CPUs ran 2 threads "
        "of this run, which used 0.40 cores on average)" in finding.text
    )
    assert "torch.set_num_threads" not in finding.text
    assert finding.removable_ns == round(0.2 * finding.cost_ns)  # the unexplained sleep only
    assert finding.figures["run_filled_cpus"] is False


def test_a_busy_trainer_on_a_loaded_host_is_where_the_time_went_and_does_not_gate(tmp_path, capsys):
    # Half its time waiting for CPUs other processes held: not a finding of its own.
    trainer_run(tmp_path, [row("step", 500, 450, 0, 50)], on_ms=50, workers=0)
    assert [f.kind for f in step_findings(tmp_path)] == ["critical_path"]
    assert main(["trace", str(tmp_path), "--fail-over", "20", "-q"]) == 0


def test_a_sleep_stays_unknown_but_measured(tmp_path, capsys):
    trainer_run(tmp_path, [row("step", 100, 10, 0, 890)])
    (finding,) = step_findings(tmp_path)
    assert finding.kind == "blocked_unknown"
    assert "blocked 89%: on what is unknown (no wait_on link was recorded in it)" in finding.text
    assert "waited for a CPU" not in finding.text
    assert main(["trace", str(tmp_path), "--json"]) == 0
    (shown,) = [f for f in json.loads(capsys.readouterr().out)["story"]["findings"] if f["figures"]["phase"] == "step"]
    assert shown["figures"]["blocked_share"] == 0.89 and shown["figures"]["sampled_ns"] == 1000 * MS


def test_a_linked_phase_that_waited_for_a_cpu_is_a_finding_whose_sleep_the_links_explain(tmp_path):
    trainer_run(tmp_path, [row("step", 100, 400, 0, 500)], links=True)
    (finding,) = step_findings(tmp_path)
    assert finding.kind == "cpu_queue" and "blocked 50%: its wait_on links say on what" in finding.text
    assert finding.removable_ns == round(0.4 * finding.cost_ns)  # the CPU wait only


def test_a_linked_phase_that_only_slept_is_left_to_the_links(tmp_path):
    trainer_run(tmp_path, [row("step", 100, 10, 0, 890)], links=True)
    assert [f.kind for f in step_findings(tmp_path)] in ([], ["critical_path"])


def test_without_the_split_the_finding_is_what_it_was(tmp_path):
    trainer = TracedWorker("trainer", NODE, pid=6200)
    for _ in range(10):
        with trainer.phase("step"):
            trainer.work(10 * MS)
            trainer.wait(90 * MS)
    samples = trainer.sim.write_samples(tmp_path, {"rss_bytes": [1, 1]})
    samples.pop("off_cpu", None)  # an older file: no off_cpu
    trainer.write(tmp_path, samples=samples)
    (finding,) = step_findings(tmp_path)
    assert finding.kind == "blocked_unknown" and "what it waited on is unknown" in finding.text
