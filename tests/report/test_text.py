"""The text report: the seed's shape, with the numbers that matter asserted from the durations."""

import pytest
from lp_report_builders import MS, T0, US, S, SimWorker, actor_loop, expected_quantile, gpu_document, learner_loop

from helpers.cli import run_cli
from lineprofiler.report import format as fmt
from lineprofiler.report.compute.blocks import RenderOptions, phases, sampled
from lineprofiler.report.compute.blocks import roles as roles_block
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import blocks, text
from lineprofiler.report.render.blocks import render
from lineprofiler.runfiles import workerfile

# The seed's actor: 75 iterations of 64 simulations; mcts entries average 10.036 ms (752.7 ms in
# all, so 4,800 simulations run at 6,377.0/s and cost 156.8 us each); 1.8 ms of each mcts is
# spent off-CPU (18% wait); env_step takes 2.07 ms, which makes mcts 82.9% of the phase time.
MCTS_NS = 10_036_000
JITTER = [-2 * MS, -1 * MS, 0, 1 * MS, 2 * MS]
ENV_NS = 2_070_000
WAIT_NS = 1_800_000
RUNTIME_NS = (4 * 3600 + 12 * 60) * S


def seed_actor(**kwargs):
    worker = SimWorker("actor", **kwargs)
    actor_loop(worker, 75, mcts_ns=MCTS_NS, env_ns=ENV_NS, mcts_wait_ns=WAIT_NS, jitter=JITTER)
    return worker


def mcts_durations():
    return [MCTS_NS + JITTER[i % len(JITTER)] for i in range(75)]


def seed_run(run_dir):
    for i in range(16):
        seed_actor(host="node07" if i < 8 else "node08", rank=i).write(run_dir)
    learner = SimWorker("learner", host="node08", rank=16)
    for _ in range(10):
        with learner.phase("train_step"):
            learner.work(20 * MS)
    learner.wait(RUNTIME_NS - learner.clock_ns)
    learner.write(run_dir)
    return load_run(run_dir)


def test_seed_shaped_report_of_sixteen_actors_and_a_learner(tmp_path):
    report = render(seed_run(tmp_path / "profile"))
    lines = report.splitlines()
    assert lines[0] == "Runtime 4h 12m   Processes 17   Roles actor x16, learner x1"
    assert lines[1] == "Hosts node07, node08 (2 nodes)   Run 20260813T2241-471c94"
    assert lines[2].startswith("Ranks 0-16   Started 2026-08-13 22:41:00 UTC")

    actor = lines.index("ACTOR  (16 processes, imbalance 1.00)")
    assert lines[actor + 1] == fmt.RULE
    mcts_total = 16 * sum(mcts_durations())
    env_total = 16 * 75 * ENV_NS
    assert lines[actor + 2] == f"{'mcts':<30}{'82.9%':>6}{fmt.duration(mcts_total):>13}"
    assert lines[actor + 3] == f"{'env_step':<30}{'17.1%':>6}{fmt.duration(env_total):>13}"

    head = lines.index("DOMINANT PHASES                     self    wait       p50       p99    entries  role")
    row = lines[head + 1]
    assert row.split() == [
        "iteration/self_play/mcts",
        fmt.duration(mcts_total),
        "18%",
        fmt.duration(expected_quantile(mcts_durations(), 0.50)),
        fmt.duration(expected_quantile(mcts_durations(), 0.99)),
        "1,200",  # 0.10.0's entries column, after the seed's columns
        "actor",
    ]
    # Rates are per second of the phase's own time, summed over the processes: sixteen actors
    # run the seed's one actor's rate, not sixteen times it.
    # The seed's line, then the spread of what each count() added (0.10.0's report had it)
    assert lines[head + 2] == "    + mcts_simulations          76,800     6,377.0/s   156.8us/ea  always 64"

    iterations = next(i for i, line in enumerate(lines) if line.startswith("ITERATIONS"))
    # Each role its own loop: the learner's train_step too, not only the actors' iteration.
    assert lines[iterations] == "ITERATIONS  per role, its own loop (Profiler(window_phase=NAME) picks another)"
    assert lines[iterations + 1] == "  ACTOR  (1,200 entries)  phase iteration (the most-entered top-level phase)"
    assert lines[iterations + 3] == "  LEARNER  (10 entries)  phase train_step (the most-entered top-level phase)"
    per_iteration = [m + ENV_NS for m in mcts_durations()]
    assert lines[iterations + 2].split() == [
        "mean", "12.1ms",
        "p50", fmt.duration(expected_quantile(per_iteration, 0.50)),
        "p95", fmt.duration(expected_quantile(per_iteration, 0.95)),
        "p99", fmt.duration(expected_quantile(per_iteration, 0.99)),
    ]
    assert "CAVEATS" not in report


def test_one_actor_reproduces_the_seeds_counter_and_iteration_lines(tmp_path):
    seed_actor().write(tmp_path)
    lines = render(load_run(tmp_path)).splitlines()
    assert "DOMINANT PHASES                     self    wait       p50       p99    entries" in lines
    assert "    + mcts_simulations           4,800     6,377.0/s   156.8us/ea  always 64" in lines
    assert "ITERATIONS  (75 entries)  phase iteration (the most-entered top-level phase)" in lines
    assert "ACTOR  (1 process, imbalance 1.00)" in lines


def test_wait_is_na_when_cpu_was_not_measured(tmp_path):
    seed_actor(measure_cpu=False).write(tmp_path)
    lines = render(load_run(tmp_path)).splitlines()
    row = next(line for line in lines if line.startswith("iteration/self_play/mcts"))
    assert row.split()[2] == "n/a"


def test_window_phase_is_used_when_set_and_said_when_never_entered(tmp_path):
    worker = SimWorker("learner", window_phase="train_step")
    learner_loop(worker, 20, train_ns=30 * MS, wait_ns=1 * MS)
    for _ in range(50):
        with worker.phase("poll"):
            worker.work(10 * US)
    worker.write(tmp_path / "a")
    lines = render(load_run(tmp_path / "a")).splitlines()
    assert "ITERATIONS  (20 entries)  phase train_step (window_phase)" in lines

    other = SimWorker("learner", window_phase="rollout")
    learner_loop(other, 20, train_ns=30 * MS, wait_ns=1 * MS)
    other.write(tmp_path / "b")
    lines = render(load_run(tmp_path / "b")).splitlines()
    assert (
        "ITERATIONS  (20 entries)  phase iteration (the most-entered top-level phase; "
        "window_phase 'rollout' was never entered)"
    ) in lines


def test_iterations_per_role_when_several_roles_have_the_phase(tmp_path):
    seed_actor().write(tmp_path)
    learner = SimWorker("learner")
    learner_loop(learner, 10, train_ns=20 * MS, wait_ns=5 * MS)
    learner.write(tmp_path)
    lines = render(load_run(tmp_path)).splitlines()
    at = lines.index("ITERATIONS  phase iteration (the most-entered top-level phase)")
    assert lines[at + 1] == "  ACTOR  (75 entries)"
    assert lines[at + 3] == "  LEARNER  (10 entries)"
    assert lines[at + 4].split()[:2] == ["mean", "25.0ms"]


def test_counters_outside_dominant_phases_and_outside_any_phase(tmp_path):
    worker = SimWorker("actor")
    with worker.phase("big"):
        worker.work(10 * S)
    for _ in range(10):
        with worker.phase("tiny"):
            worker.work(1 * MS)
            worker.count("items", 5)
    worker.count("episodes", 4)
    worker.wait(20 * S - worker.clock_ns)
    worker.write(tmp_path)
    phases.DOMINANT_ROWS, saved = 1, phases.DOMINANT_ROWS
    try:
        lines = render(load_run(tmp_path)).splitlines()
    finally:
        phases.DOMINANT_ROWS = saved
    at = lines.index("COUNTERS  (under phases not listed above)")
    assert lines[at + 1] == "  tiny"
    assert lines[at + 2] == f"    + {'items':<24}{'50':>8}{'5,000.0/s':>14}{'200.0us/ea':>13}  always 5"
    assert lines[at + 3] == "  (no phase open)"
    # No phase: per second of the process lifetime (20 s here), and no time-each.
    assert lines[at + 4] == f"    + {'episodes':<24}{'4':>8}{'0.2/s':>14}  always 4"


def test_many_phases_are_summarised_and_names_are_shortest_unique_suffixes(tmp_path):
    worker = SimWorker("actor")
    for i in range(12):
        with worker.phase(f"group{i % 2}"), worker.phase(f"p{i}"):
            worker.work((i + 1) * MS)
    with worker.phase("a"), worker.phase("load"):
        worker.work(100 * MS)
    with worker.phase("b"), worker.phase("load"):
        worker.work(90 * MS)
    worker.write(tmp_path)
    lines = render(load_run(tmp_path)).splitlines()
    block = lines[lines.index("ACTOR  (1 process, imbalance 1.00)") + 2:]
    assert block[0].split()[0] == "a/load"
    assert block[1].split()[0] == "b/load"
    assert block[8].startswith("(6 more phases)")
    assert text.short_names(["x/a/b", "y/a/b", "z/c"]) == {"x/a/b": "x/a/b", "y/a/b": "y/a/b", "z/c": "c"}


def test_names_from_worker_files_cannot_break_the_layout(tmp_path):
    worker = SimWorker("act\nor\x1b[31m", host="node\t7")
    with worker.phase("evil\rname"):
        worker.work(1 * MS)
    worker.write(tmp_path)
    report = render(load_run(tmp_path))
    assert "\x1b" not in report and "\r" not in report and "\t" not in report
    assert "ACT\\NOR\\X1B[31M  (1 process, imbalance 1.00)" in report.splitlines()


# -- the blocks after ITERATIONS -----------------------------------------------------------------


def test_the_resource_and_gpu_blocks_follow_iterations_in_order():
    assert [(origin, name) for origin, name, _, _ in blocks.PRINTERS][4:] == [
        ("core", "render_iterations"),
        ("core", "render_windows"),  # a run with a backend window only
        ("lines", "render_lines"),  # with --lines only
        ("resources", "render_io_by_phase"),
        ("resources", "render_io"),
        ("resources", "render_memory"),
        ("resources", "render_cpu"),  # with samples that carry the process's CPU
        ("gpu", "render"),
        ("timeline", "render_timeline"),
        ("story", "story_lines"),  # a traced run only
    ]


def test_the_gpu_block_renders_after_iterations_and_before_caveats(tmp_path):
    worker = seed_actor()
    worker.write(tmp_path, gpu=gpu_document(nvml_reason="no NVIDIA driver"))
    SimWorker("actor").write(tmp_path, status="started", flush_at_ns=0)
    report = render(load_run(tmp_path))
    order = [report.index(s) for s in ("ITERATIONS", "GPU\n", "absent: no NVIDIA driver", "CAVEATS")]
    assert order == sorted(order)
    assert "GPU" not in render(load_run(tmp_path, no_samples=True), RenderOptions(no_samples=True))


def test_a_failing_block_costs_that_block_and_is_named_under_caveats(tmp_path, monkeypatch):
    def reduce_io(table, grid=None):
        raise KeyError("read_chars")

    monkeypatch.setattr(sampled, "reduce_io", reduce_io)
    monkeypatch.delenv("LINEPROFILER_DEBUG", raising=False)
    worker = seed_actor()
    worker.write(tmp_path, samples=worker.write_samples(tmp_path, {"rss_bytes": [10**6, 2 * 10**6]}))
    report = render(load_run(tmp_path))
    lines = report.splitlines()
    assert "ITERATIONS" in report and "DOMINANT PHASES" in report
    assert "I/O" not in lines and "MEMORY (RSS, sampled)" not in lines
    assert "  - the resources block render_io failed and is missing: KeyError: 'read_chars'" in lines
    assert "  - the resources block render_memory failed and is missing: KeyError: 'read_chars'" in lines


def test_start_times_and_superseded_attempts_in_the_header(tmp_path):
    old = SimWorker("actor", run_id="20260813T2010-aa12bc", start_unix_ns=T0 - 3600 * S)
    old.write(tmp_path)
    seed_actor().write(tmp_path)
    lines = render(load_run(tmp_path)).splitlines()
    assert lines[3] == (
        "Superseded attempt 20260813T2010-aa12bc (not merged): 1 worker file(s), actor x1, "
        "started 2026-08-13 21:41:00 UTC, ran 0ns"
    )
    assert lines[4] == "(lineprofiler report DIR --attempt ID shows another attempt)"


def test_a_counters_spread_is_what_each_count_added_over_the_roles_processes(tmp_path):
    # 0.10.0's report said "always 8" or "0..4" beside a counter: whether it is a configured cap
    # or bursty. Two processes: one adds 0..3, the other 1..4; a third counter always 8.
    for rank, amounts in ((0, (0, 3, 2)), (1, (1, 4))):
        sim = SimWorker("loader", rank=rank)
        with sim.phase("fetch"):
            for n in amounts:
                sim.count("items", n)
                sim.count("batch", 8)
            sim.work(10 * MS)
        sim.write(tmp_path)
    old = SimWorker("loader", rank=2)  # a file written before the spread was kept
    with old.phase("fetch"):
        old.count("legacy", 5)
        old.work(10 * MS)
    document = old.document()
    for counter in document["counters"]:
        for key in ("calls", "min", "max"):
            del counter[key]
    workerfile.write_worker_file(old.path_in(tmp_path), document)
    out = render(load_run(tmp_path), RenderOptions())
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("    + ")}
    assert lines["items"].endswith("  0..4") and lines["batch"].endswith("  always 8")
    assert lines["legacy"].endswith("/ea")  # no spread where a process did not record one


def test_the_header_names_the_source_commit_and_its_dirty_state(tmp_path):
    # 0.10.0's header showed the commit the run measured; roles that ran other code are named.
    commits = {"actor": ("0123456789abcdef0123456789abcdef01234567", 0, None),
               "learner": ("fedcba9876543210fedcba9876543210fedcba98", 2, "9b1530cd")}
    for rank, role in enumerate(("actor", "actor", "learner")):
        sim = SimWorker(role, rank=rank)
        with sim.phase("step"):
            sim.work(10 * MS)
        commit, dirty, sha = commits[role]
        sim.source = {"commit": commit, "dirty_files": dirty, "diff_sha": sha, "root": "/p", "unavailable_reason": None}
        sim.write(tmp_path)
    run = load_run(tmp_path)
    out = render(run, RenderOptions()).splitlines()
    assert "Sources 01234567 (actor); fedcba98 (+dirty: 2 files, diff 9b1530cd) (learner)" in out
    page = tmp_path / "r.html"
    assert run_cli("report", str(tmp_path), "--html", str(page)).code == 0
    assert "fedcba98 (+dirty: 2 files, diff 9b1530cd) (learner)" in page.read_text()
    one = tmp_path / "one"
    sim = SimWorker("actor")
    with sim.phase("step"):
        sim.work(10 * MS)
    sim.write(one)  # SimWorker's default: the project is no repository
    assert not [line for line in render(load_run(one), RenderOptions()).splitlines() if line.startswith("Source")]


def test_the_first_split_below_a_single_loop_phase_gives_the_unclaimed_other_share(tmp_path):
    # iteration (its own 10 ms per entry) -> update -> forward, backward, optimizer: the breakdown
    # descends past iteration and update, each with one child, and names what update kept itself.
    # (A phase named step with these parts gets the step line instead: tests/report/test_step_parts.py.)
    sim = SimWorker("trainer")
    for _ in range(4):
        with sim.phase("iteration"):
            with sim.phase("update"):
                for name, ms in (("forward", 30), ("backward", 50), ("optimizer", 10)):
                    with sim.phase(name):
                        sim.work(ms * MS)
                sim.work(10 * MS)  # in update, in no child
    sim.write(tmp_path)
    run = load_run(tmp_path)
    lines = render(run, RenderOptions()).splitlines()
    assert "  split of iteration/update: backward 50.0% · forward 30.0% · optimizer 10.0% · Other 10.0%" in lines
    (role,) = roles_block.roles(run, RenderOptions())
    assert role.split is not None and role.split.parent == "iteration/update"
    assert role.split.other == pytest.approx(0.1)
    flat = SimWorker("actor")  # two top-level phases: the role block already shows the split
    with flat.phase("a"):
        flat.work(MS)
    with flat.phase("b"):
        flat.work(MS)
    flat.write(tmp_path / "flat")
    assert "split of" not in render(load_run(tmp_path / "flat"), RenderOptions())
