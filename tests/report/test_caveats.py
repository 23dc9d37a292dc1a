"""CAVEATS: every way a worker can fall short is named, derived from the files at report time."""

from lp_report_builders import MS, S, SimWorker, actor_loop

from lineprofiler.report.read import merge
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render.blocks import render
from lineprofiler.runfiles import workerfile


def busy_worker(role="actor", seconds=120, **kwargs):
    worker = SimWorker(role, **kwargs)
    actor_loop(worker, 10, mcts_ns=5 * MS, env_ns=1 * MS)
    worker.wait(seconds * S - worker.clock_ns)
    return worker


def caveats(run_dir):
    lines = render(load_run(run_dir)).splitlines()
    if "CAVEATS" not in lines:
        return []
    return [line[4:] for line in lines[lines.index("CAVEATS") + 2:]]


def test_a_clean_run_has_no_caveats(tmp_path):
    busy_worker(rank=0).write(tmp_path)
    busy_worker(rank=1).write(tmp_path)
    assert caveats(tmp_path) == []


def test_a_worker_that_stopped_writing_well_before_the_end_is_stale(tmp_path):
    busy_worker(rank=0, seconds=600).write(tmp_path)
    # Its last periodic snapshot was 8 minutes before the run's last flush: 96 intervals of 5 s.
    busy_worker(rank=1, seconds=600).write(tmp_path, status="running", flush_at_ns=120 * S)
    (line,) = caveats(tmp_path)
    assert line.startswith("actor pid ")
    assert "(rank 1) stopped writing 8m 00s before the run ended (last snapshot 2026-08-13 22:43:00 UTC)" in line


def test_staleness_threshold_is_three_intervals_and_at_least_ten_seconds(tmp_path):
    end = 600 * S
    ok = busy_worker(rank=0, seconds=600)
    ok.write(tmp_path)
    run = load_run(tmp_path)
    assert merge.STALE_INTERVALS == 3 and merge.STALE_MIN_NS == 10 * S
    w = run.workers[0]
    for interval_s, behind_s, stale in [(5.0, 14, False), (5.0, 16, True), (1.0, 9, False), (1.0, 11, True),
                                        (60.0, 170, False), (60.0, 190, True)]:
        w.interval_s = interval_s
        w.status = "running"
        w.last_flush_ns = w.start_ns + end - behind_s * S
        assert merge.is_stale(w, w.start_ns + end) is stale, (interval_s, behind_s)
    w.status = "exited"
    assert not merge.is_stale(w, w.start_ns + end + 3600 * S)


def test_a_worker_killed_before_any_data_is_named_and_still_counted(tmp_path):
    busy_worker(rank=0).write(tmp_path)
    SimWorker("actor", rank=1).write(tmp_path, status="started")
    run = load_run(tmp_path)
    assert len(run.workers) == 2
    report = render(run)
    assert "ACTOR  (2 processes, 1 without data, imbalance 1.00)" in report
    (line,) = caveats(tmp_path)
    assert line.endswith("(rank 1) was killed before any data: only its start file exists (started 2m 00s before "
                         "the run's last flush)")


def test_a_worker_that_just_started_is_not_called_killed(tmp_path):
    busy_worker(rank=0, seconds=4).write(tmp_path, status="running")
    SimWorker("actor", rank=1).write(tmp_path, status="started")
    lines = caveats(tmp_path)
    assert any(line.startswith("1 worker(s) had written no data yet (just started)") for line in lines)
    assert not any("killed before any data" in line for line in lines)


def test_failed_snapshots_caps_repairs_errors_and_signals(tmp_path):
    busy_worker(rank=0).write(
        tmp_path, snapshot_failures=3, last_error="[Errno 28] No space left on device"
    )
    busy_worker(rank=1).write(
        tmp_path, caps={"max_paths": 10000, "paths_overflowed": 1234, "max_counters": 100, "counters_overflowed": 7}
    )
    busy_worker(rank=2).write(tmp_path, mismatched_exits=5)
    busy_worker(rank=3).write(tmp_path, errors=["snapshot thread: MemoryError", "second"])
    busy_worker(rank=4).write(tmp_path, status="signalled", signal="SIGUSR1")
    lines = caveats(tmp_path)
    text = "\n".join(lines)
    assert "(rank 0): 3 snapshot write(s) failed (last error: [Errno 28] No space left on device); its file holds " \
           "its last successful snapshot" in text
    assert "(rank 1) hit the phase-path cap of 10,000: 1,234 entries went to the overflow node" in text
    assert "(rank 1) hit the counter cap of 100: 7 counts went to the overflow counter" in text
    assert "5 mismatched phase exit(s) repaired" in text and "(rank 2): times around them" in text
    assert "(rank 3) recorded 2 profiler error(s); first: snapshot thread: MemoryError" in text
    assert "1 worker(s) flushed on a signal (SIGUSR1): actor pid" in text


def test_unfinished_workers_and_duplicate_ranks(tmp_path):
    busy_worker(rank=0).write(tmp_path, status="running")
    busy_worker(rank=0).write(tmp_path)
    lines = caveats(tmp_path)
    assert any(line.startswith("1 worker(s) never wrote a final flush") for line in lines)
    assert any(line.startswith("rank(s) 0 appear in more than one worker file") for line in lines)


def test_an_unreadable_file_costs_its_worker_not_the_run(tmp_path):
    busy_worker(rank=0).write(tmp_path)
    bad = busy_worker(rank=1).write(tmp_path)
    bad.write_bytes(bad.read_bytes()[:100])
    run = load_run(tmp_path)
    assert len(run.workers) == 1
    (line,) = caveats(tmp_path)
    rel = bad.relative_to(tmp_path)
    assert line == f"unreadable worker file (its process is missing from every total): {rel}: corrupt or " \
                   f"truncated JSON (JSONDecodeError)"


def test_a_file_from_a_newer_schema_is_named(tmp_path):
    busy_worker(rank=0).write(tmp_path)
    newer = busy_worker(rank=1)
    path = newer.path_in(tmp_path)
    document = newer.document()
    document["schema_version"] = workerfile.SCHEMA_VERSION + 1
    workerfile.write_worker_file(path, document)
    (line,) = caveats(tmp_path)
    assert "written with schema version 2, this lineprofiler reads up to 1; upgrade lineprofiler" in line


# A host folder that cannot be listed: test_cli.py's test_unlistable_host_folder, with a folder the
# OS really refuses to list (root is run in a user namespace where permission bits bind it).


def test_many_workers_with_the_same_caveat_get_one_line(tmp_path):
    busy_worker(rank=0, seconds=600).write(tmp_path)
    for rank in range(1, 8):
        busy_worker(rank=rank, seconds=600).write(tmp_path, status="running", flush_at_ns=100 * S)
    lines = caveats(tmp_path)
    (line,) = [line for line in lines if "stopped writing" in line]
    assert line.startswith("7 workers stopped writing well before the run ended; their numbers stop at their last "
                           "snapshot: actor pid ")
    assert " and 2 more; the first: actor pid " in line and "stopped writing 8m 20s before the run ended" in line
