"""A record of a trace that cannot be placed costs that record, never the worker's trace.

A spans file whose CRC-32 matches (written with the module's own writer) still holds spans that end
before they start, lie years away, name a negative thread or a phase id the profiler cannot write;
links name a thread the span store did not track (index -1, as the recorder writes a thread past
its table, or past the table's end). ``report``, ``trace --html`` and ``export --perfetto`` all
exit 0, report the good records and say how many they left out. A worker file that names another
worker's spans file is refused for it. And a real process with 300 threads linking keeps its trace.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from array import array
from pathlib import Path

import pytest

from lineprofiler.cli import main
from lineprofiler.runfiles import spanfile, tracesection, workerfile

YEAR_NS = 365 * 24 * 3600 * 1_000_000_000

#: A real process that traces 170 entries on two threads and makes 70 links.
TRACED = textwrap.dedent(
    """
    import sys, threading
    from lineprofiler.accounting import Profiler
    prof = Profiler(sys.argv[1], role="w", trace=True, snapshot_interval_s=None)
    def side():
        for i in range(50):
            with prof.phase("side"):
                prof.signal("c", i)
    thread = threading.Thread(target=side)
    thread.start()
    thread.join()
    for i in range(50):
        with prof.phase("step"):
            with prof.phase("inner"):
                sum(range(100))
    for i in range(20):
        with prof.phase("consume"):
            prof.wait_on("c", i)
    prof.close()
    """
)


def _traced_run(run_dir: Path) -> Path:
    before = set(workerfile.find_worker_files(run_dir)) if run_dir.exists() else set()
    env = dict(os.environ, LINEPROFILER_RUN_ID="placed")
    subprocess.run([sys.executable, "-c", TRACED, str(run_dir)], check=True, timeout=120, env=env)
    (path,) = set(workerfile.find_worker_files(run_dir)) - before
    return path


def _rewrite_spans(worker_file: Path, change) -> int:  # type: ignore[no-untyped-def]
    """The worker's spans file rewritten by the module's own writer (so its CRC-32 is right) with
    ``change(rows)`` applied; the worker file names the new one. Returns the rows' count."""
    document = json.loads(worker_file.read_bytes())
    trace = document["trace"]
    old = worker_file.parent / trace["spans"]["file"]
    rows = spanfile.rows(old.read_bytes())
    change(rows)
    rows.sort(key=lambda row: row[0])
    writes = document["snapshot"]["writes"] + 1
    trace["spans"] = spanfile.write(
        worker_file, spanfile.columns_bytes(rows), writes, root=None, fsync=False, notes=None
    )
    old.unlink()
    worker_file.write_bytes(json.dumps(document).encode())
    return len(rows)


def _story(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["trace", str(run_dir), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_bad_spans_in_a_spans_file_whose_crc_matches_are_left_out_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    path = _traced_run(run_dir)
    good: list[list[int]] = []

    def forge(rows: list[list[int]]) -> None:
        good.extend(list(row) for row in rows)
        t, phase = rows[len(rows) // 2][0], rows[0][2]
        rows.extend(
            [
                [t, t - 1_000, phase, 0, -1],  # ends before it starts
                [t + 3 * YEAR_NS, t + 3 * YEAR_NS + 10, phase, 0, -1],  # years away
                [t, t + 10, phase, -3, -1],  # a negative thread
                [t, t + 10, 2**31 - 1, 0, -1],  # a phase id no profiler writes
                [t, t + 10, -7, 0, -1],  # a negative phase id
            ]
        )

    assert _rewrite_spans(path, forge) == len(good) + 5
    story = _story(run_dir, capsys)
    (process,) = story["story"]["processes"]
    assert process["spans_kept"] == len(good)
    assert story["story"]["kept_line"] == f"{len(good)} of {len(good)} spans kept"  # not "the oldest dropped"
    (note,) = [line for line in story["caveats"] if "could not be placed" in line]
    assert "5 record(s)" in note and "1 span that ends before it starts" in note
    assert "2 spans that have a phase id out of range" in note and "1 span that lies outside" in note
    html, perfetto = tmp_path / "trace.html", tmp_path / "trace.json"
    assert main(["trace", str(run_dir), "--html", str(html), "-q"]) == 0  # an IndexError once
    assert main(["report", str(run_dir)]) == 0
    report = capsys.readouterr()
    assert "could not be placed" in report.out and "Traceback" not in report.err
    assert "could not be placed" in html.read_text()
    assert main(["export", str(run_dir), "--perfetto", str(perfetto)]) == 0
    events = json.loads(perfetto.read_text())["traceEvents"]
    assert sum(1 for e in events if e.get("cat") == "span") == len(good)
    assert "Traceback" not in capsys.readouterr().err
    # What each of them read: the good spans, the bad ones counted by why.
    columns = tracesection.read_trace(path, stop_unix_ns=workerfile.read_worker_file(path)["times"]["end_unix_ns"])
    assert columns is not None
    assert sorted(zip(*columns.spans, strict=True)) == sorted(map(tuple, good))
    assert columns.left_out == {
        ("span", tracesection.END_BEFORE_START): 1,
        ("span", tracesection.UNKNOWN_THREAD): 1,
        ("span", tracesection.PHASE_OUT_OF_RANGE): 2,
        ("span", tracesection.OUTSIDE_LIFETIME): 1,
    }


def test_links_of_threads_not_in_the_table_are_left_out_not_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _traced_run(tmp_path)
    document = json.loads(path.read_bytes())
    links = document["trace"]["links"]
    n_threads = len(document["trace"]["threads"])
    links[0][4] = -1  # the recorder's index for a thread past its table
    links[1][4] = n_threads  # just past the table
    document["trace"]["open"] = [[links[2][3], 2, n_threads + 5]]
    path.write_bytes(json.dumps(document).encode())
    story = _story(tmp_path, capsys)
    (process,) = story["story"]["processes"]
    assert process["links"] == len(links) - 2 and process["spans_kept"] == 170
    (note,) = [line for line in story["caveats"] if "could not be placed" in line]
    assert "2 links that name a thread not in their thread table" in note
    assert "1 open entry that names a thread not in its thread table" in note


def test_a_worker_file_naming_another_workers_spans_file_is_refused_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine, theirs = _traced_run(tmp_path), _traced_run(tmp_path)
    document = json.loads(mine.read_bytes())
    (mine.parent / document["trace"]["spans"]["file"]).unlink()
    # The other's reference whole: its size and CRC-32 match the file it names.
    document["trace"]["spans"] = json.loads(theirs.read_bytes())["trace"]["spans"]
    mine.write_bytes(json.dumps(document).encode())
    story = _story(tmp_path, capsys)
    notes = [line for line in story["caveats"] if mine.name in line]
    assert len(notes) == 1 and "the spans file of another worker file" in notes[0], story["caveats"]
    (process,) = story["story"]["processes"]  # the other stands, read once
    assert process["pid"] == json.loads(theirs.read_bytes())["identity"]["pid"]


def test_a_live_rings_columns_are_checked_as_a_files_are() -> None:
    pairs = [[5_000_000_000, 1_700_000_000_000_000_000, 100]]
    start = array("q", [5_100_000_000, 5_200_000_000, 5_300_000_000, 5_300_000_000 + 5 * YEAR_NS])
    end = array("q", [5_150_000_000, 5_250_000_000, 5_350_000_000, 5_300_000_000 + 5 * YEAR_NS + 1])
    trace = {
        "clock": "monotonic",
        "clock_pairs": pairs,
        "threads": [{"ident": 1, "native_id": 1, "name": "MainThread"}],
        "spans": spanfile.SpanColumns(
            [start, end, array("i", [2, 3_000_000, 2, 2]), array("i", [0, 0, 0, 0]), array("q", [-1, -1, -9, -1])]
        ),
        "open": [],
        "links": [],
    }
    columns = tracesection.check_trace(trace, "live", ValueError, stop_unix_ns=pairs[0][1] + 10_000_000_000)
    assert list(columns.spans[0]) == [5_100_000_000, 5_300_000_000]
    assert list(columns.spans[4]) == [-1, -9]  # below 0: "not measured" wherever it is read
    assert columns.left_out == {
        ("span", tracesection.PHASE_OUT_OF_RANGE): 1,
        ("span", tracesection.OUTSIDE_LIFETIME): 1,
    }


#: A thread-per-request server: 300 threads alive at once, each signalling once in a phase; the
#: main thread waits on each.
MANY_THREADS = textwrap.dedent(
    """
    import sys, threading
    from lineprofiler.accounting import Profiler
    prof = Profiler(sys.argv[1], role="server", trace=True, snapshot_interval_s=None)
    with prof.phase("start"):  # the main thread is the span store's first
        pass
    ready = threading.Barrier(301)
    def handle(i):
        ready.wait()
        with prof.phase("handle"):
            prof.signal("done", i)
    threads = [threading.Thread(target=handle, args=(i,)) for i in range(300)]
    for thread in threads:
        thread.start()
    ready.wait()
    for thread in threads:
        thread.join()
    with prof.phase("collect"):
        for i in range(300):
            prof.wait_on("done", i)
    prof.close()
    """
)


def test_a_process_of_300_threads_linking_keeps_its_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run([sys.executable, "-c", MANY_THREADS, str(tmp_path)], check=True, timeout=120)
    story = _story(tmp_path, capsys)
    (process,) = story["story"]["processes"]
    # Every link is in the story, or said to be left out (threads past the span store's table).
    notes = [line for line in story["caveats"] if "could not be placed" in line]
    said = sum(int(n.replace(",", "")) for note in notes for n in re.findall(r"([\d,]+) links? that", note))
    assert process["links"] + said == 600, (process, notes)
    assert process["links"] >= 300  # the main thread's waits, at least


@pytest.mark.parametrize("seed", range(200))
def test_the_column_checks_agree_with_a_span_by_span_check(seed: int) -> None:
    """The checks at C speed (bytes, and big integers of one 64-bit lane a span) against the plain
    one, on columns of every kind of bad value near the edges."""
    import random

    rng = random.Random(seed)
    n = rng.choice([1, 2, 3, 7, 64, 300])
    n_threads = rng.choice([0, 1, 2, 255, 256, 257, 4096])
    low, high = rng.choice([(0, 2**63), (10**9, 10**12), (2**62, 2**63 - 1)])
    t = sorted(rng.randrange(low, min(high, 2**63 - 10**6)) for _ in range(n))
    rows = [[s, s + rng.randrange(0, 10**6), rng.randrange(0, 100), rng.randrange(0, max(1, n_threads)), -1] for s in t]
    for _ in range(rng.choice([0, 0, 1, 2])):
        row, column = rng.choice(rows), rng.randrange(4)
        row[column] = rng.choice([-1, -(2**63), 2**63 - 1, 0, high, high + 1, low - 1, row[0] - 1, row[1] + 1])
        row[column] = max(-(2**63), min(2**63 - 1, row[column]))  # an int64 still
        if column >= 2:
            row[column] = rng.choice([-1, -(2**31), 2**31 - 1, n_threads, n_threads - 1, 2**20, 2**20 - 1, 256])
    columns = [array(code, (row[k] for row in rows)) for k, code in enumerate("qqiiq")]
    plain = (
        all(0 <= r[0] <= r[1] for r in rows)
        and all(a[0] <= b[0] for a, b in zip(rows, rows[1:], strict=False))
        and all(0 <= r[3] < n_threads and 0 <= r[2] < tracesection.PHASE_ID_LIMIT for r in rows)
        and min(r[0] for r in rows) >= low
        and max(r[1] for r in rows) <= high
    )
    assert tracesection._all_placed(columns, n_threads, (low, high)) == plain  # noqa: SLF001


@pytest.mark.parametrize("at", [0, 16_383, 16_384, 16_385, 32_767, 39_999])
@pytest.mark.parametrize("damage", ["unsorted", "ends early", "too late"])
def test_the_column_checks_see_a_bad_span_in_any_piece_and_at_its_seams(at: int, damage: str) -> None:
    n, high = 40_000, 10**12  # three pieces of big integers, the last one short
    start = array("q", range(10**9, 10**9 + 1000 * n, 1000))
    end = array("q", (s + 500 for s in start))
    columns = [start, end, array("i", [2] * n), array("i", [0] * n), array("q", [-1] * n)]
    assert tracesection._all_placed(columns, 1, (0, high))  # noqa: SLF001
    if damage == "unsorted":
        start[at] = start[at - 1] - 1 if at else start[1] + 1
    elif damage == "ends early":
        end[at] = start[at] - 1
    else:
        end[at] = high + 1
    assert not tracesection._all_placed(columns, 1, (0, high))  # noqa: SLF001


def test_only_a_spans_file_found_whole_is_read_again_unchecked(tmp_path: Path) -> None:
    path = _traced_run(tmp_path)
    stop = workerfile.read_worker_file(path)["times"]["end_unix_ns"]
    first = tracesection.read_trace(path, stop_unix_ns=stop)
    crc = json.loads(path.read_bytes())["trace"]["spans"]["crc32"]
    assert first is not None and first.checked_crc == crc and first.left_out == {}
    # The file replaced by one with a bad span: another CRC-32, so it is checked again.
    _rewrite_spans(path, lambda rows: rows.append([rows[0][0], rows[0][0] - 1, rows[0][2], 0, -1]))
    again = tracesection.read_trace(path, stop_unix_ns=stop, checked_crc=crc)
    assert again is not None and again.checked_crc is None
    assert again.left_out == {("span", tracesection.END_BEFORE_START): 1}
    assert len(again.spans[0]) == len(first.spans[0])
