"""Merging worker files: attempts, processes, hosts, exact histograms, counters, imbalance."""

import json

import pytest
from lp_report_builders import MS, T0, S, SimWorker, actor_loop, expected_quantile

from lineprofiler.report.read import reading
from lineprofiler.report.read.merge import ReportError, load_run
from lineprofiler.runfiles import workerfile


@pytest.fixture
def run_dir(tmp_path):
    return tmp_path / "profile"


def test_histograms_merge_exactly_and_quantiles_match_one_process_recording_everything(run_dir):
    durations = [[3 * MS, 5 * MS, 40 * MS], [7 * MS, 7 * MS, 90 * MS, 1 * MS], [11 * MS]]
    reference = SimWorker("ref")
    for i, chunk in enumerate(durations):
        worker = SimWorker("actor", host=f"node{i}")
        for d in chunk:
            for w in (worker, reference):
                with w.phase("step"):
                    w.work(d)
        worker.write(run_dir)
    run = load_run(run_dir)
    merged = run.roles["actor"].phases["step"]
    expected = reference.nodes["step"]
    assert merged.hist == expected.hist
    assert merged.entries == 8
    assert merged.wall_ns == sum(map(sum, durations))
    assert (merged.min_ns, merged.max_ns) == (1 * MS, 90 * MS)
    recorded = [d for chunk in durations for d in chunk]
    for q in (0.5, 0.95, 0.99):
        assert merged.quantile(q) == pytest.approx(expected_quantile(recorded, q), rel=1e-12)


def test_counters_are_summed_per_phase_and_name(run_dir):
    for sims in (64, 32):
        worker = SimWorker("actor")
        actor_loop(worker, 10, mcts_ns=1 * MS, env_ns=1 * MS, sims=sims)
        worker.count("episodes", 3)
        worker.write(run_dir)
    role = load_run(run_dir).roles["actor"]
    assert role.counters[("iteration/self_play/mcts", "mcts_simulations")] == 10 * 64 + 10 * 32
    assert role.counters[("", "episodes")] == 6


def test_processes_are_counted_by_file_not_pid_and_hosts_and_ranks_are_listed(run_dir):
    # The same pid on two nodes is two processes.
    for host, rank in (("node07", 0), ("node08", 1)):
        worker = SimWorker("actor", host=host, pid=4242, rank=rank)
        actor_loop(worker, 2, mcts_ns=1 * MS, env_ns=1 * MS)
        worker.write(run_dir)
    run = load_run(run_dir)
    assert len(run.workers) == 2
    assert run.hosts == ["node07", "node08"]
    assert run.ranks == [0, 1]
    assert len(run.roles["actor"].workers) == 2


def test_imbalance_is_busiest_over_mean_of_top_level_phase_time(run_dir):
    for busy_s in (10, 10, 16):
        worker = SimWorker("actor")
        with worker.phase("iteration"):
            with worker.phase("inner"):
                worker.work(busy_s * S)
        worker.wait(5 * S)  # outside any phase: not busy
        worker.write(run_dir)
    # A worker killed before any data is not part of the mean.
    SimWorker("actor").write(run_dir, status="started")
    role = load_run(run_dir).roles["actor"]
    assert [w.busy_ns for w in role.data_workers] == [10 * S, 10 * S, 16 * S]
    assert role.mean_busy_ns == 12 * S
    assert role.imbalance == pytest.approx(16 / 12)
    assert role.slowest.busy_ns == 16 * S
    assert len(role.workers) == 4


def test_newest_attempt_is_merged_and_superseded_ones_are_named_not_merged(run_dir):
    old = SimWorker("actor", run_id="20260813T2010-aa12bc", start_unix_ns=T0 - 3600 * S)
    actor_loop(old, 100, mcts_ns=1 * MS, env_ns=1 * MS)
    old.write(run_dir)
    # A requeue of the same run id with a higher attempt number is another attempt too.
    requeued = SimWorker("actor", run_id="20260813T2241-471c94", attempt=1, start_unix_ns=T0 + 7200 * S)
    actor_loop(requeued, 7, mcts_ns=1 * MS, env_ns=1 * MS)
    requeued.write(run_dir)
    first = SimWorker("actor", run_id="20260813T2241-471c94", attempt=0, start_unix_ns=T0)
    actor_loop(first, 50, mcts_ns=1 * MS, env_ns=1 * MS)
    first.write(run_dir)

    run = load_run(run_dir)
    assert (run.run_id, run.attempt) == ("20260813T2241-471c94", 1)
    assert run.name == "20260813T2241-471c94 #1"
    assert run.roles["actor"].phases["iteration"].entries == 7
    assert [(a.run_id, a.attempt) for a in run.superseded] == [
        ("20260813T2241-471c94", 0),
        ("20260813T2010-aa12bc", 0),
    ]
    assert [a.files for a in run.superseded] == [1, 1]


def test_an_unreadable_file_of_a_superseded_attempt_is_not_a_caveat_of_the_newest(run_dir):
    old = SimWorker("actor", run_id="oldrun", start_unix_ns=T0 - 3600 * S)
    old.write(run_dir)
    new = SimWorker("actor", run_id="newrun")
    actor_loop(new, 3, mcts_ns=1 * MS, env_ns=1 * MS)
    new.write(run_dir)
    folder = workerfile.worker_dir(run_dir, "node07")
    (folder / workerfile.worker_file_name("oldrun", 7, "0000abcd")).write_text("{")
    (folder / workerfile.worker_file_name("newrun", 8, "0000abce")).write_text("{")
    run = load_run(run_dir)
    assert [u.path.name for u in run.unreadable] == [workerfile.worker_file_name("newrun", 8, "0000abce")]


def test_merge_never_parses_samples_and_rereads_them_on_access(run_dir):
    worker = SimWorker("actor")
    actor_loop(worker, 3, mcts_ns=1 * MS, env_ns=1 * MS)
    # Inline rows, more than the reader parses along with the rest (SMALL_SAMPLES_BYTES).
    samples = {"columns": ["t", "rss"], "t": list(range(20_000)), "rss": list(range(20_000))}
    path = worker.write(run_dir, samples=samples)

    document = load_run(run_dir).workers[0].document
    assert document.samples_on_disk
    assert "samples" in document
    assert document["samples"] == samples and document.get("samples") == samples

    # Damage inside the samples does not cost the worker's phases (merge stops before them);
    # it surfaces, as a WorkerFileError, only when a block reads the samples.
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"19999]", b"19999"))
    run = load_run(run_dir)
    assert run.unreadable == [] and run.roles["actor"].phases["iteration"].entries == 3
    with pytest.raises(workerfile.WorkerFileError, match="corrupt or truncated"):
        run.workers[0].document["samples"]
    # A file that vanished after merging is a WorkerFileError too, never another exception.
    path.unlink()
    with pytest.raises(workerfile.WorkerFileError):
        run.workers[0].document["samples"]


def test_files_without_the_samples_last_layout_are_read_whole(run_dir, monkeypatch):
    worker = SimWorker("actor")
    actor_loop(worker, 3, mcts_ns=1 * MS, env_ns=1 * MS)
    samples = {"t": list(range(2000))}
    path = worker.path_in(run_dir)
    document = worker.document(samples=samples)
    path.write_text(json.dumps(document))  # an older writer: samples first, no layout

    small = load_run(run_dir).workers[0].document
    assert not small.samples_on_disk and small["samples"] == samples
    monkeypatch.setattr(reading, "LARGE_FILE_BYTES", 1000)
    large = load_run(run_dir).workers[0].document
    assert large.samples_on_disk and large["samples"] == samples
    monkeypatch.setattr(reading, "LARGE_FILE_BYTES", 1 << 30)
    lean = load_run(run_dir, no_samples=True).workers[0].document
    assert lean.samples_on_disk and lean["samples"] == samples


def test_documents_of_workers_are_kept_with_their_paths(run_dir):
    worker = SimWorker("learner", host="gpu-node")
    with worker.phase("checkpoint", io=True):
        worker.work(5 * MS)
    path = worker.write(run_dir, gpu={"devices": []})
    (w,) = load_run(run_dir).workers
    assert w.path == path
    assert w.document["gpu"] == {"devices": []}
    assert w.document["phases"][0]["io"] is True
    assert json.loads(path.read_bytes())["identity"]["uuid"] == w.uuid


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: None, "no such directory"),
        (lambda d: d.write_text("x"), "not a directory"),
        (lambda d: d.mkdir(), "no worker files"),
        (lambda d: (d / "workers" / "node07").mkdir(parents=True), "no worker files"),
    ],
)
def test_nothing_to_report_is_one_report_error(run_dir, setup, message):
    setup(run_dir)
    with pytest.raises(ReportError, match=message):
        load_run(run_dir)
