"""The report of a trainer and its DataLoader workers, read role by role: each role's own loop
under ITERATIONS, fork children that never profiled anything named as such, a straggler only
when slower per unit of work past the stated threshold (uneven work is said as such), and a
stall only where the whole job made no progress."""

from __future__ import annotations

import json

from lp_report_builders import MS, US, S, SimWorker

from lineprofiler.report.compute import build
from lineprofiler.report.compute.blocks import RenderOptions, timeline
from lineprofiler.report.compute.blocks.iterations import role_loop
from lineprofiler.report.compute.blocks.timeline import ProcessTimeline
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import json as report_json
from lineprofiler.report.render.blocks import render

DATALOADERS = 4
GETITEMS_EACH = 5_760  # 23,040 in all
EPOCHS, STEPS = 2, 100  # 200 steps


def trainer(**kwargs) -> SimWorker:
    """``epoch/step/{forward, backward}``: 2 epochs of 100 steps of 5 ms."""
    worker = SimWorker("trainer", **kwargs)
    for _ in range(EPOCHS):
        with worker.phase("epoch"):
            for _ in range(STEPS):
                with worker.phase("step"):
                    with worker.phase("forward"):
                        worker.work(2 * MS)
                    with worker.phase("backward"):
                        worker.work(3 * MS)
    return worker


def dataloader(parent: SimWorker) -> SimWorker:
    """A DataLoader worker that made its own Profiler: many short ``getitem`` entries."""
    worker = SimWorker("dataloader", host=parent.host)
    for _ in range(GETITEMS_EACH):
        with worker.phase("getitem"):
            worker.work(40 * US)
    return worker


def ladder(lines: list[str], head: str, rows: int = 6) -> list[str]:
    at = next(i for i, line in enumerate(lines) if line.startswith(head))
    return lines[at : at + rows]


# -- ITERATIONS ------------------------------------------------------------------------------------


def test_iterations_show_each_roles_own_loop(tmp_path):
    main = trainer()
    main.write(tmp_path)
    for _ in range(DATALOADERS):
        dataloader(main).write(tmp_path)
    run = load_run(tmp_path)
    block = ladder(render(run).splitlines(), "ITERATIONS", 5)
    assert block[0] == "ITERATIONS  per role, its own loop (Profiler(window_phase=NAME) picks another)"
    assert (
        block[1]
        == "  TRAINER  (200 entries)  phase epoch/step (the loop inside 'epoch', the most-entered top-level phase)"
    )
    assert block[2].split()[:2] == ["mean", "5.0ms"]
    assert block[3] == "  DATALOADER  (23,040 entries)  phase getitem (the most-entered top-level phase)"
    assert block[4].split()[:2] == ["mean", "40.0us"]
    doc = report_json.document(build.build_report(run), run.caveats)
    assert {r["role"]: (r["phase"], r["entries"]) for r in doc["iterations"]["roles"]} == {
        "trainer": ("epoch/step", 200),
        "dataloader": ("getitem", 23_040),
    }


def test_window_phase_names_a_roles_loop(tmp_path):
    main = trainer(window_phase="forward")
    main.write(tmp_path)
    dataloader(main).write(tmp_path)
    block = ladder(render(load_run(tmp_path)).splitlines(), "ITERATIONS", 4)
    assert block[1] == "  TRAINER  (200 entries)  phase forward (window_phase)"
    assert block[3] == "  DATALOADER  (5,760 entries)  phase getitem (the most-entered top-level phase)"


# -- fork children that never profiled -------------------------------------------------------------


def forked_job(tmp_path, *, trainer_status: str = "exited") -> SimWorker:
    """The trainer, its four DataLoader workers' own files, and the four start files the
    profiler they inherited wrote for them (role trainer, nothing recorded)."""
    main = trainer()
    main.write(tmp_path, status=trainer_status)
    for k in range(DATALOADERS):
        child = SimWorker("trainer", host=main.host, start_unix_ns=main.start_unix_ns + 10 * MS)
        child.fork_parent_pid = main.pid
        # One of them ended with a final flush of its inherited profiler, holding nothing.
        child.write(tmp_path, status="exited" if k == 0 else "started")
        dataloader(main).write(tmp_path)
    return main


def test_fork_children_that_never_profiled_are_named_so(tmp_path):
    forked_job(tmp_path)
    run = load_run(tmp_path)
    text = render(run)
    lines = text.splitlines()
    assert lines[0].endswith("Roles trainer x1 (+ 4 forked, not profiled), dataloader x4")
    assert "TRAINER  (1 process, 4 forked, not profiled, imbalance 1.00)" in lines
    assert "just started" not in text and "without data" not in text and "killed before any data" not in text
    role = run.roles["trainer"]
    assert role.imbalance == 1.0 and role.mean_busy_ns == 1 * S
    doc = json.loads(json.dumps(report_json.document(build.build_report(run), run.caveats)))
    trainer_block = next(r for r in doc["roles"] if r["name"] == "trainer")
    assert trainer_block["processes"] == 1 and trainer_block["unprofiled"] == 4
    assert doc["header"]["unprofiled"] == {"trainer": 4}


def test_a_fork_child_of_a_job_still_running_just_started(tmp_path):
    # The trainer is mid-run (its last snapshot is its newest): a child forked a moment ago
    # with only its start file has not had the time to record anything.
    main = trainer()
    main.write(tmp_path, status="running")
    child = SimWorker("trainer", host=main.host, start_unix_ns=main.start_unix_ns + main.clock_ns - 1 * S)
    child.fork_parent_pid = main.pid
    child.write(tmp_path, status="started")
    text = render(load_run(tmp_path))
    assert "1 worker(s) had written no data yet (just started)" in text
    assert "forked, not profiled" not in text


# -- stragglers ------------------------------------------------------------------------------------


def role_of_two(tmp_path, a: tuple[int, int], b: tuple[int, int]):
    """Two DataLoader workers, each ``(entries, ns per entry)`` of ``getitem``."""
    for entries, each_ns in (a, b):
        worker = SimWorker("dataloader")
        for _ in range(entries):
            with worker.phase("getitem"):
                worker.work(each_ns)
        worker.write(tmp_path)
    run = load_run(tmp_path)
    return run, render(run)


def test_a_difference_per_entry_within_the_bar_is_noise_not_a_straggler(tmp_path):
    # 1.08x per entry: past 1.04, within the histograms' own error on two medians.
    run, text = role_of_two(tmp_path, (10, 104 * MS), (10, 96 * MS))
    assert "DATALOADER  (2 processes, imbalance 1.04)" in text
    assert "straggler" not in text and "uneven work" not in text
    (role,) = build.build_report(run).roles
    assert role.straggler is None and role.straggler_bar > 1.10


def test_a_process_slower_per_entry_is_a_straggler_with_the_threshold_said(tmp_path):
    run, text = role_of_two(tmp_path, (10, 150 * MS), (10, 50 * MS))
    (role,) = build.build_report(run).roles
    assert role.imbalance == 1.5 and role.straggler is not None and role.straggler.busy_ns == 1500 * MS
    line = next(line for line in text.splitlines() if "straggler:" in line)
    assert "per entry of getitem (the median entry)" in line and "x the others' median" in line
    assert line.endswith(
        f"(straggler: > {role.straggler_bar:.2f}x the others' median per entry of getitem, "
        "1.10x raised to the histograms' own error)"
    )


def test_more_entries_at_the_same_speed_is_uneven_work_not_a_straggler(tmp_path):
    run, text = role_of_two(tmp_path, (16, 100 * MS), (12, 100 * MS))
    (role,) = build.build_report(run).roles
    assert role.imbalance is not None and role.imbalance > 1.10 and role.straggler is None
    assert role.uneven_work is not None and (role.uneven_work.most, role.uneven_work.fewest) == (16, 12)
    assert "uneven work: 16 vs 12 entries of getitem" in text and "not a straggler" in text


# -- stalls ----------------------------------------------------------------------------------------


def stall_run(tmp_path, monkeypatch, spans: dict[str, list[tuple[int, int, str]]]):
    """A trainer computing in ``step`` and a DataLoader worker blocked in ``wait_batch``
    (off-CPU), with the timelines ``spans`` gives per role (offsets from the start)."""
    main = SimWorker("trainer")
    with main.phase("step"):
        main.work(10 * S)
    main.write(tmp_path)
    loader = SimWorker("dataloader")
    with loader.phase("wait_batch"):
        loader.wait(10 * S)
    loader.write(tmp_path)
    run = load_run(tmp_path)

    def read_run(run, options):
        procs = []
        for worker in run.workers:
            t0 = worker.start_ns
            rows = [(t0 + a, t0 + b, path) for a, b, path in spans[worker.role]]
            procs.append(ProcessTimeline(worker, spans=rows, period_ns=100 * MS, ticks=100))
        return procs, {}

    monkeypatch.setattr(timeline, "read_run", read_run)
    block = timeline.timeline_block(run, RenderOptions())
    assert block is not None
    return {role.role: role.stalls for role in block.roles}


def test_a_dataloader_idle_while_the_trainer_works_is_no_stall(tmp_path, monkeypatch):
    stalls = stall_run(
        tmp_path,
        monkeypatch,
        {"trainer": [(0, 10 * S, "step")], "dataloader": [(0, 10 * S, "wait_batch")]},
    )
    assert stalls == {"dataloader": [], "trainer": []}


def test_the_whole_job_idle_is_a_stall(tmp_path, monkeypatch):
    # From 4 s to 6 s the trainer is outside its phases and the DataLoader worker waits.
    stalls = stall_run(
        tmp_path,
        monkeypatch,
        {
            "trainer": [(0, 4 * S, "step"), (4 * S, 6 * S, ""), (6 * S, 10 * S, "step")],
            "dataloader": [(0, 10 * S, "wait_batch")],
        },
    )
    (loader,) = stalls["dataloader"]
    assert (loader.start_ns, loader.length_ns, loader.phases) == (4 * S, 2 * S, ["wait_batch"])
    (main,) = stalls["trainer"]
    assert (main.start_ns, main.length_ns, main.phases) == (4 * S, 2 * S, [""])


def test_one_roles_window_phase_names_the_same_phase_in_a_role_without_one(tmp_path):
    # The learner's profiler names "iteration"; the actors' set none but run an "iteration" too.
    learner = SimWorker("learner", window_phase="iteration")
    actor = SimWorker("actor")
    for worker in (learner, actor):
        for _ in range(10):
            with worker.phase("iteration"), worker.phase("work"):
                worker.work(3 * MS)
            with worker.phase("poll"):  # more entries than the loop: not what ITERATIONS shows
                worker.work(10 * US)
            with worker.phase("poll"):
                worker.work(10 * US)
        worker.write(tmp_path)
    lines = render(load_run(tmp_path)).splitlines()
    assert "ITERATIONS  phase iteration (window_phase)" in lines


def _loop_of(tmp_path, worker) -> str:
    worker.write(tmp_path)
    run = load_run(tmp_path)
    chosen = role_loop(run.roles[worker.role], None)
    assert chosen is not None
    return chosen[0]


def test_the_loop_is_the_child_holding_the_epoch_even_when_starting_workers_takes_half(tmp_path):
    # Each epoch starts its DataLoader's workers (60 % of it), then runs 8 steps (35 %) and a
    # checkpoint (5 %): the loop is still epoch/step.
    worker = SimWorker("trainer")
    for _ in range(2):
        with worker.phase("epoch"):
            worker.work(60 * MS)
            for _ in range(8):
                with worker.phase("step"):
                    worker.work(35 * MS // 8)
            with worker.phase("checkpoint"):
                worker.work(5 * MS)
    assert _loop_of(tmp_path, worker) == "epoch/step"


def test_a_brief_child_entered_often_is_not_the_loop(tmp_path):
    # A log call inside each iteration, 5 of them taking 10 % in all: the loop is the iteration.
    worker = SimWorker("actor")
    for _ in range(20):
        with worker.phase("iteration"):
            worker.work(9 * MS)
            for _ in range(5):
                with worker.phase("log"):
                    worker.work(MS // 5)
    assert _loop_of(tmp_path, worker) == "iteration"
