"""The report blocks: I/O BY PHASE, sampled I/O and MEMORY, over worker files and sample files.

Every run is written by the real writers (worker files, sample files) and read back with
``load_run``, as ``lineprofiler report`` reads it.
"""

from __future__ import annotations

import sys
from array import array
from pathlib import Path

import pytest
from lp_report_builders import SimWorker

from lineprofiler.accounting import _sampling_testing, sampling
from lineprofiler.report.compute.blocks import RenderOptions, resources
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import text_blocks
from lineprofiler.runfiles.samplefile import BASE_COLUMNS, SampleTable

S = 1_800_000_000_000_000_000  # the run's start, unix ns
STEP = 12 * 10**9  # 12 s between rows
ROWS = 11  # 0 .. 120 s


def _worker(run_dir, role, pid, columns):
    """A worker file and its sample file, written by the real writers; returns the worker file."""
    worker = SimWorker(role, host="node1", pid=pid, start_unix_ns=S)
    worker.wait((ROWS - 1) * STEP)
    samples = worker.write_samples(run_dir, columns, interval_s=STEP / 1e9)
    return worker.write(run_dir, samples=samples)


def _columns(step_fn):
    """ROWS rows of every base column; step_fn(k, row) fills in the cumulative values of row k."""
    rows = []
    for k in range(ROWS):
        row = dict.fromkeys(BASE_COLUMNS, 0)
        step_fn(k, row)
        rows.append(row)
    return {name: [row[name] for row in rows] for name in BASE_COLUMNS if name not in ("t_ns", "flags")}


@pytest.fixture
def run(tmp_path):
    """Two workers with known arithmetic.

    learner: reads 500 kB a row from the page cache and 100 kB from disk in interval 3->4,
    writes 1 MB in interval 2->3 under phase 5; the profiler wrote 4096 B (own) in 5->6; phase
    5 is open for rows 0-4, none after. RSS 100 MB + 1 MB a row.
    actor: no phase ever; writes 2.6 MB in interval 7->8; row 4 unreadable (and its counters
    jump by a terabyte across it); RSS 50 MB, unreadable at row 4.
    """

    def learner(k, row):
        row["phase"] = 5 if k <= 4 else -1
        row["rss_bytes"] = 100_000_000 + k * 1_000_000
        row["rchar"] = 7 + 500_000 * k
        row["read_bytes"] = 100_000 if k >= 4 else 0
        own = 4096 if k >= 6 else 0
        row["wchar"] = row["write_bytes"] = (1_000_000 if k >= 3 else 0) + own
        row["own_wchar"] = row["own_write_bytes"] = own

    def actor(k, row):
        row["phase"] = -1
        row["rss_bytes"] = -1 if k == 4 else 50_000_000
        tera = 10**12 if k > 4 else 0
        for name in ("rchar", "wchar", "read_bytes", "write_bytes"):
            row[name] = -1 if k == 4 else tera
        if k >= 8:
            row["wchar"] += 2_600_000
            row["write_bytes"] += 2_600_000

    _worker(tmp_path, "learner", 11, _columns(learner))
    _worker(tmp_path, "actor", 22, _columns(actor))
    return load_run(tmp_path)


def test_sampled_io_block(run):
    lines = text_blocks.render_io(run, RenderOptions())
    assert lines[:2] == ["I/O", text_blocks.RULE]
    # Seed layout: label to 26, value right-aligned to 42, rate to 58.
    assert lines[2] == "Read (from disk)                  100.0 kB        8.3 kB/s"
    assert lines[3] == "Read (from page cache)              4.9 MB"
    assert lines[4] == "Write                               3.6 MB      150.0 kB/s"
    assert lines[5].startswith("  write ") and lines[5].endswith("  peak 216.7 kB/s")
    spark = lines[5][len("  write ") : len("  write ") + text_blocks.SPARK_WIDTH]
    assert spark.count("█") >= 1 and spark.strip() and len(lines[5]) == 8 + 42 + len("  peak 216.7 kB/s")
    # (no phase open): learner's rows 5-9 (2.5 MB from cache) + actor's 2.6 MB, of 8.6 MB.
    assert "  (no phase open) 59.3% of these bytes" in lines
    assert "  dropped intervals 2 of 20 (2 next to a failed read); their bytes are not counted" in lines
    assert "  excluded: the profiler's own I/O, 4.1 kB written to disk, 4.1 kB through write(), 0 B read" in lines


def test_memory_block(run):
    lines = text_blocks.render_memory(run, RenderOptions())
    assert lines[:2] == ["MEMORY (RSS, sampled)", text_blocks.RULE]
    # Eleven rows: past the warm-up (the first third of the span) seven are left, fewer than a
    # trend needs, so neither process gets a rate (the learner's 1 MB every 12 s is not
    # extrapolated from them). test_memory_trend_past_the_warm_up has one.
    assert "actor  x1                          50.0 MB             n/a" in lines
    assert "learner  x1                       110.0 MB             n/a" in lines
    total = next(line for line in lines if line.startswith("all processes"))
    assert total.startswith("all processes (PSS)               160.0 MB  ")  # RSS stands in: not measured
    # A level, so scaled from its lowest to its highest: the learner's growth shows as a ramp.
    spark = total[len("all processes (PSS)               160.0 MB  ") :]
    assert len(spark) == resources.MEMORY_BINS and spark[0] == "▁" and spark[-1] == "█"
    assert list(spark) == sorted(spark, key=text_blocks.SPARK.index)
    assert "  largest: learner pid 11 on node1, 110.0 MB at 2m" in lines


def test_memory_trend_past_the_warm_up():
    """A process that warms up (+110 MB in its first 40 s) then grows 1 MB every 12 s: the trend
    is the growth after the warm-up, 300 MB an hour, not the warm-up's slope."""
    rows = 31  # 0 .. 360 s: 20 rows past the first third
    t = [k * STEP for k in range(rows)]
    rss = [100_000_000 + min(k, 4) * 27_500_000 + k * 1_000_000 for k in range(rows)]
    rows_major = array("q", [v for row in zip(t, rss, strict=True) for v in row])
    table = SampleTable(Path("learner.samples"), ("t_ns", "rss_bytes"), rows_major, STEP, 0, 0, 11)
    assert resources.rss_trend(table) == pytest.approx(1_000_000 / 12)


def _io_phase(worker, path, read, write, rchar, wall_ns, **io):
    """Ten entries of ``path`` lasting ``wall_ns`` in all, with these exact I/O bytes."""
    parts = path.split("/")
    for _ in range(10):
        with worker.phase(parts[0], io=len(parts) == 1):
            if len(parts) == 1:
                worker.work(wall_ns // 10)
            else:
                with worker.phase(parts[1], io=True):
                    worker.work(wall_ns // 10)
    worker.io_bytes[path] = {"read_bytes": read, "write_bytes": write, "rchar": rchar, **io}


def test_io_by_phase_block_in_the_seed_layout(tmp_path):
    a = SimWorker("actor")
    _io_phase(a, "iteration/load_batch", 300_000_000, 0, 600_000_000, 1_000_000_000)
    _io_phase(a, "iteration/checkpoint", 0, 40_000_000, 0, 50_910_000)
    a.write(tmp_path / "one")
    b = SimWorker("actor")
    _io_phase(b, "iteration/load_batch", 108_700_000, 0, 168_000_000, 247_558_000, failed=2)
    b.write(tmp_path / "one")
    lines = text_blocks.render_io_by_phase(load_run(tmp_path / "one"), RenderOptions())
    assert lines == [
        "I/O BY PHASE (measured exactly)",
        text_blocks.RULE,
        "  iteration/load_batch      r   408.7 MB   w        0 B    327.6 MB/s",
        "                            + 359.3 MB read from page cache",
        "                            ! 2 entries not measured (counter read failed)",
        "  iteration/checkpoint      r        0 B   w    40.0 MB    785.7 MB/s",
    ]
    # Several roles with io phases: each line says whose.
    a.write(tmp_path / "two")
    c = SimWorker("learner")
    _io_phase(c, "save", 0, 1000, 0, 10**9)
    c.write(tmp_path / "two")
    lines = text_blocks.render_io_by_phase(load_run(tmp_path / "two"), RenderOptions())
    assert any(line.startswith("  learner: save") for line in lines)


def test_no_samples_opens_no_sample_file(run):
    opened = []
    armed = [True]

    def hook(event, args):
        if armed[0] and event == "open" and str(args[0]).endswith(".samples"):
            opened.append(args[0])

    sys.addaudithook(hook)  # cannot be removed: disarmed below
    try:
        options = RenderOptions(no_samples=True)
        assert text_blocks.render_io(run, options) == []
        assert text_blocks.render_memory(run, options) == []
        assert opened == []
        text_blocks.render_io(run, RenderOptions())
        assert opened  # the hook does see the files when they are read
    finally:
        armed[0] = False


def test_missing_and_truncated_sample_files_are_caveats(run):
    learner, actor = sorted(run.workers, key=lambda w: w.pid)
    learner.path.with_suffix(".samples").unlink()
    with open(actor.path.with_suffix(".samples"), "ab") as handle:
        handle.write(b"\x01" * 21)
    options = RenderOptions()
    lines = text_blocks.render_io(run, options)
    assert "Write                               2.6 MB      216.7 kB/s" in lines
    assert text_blocks.render_memory(run, options)[3].startswith("actor  x1 ")
    missing, partial = (w.path.with_suffix(".samples").relative_to(run.run_dir) for w in (learner, actor))
    assert sorted(options.caveats) == sorted([
        f"{missing}: sample file is missing; learner pid 11 on node1 is left out of I/O and MEMORY",
        f"{partial}: partial last chunk ignored (21 bytes)",
    ])


def test_unavailable_samples_say_why(tmp_path):
    s = sampling.ResourceSampler(tmp_path, source="off")
    worker = SimWorker("r")
    document = worker.document()
    s.contribute(document)
    assert document["samples"]["file"] is None
    assert document["samples"]["unavailable_reason"] == "resource sampling was turned off"
    worker.write(tmp_path, samples=document["samples"])
    run = load_run(tmp_path)
    lines = text_blocks.render_io(run, RenderOptions())
    assert lines[2] == "  not measured in 1 of 1 processes: resource sampling was turned off"
    assert text_blocks.render_memory(run, RenderOptions())[2].startswith("  not measured in 1 of 1")


def test_no_proc_and_no_psutil_is_a_reason_not_an_error(tmp_path, monkeypatch):
    # As on macOS without psutil: no /proc/self, and psutil cannot be imported.
    monkeypatch.setitem(sys.modules, "psutil", None)
    with _sampling_testing.no_proc():
        s = sampling.ResourceSampler(tmp_path)
    assert s.source is None and "psutil is not installed" in s.unavailable_reason
    s.start()
    s.stop()
    doc = {"identity": {"role": "r", "pid": 1, "host": "h", "run_id": "x", "uuid": "00000000"}}
    s.contribute(doc)
    s.close()
    assert "no /proc" in doc["samples"]["unavailable_reason"]


def test_no_proc_with_psutil_falls_back_to_psutil(tmp_path):
    pytest.importorskip("psutil")
    with _sampling_testing.no_proc():
        s = sampling.ResourceSampler(tmp_path, interval_s=0.02)
    assert s.source == "psutil"
    s.start()
    assert s.running
    s.stop()
    doc = {"identity": {"role": "r", "pid": 1, "host": "h", "run_id": "x", "uuid": "00000000"}}
    s.contribute(doc)
    s.close()
    samples = doc["samples"]
    assert samples["source"] == "psutil" and samples["rows"] >= 2
    assert samples["phase_unavailable_reason"]


def test_workers_without_samples_objects_show_no_blocks(tmp_path):
    SimWorker("r").write(tmp_path, samples=None)
    run = load_run(tmp_path)
    assert text_blocks.render_io(run, RenderOptions()) == []
    assert text_blocks.render_memory(run, RenderOptions()) == []
    assert text_blocks.render_io_by_phase(run, RenderOptions()) == []


def test_sample_file_names_cannot_leave_the_worker_folder(tmp_path):
    worker = SimWorker("r")
    samples = worker.write_samples(tmp_path, {"rss_bytes": [1, 2]})
    samples["file"] = "../../secret.samples"
    worker.write(tmp_path, samples=samples)
    opened = []
    armed = [True]

    def hook(event, args):
        if armed[0] and event == "open":
            opened.append(str(args[0]))

    sys.addaudithook(hook)
    try:
        lines = text_blocks.render_io(load_run(tmp_path), RenderOptions())
    finally:
        armed[0] = False
    assert not any("secret" in name for name in opened)
    assert lines[2] == "  not measured in 1 of 1 processes: no samples were written"
