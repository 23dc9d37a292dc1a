"""The report blocks: I/O BY PHASE, sampled I/O and MEMORY, over worker files and sample files."""

from __future__ import annotations

import sys
from array import array
from types import SimpleNamespace

import pytest

from lineprofiler.accounting import sampling
from lineprofiler.report.blocks import resources
from lineprofiler.runfiles.samplefile import BASE_COLUMNS, FLAG_SEGMENT_START, SampleWriter

S = 1_800_000_000_000_000_000  # the run's start, unix ns
STEP = 12 * 10**9  # 12 s between rows
ROWS = 11  # 0 .. 120 s
COL = {name: i for i, name in enumerate(BASE_COLUMNS)}


def _worker(folder, name, role, pid, rows):
    """A worker document and its sample file, written by the real writer."""
    data = array("q")
    for row in rows:
        data.extend(row)
    folder.mkdir(parents=True, exist_ok=True)
    SampleWriter(folder / f"{name}.samples", BASE_COLUMNS, STEP, monotonic_ref_ns=0, unix_ref_ns=S, pid=pid).append(
        data.tobytes()
    )
    doc = {
        "identity": {"role": role, "pid": pid, "host": "node1"},
        "times": {"start_unix_ns": S, "last_flush_unix_ns": S + (ROWS - 1) * STEP},
        "phases": [],
        "samples": {"file": f"{name}.samples", "interval_s": STEP / 1e9, "unavailable_reason": None},
    }
    return doc, folder / f"{name}.json"


def _rows(step_fn):
    """ROWS rows; step_fn(k, row) fills in the cumulative values of row k."""
    out = []
    for k in range(ROWS):
        row = [0] * len(BASE_COLUMNS)
        row[COL["t_ns"]] = k * STEP
        row[COL["flags"]] = FLAG_SEGMENT_START if k == 0 else 0
        step_fn(k, row)
        out.append(row)
    return out


@pytest.fixture
def run(tmp_path):
    """Two workers with known arithmetic.

    learner: reads 500 KB a row from the page cache and 100 KB from disk in interval 3->4,
    writes 1 MB in interval 2->3 under phase 5; the profiler wrote 4096 B (own) in 5->6; phase
    5 is open for rows 0-4, none after. RSS 100 MB + 1 MB a row.
    actor: no phase ever; writes 2.6 MB in interval 7->8; row 4 unreadable (and its counters
    jump by a terabyte across it); RSS 50 MB, unreadable at row 4.
    """

    def learner(k, row):
        row[COL["phase"]] = 5 if k <= 4 else -1
        row[COL["rss_bytes"]] = 100_000_000 + k * 1_000_000
        row[COL["rchar"]] = 7 + 500_000 * k
        row[COL["read_bytes"]] = 100_000 if k >= 4 else 0
        own = 4096 if k >= 6 else 0
        row[COL["wchar"]] = row[COL["write_bytes"]] = (1_000_000 if k >= 3 else 0) + own
        row[COL["own_wchar"]] = row[COL["own_write_bytes"]] = own

    def actor(k, row):
        row[COL["phase"]] = -1
        row[COL["rss_bytes"]] = -1 if k == 4 else 50_000_000
        tera = 10**12 if k > 4 else 0
        for name in ("rchar", "wchar", "read_bytes", "write_bytes"):
            row[COL[name]] = -1 if k == 4 else tera
        if k >= 8:
            row[COL["wchar"]] += 2_600_000
            row[COL["write_bytes"]] += 2_600_000

    folder = tmp_path / "workers" / "node1"
    return [_worker(folder, "w_a", "learner", 11, _rows(learner)), _worker(folder, "w_b", "actor", 22, _rows(actor))]


def test_sampled_io_block(run):
    lines = resources.render_io(run, SimpleNamespace(no_samples=False))
    assert lines[:2] == ["I/O", resources.RULE]
    # Seed layout: label to 26, value right-aligned to 42, rate to 58.
    assert lines[2] == "Read (from disk)                  100.0 KB        8.3 KB/s"
    assert lines[3] == "Read (from page cache)              4.9 MB"
    assert lines[4] == "Write                               3.6 MB      150.0 KB/s"
    assert lines[5].startswith("  write ") and lines[5].endswith("  peak 216.7 KB/s")
    spark = lines[5][len("  write ") : len("  write ") + resources.SPARK_WIDTH]
    assert spark.count("█") >= 1 and spark.strip() and len(lines[5]) == 8 + 42 + len("  peak 216.7 KB/s")
    # (no phase open): learner's rows 5-9 (2.5 MB from cache) + actor's 2.6 MB, of 8.6 MB.
    assert "  (no phase open) 59.3% of these bytes" in lines
    assert "  dropped intervals 2 of 20 (2 next to a failed read); their bytes are not counted" in lines
    assert "  excluded: the profiler's own I/O, 4.1 KB written to disk, 4.1 KB through write(), 0 B read" in lines


def test_memory_block(run):
    lines = resources.render_memory(run, None)
    assert lines[:2] == ["MEMORY (RSS, sampled)", resources.RULE]
    assert "actor  x1                          50.0 MB          +0 B/h" in lines
    # 1 MB every 12 s is 300 MB an hour.
    assert "learner  x1                       110.0 MB     +300.0 MB/h" in lines
    total = next(line for line in lines if line.startswith("all processes"))
    assert total.startswith("all processes                     160.0 MB  ")
    # A level, so scaled from its lowest to its highest: the learner's growth shows as a ramp.
    spark = total[len("all processes                     160.0 MB  ") :]
    assert len(spark) == resources.MEMORY_BINS and spark[0] == "▁" and spark[-1] == "█"
    assert list(spark) == sorted(spark, key=resources.SPARK.index)
    assert "  largest: learner pid 11 on node1, 110.0 MB at 2m" in lines


def test_io_by_phase_block_in_the_seed_layout():
    def phase(path, read, write, rchar, wall_ns, **io):
        return {"path": path, "entries": 10, "wall_ns": wall_ns, "io": True,
                "io_bytes": {"read_bytes": read, "write_bytes": write, "rchar": rchar, **io}}

    doc_a = {"identity": {"role": "actor"}, "phases": [
        phase("iteration/load_batch", 300_000_000, 0, 600_000_000, 1_000_000_000),
        phase("iteration/checkpoint", 0, 40_000_000, 0, 50_910_000),
        {"path": "iteration", "entries": 3, "wall_ns": 5, "io_bytes": None},
    ]}
    doc_b = {"identity": {"role": "actor"}, "phases": [
        phase("iteration/load_batch", 108_700_000, 0, 168_000_000, 247_558_000, failed=2),
    ]}
    lines = resources.render_io_by_phase([(doc_a, None), (doc_b, None)], None)
    assert lines == [
        "I/O BY PHASE (measured exactly)",
        resources.RULE,
        "  iteration/load_batch      r   408.7 MB   w        0 B    327.6 MB/s",
        "                            + 359.3 MB read from page cache",
        "                            ! 2 entries not measured (counter read failed)",
        "  iteration/checkpoint      r        0 B   w    40.0 MB    785.7 MB/s",
    ]
    # Several roles with io phases: each line says whose.
    doc_c = {"identity": {"role": "learner"}, "phases": [phase("save", 0, 1000, 0, 10**9)]}
    lines = resources.render_io_by_phase([(doc_a, None), (doc_c, None)], None)
    assert any(line.startswith("  learner: save") for line in lines)


def test_no_samples_opens_no_sample_file(run):
    opened = []
    armed = [True]

    def hook(event, args):
        if armed[0] and event == "open" and str(args[0]).endswith(".samples"):
            opened.append(args[0])

    sys.addaudithook(hook)  # cannot be removed: disarmed below
    try:
        options = SimpleNamespace(no_samples=True)
        assert resources.render_io(run, options) == []
        assert resources.render_memory(run, options) == []
        assert opened == []
        resources.render_io(run, SimpleNamespace(no_samples=False))
        assert opened  # the hook does see the files when they are read
    finally:
        armed[0] = False


def test_missing_and_truncated_sample_files_are_caveats(run):
    (doc_a, path_a), (doc_b, path_b) = run
    path_a.with_name("w_a.samples").unlink()
    with open(path_b.with_name("w_b.samples"), "ab") as handle:
        handle.write(b"\x01" * 21)
    lines = resources.render_io([(doc_a, path_a), (doc_b, path_b)], None)
    assert any(line.startswith("  ! ") and "w_a.samples: sample file is missing" in line for line in lines)
    assert any("w_b.samples: partial last row ignored (21 bytes)" in line for line in lines)
    assert "Write                               2.6 MB      216.7 KB/s" in lines


def test_unavailable_samples_say_why(tmp_path):
    s = sampling.ResourceSampler(tmp_path, source="off")
    doc = {"identity": {"role": "r", "pid": 1, "host": "h", "run_id": "x", "uuid": "00000000"}, "times": {}}
    s.contribute(doc)
    assert doc["samples"]["file"] is None
    assert doc["samples"]["unavailable_reason"] == "resource sampling was turned off"
    lines = resources.render_io([(doc, tmp_path / "w.json")], None)
    assert lines[2] == "  not measured in 1 of 1 processes: resource sampling was turned off"
    assert resources.render_memory([(doc, tmp_path / "w.json")], None)[2].startswith("  not measured in 1 of 1")


def test_no_proc_and_no_psutil_is_a_reason_not_an_error(tmp_path, monkeypatch):
    # As on macOS without psutil: no /proc/self, and psutil cannot be imported.
    monkeypatch.setattr(sampling, "_PROC_SELF", str(tmp_path / "no-proc"))
    monkeypatch.setitem(sys.modules, "psutil", None)
    s = sampling.ResourceSampler(tmp_path)
    assert s.source is None and "psutil is not installed" in s.unavailable_reason
    s.start()
    s.stop()
    doc = {"identity": {"role": "r", "pid": 1, "host": "h", "run_id": "x", "uuid": "00000000"}}
    s.contribute(doc)
    s.close()
    assert "no /proc" in doc["samples"]["unavailable_reason"]


def test_no_proc_with_psutil_falls_back_to_psutil(tmp_path, monkeypatch):
    pytest.importorskip("psutil")
    monkeypatch.setattr(sampling, "_PROC_SELF", str(tmp_path / "no-proc"))
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


def test_workers_without_samples_objects_show_no_blocks():
    doc = {"identity": {"role": "r"}, "phases": [], "samples": None}
    assert resources.render_io([(doc, None)], None) == []
    assert resources.render_memory([(doc, None)], None) == []
    assert resources.render([(doc, None)], None) == []


def test_sample_file_names_cannot_leave_the_worker_folder(tmp_path, run):
    (doc, path), _ = run
    doc["samples"]["file"] = "../../secret.samples"
    assert resources._sidecar_path(doc, path) is None


def test_adapter_accepts_objects_and_run_span():
    doc = {"identity": {"role": "r"}, "times": {"start_unix_ns": 10, "last_flush_unix_ns": 50}}
    item = SimpleNamespace(document=doc, path="/x/w.json")
    run = SimpleNamespace(workers=[item], start_unix_ns=5, end_unix_ns=60)
    assert resources.workers_of(run)[0][0] is doc
    assert resources.run_span(run, resources.workers_of(run)) == (5, 60)
    assert resources.run_span([(doc, None)], [(doc, None)]) == (10, 50)


@pytest.mark.parametrize(
    "n, text", [(0, "0 B"), (999, "999 B"), (1000, "1.0 KB"), (408_700_000, "408.7 MB"), (999_960, "1.0 MB"), (1.1e9, "1.1 GB")]
)
def test_fmt_bytes(n, text):
    assert resources.fmt_bytes(n) == text
