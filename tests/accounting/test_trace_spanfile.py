"""The final snapshot's spans file: the same spans as the rows, one file per worker file, and a
cut, damaged, missing or foreign file is one line in the story, never a wrong span."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.cli import main
from lineprofiler.runfiles import spanfile, tracesection, workerfile


def _traced_run(run_dir: Path, *, signal_first: bool = False) -> Path:
    """A real process of run ``spanfile`` that traces 2,500 entries on two threads, then exits
    (after a SIGUSR1 flush, a final snapshot of its own, with ``signal_first``); its worker file."""
    script = textwrap.dedent(
        f"""
        import os, signal, threading
        from lineprofiler.accounting import Profiler
        signal.signal(signal.SIGUSR1, lambda *_: None)  # survived: its flush is a final snapshot
        prof = Profiler({str(run_dir)!r}, role="w", trace=True, snapshot_interval_s=None)
        def side():
            for _ in range(500):
                with prof.phase("side"):
                    pass
        thread = threading.Thread(target=side, name="side-thread")
        thread.start()
        for i in range(1000):
            with prof.phase("step"):
                with prof.phase("inner"):
                    sum(range(i % 50))
        thread.join()
        if {signal_first!r}:
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(500):
                with prof.phase("after"):
                    pass
        """
    )
    before = set(workerfile.find_worker_files(run_dir)) if run_dir.exists() else set()
    env = dict(os.environ, LINEPROFILER_RUN_ID="spanfile")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env=env)
    (path,) = set(workerfile.find_worker_files(run_dir)) - before
    return path


def test_the_columns_are_the_rows_and_the_worker_file_names_its_spans_file(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="c", trace=True, snapshot_interval_s=None)
    for i in range(300):
        with prof.phase("a"):
            with prof.phase("b" if i % 2 else "c"):
                pass
    recorder = prof.recorder
    assert recorder is not None
    rows = recorder.trace_snapshot()["spans"]  # type: ignore[index]
    columns = recorder.trace_snapshot(columns=True)["spans"]  # type: ignore[index]
    assert isinstance(columns, bytes) and len(columns) == 32 * len(rows) == 32 * 600
    assert spanfile.rows(columns) == rows
    prof.close()
    assert prof.path is not None
    trace = workerfile.read_worker_file(prof.path)["trace"]
    reference = trace["spans"]
    assert set(reference) == {"file", "layout", "count", "crc32"} and reference["count"] == 600
    assert (Path(prof.path).parent / reference["file"]).stat().st_size == 32 * 600
    assert tracesection.span_rows(trace, prof.path) == rows


def test_a_second_final_snapshot_leaves_one_spans_file_the_pair_of_its_worker_file(tmp_path: Path) -> None:
    path = _traced_run(tmp_path, signal_first=True)
    document = workerfile.read_worker_file(path)
    spans_files = sorted(p.name for p in path.parent.glob("*" + spanfile.SUFFIX))
    assert spans_files == [document["trace"]["spans"]["file"]]  # the SIGUSR1 flush's was removed
    rows = tracesection.span_rows(document["trace"], path)
    paths = {p["id"]: p["path"] for p in document["phases"]}
    counts = {name: sum(1 for r in rows if paths[r[2]] == name) for name in ("step", "step/inner", "side", "after")}
    assert counts == {"step": 1000, "step/inner": 1000, "side": 500, "after": 500}
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    threads = document["trace"]["threads"]
    assert {threads[r[3]]["name"] for r in rows if paths[r[2]] == "side"} == {"side-thread"}


def _story_json(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["trace", str(run_dir), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("cut", "cut short"),
        ("flip", "is damaged"),
        ("missing", "is missing"),
        ("foreign name", "not the name of a spans file"),
        ("layout", "does not know"),
    ],
)
def test_a_bad_spans_file_is_one_line_and_costs_that_worker_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str, said: str
) -> None:
    for _ in range(2):
        _traced_run(tmp_path)
    bad = _traced_run(tmp_path)
    document = json.loads(bad.read_bytes())
    spans = bad.parent / document["trace"]["spans"]["file"]
    if damage == "cut":
        spans.write_bytes(spans.read_bytes()[:-7])
    elif damage == "flip":
        data = bytearray(spans.read_bytes())
        data[len(data) // 2] ^= 0x40
        spans.write_bytes(bytes(data))
    elif damage == "missing":
        spans.unlink()
    elif damage == "foreign name":
        document["trace"]["spans"]["file"] = "../../../etc/passwd"
    else:
        document["trace"]["spans"]["layout"] = "columns-le-9"
    bad.write_bytes(json.dumps(document).encode())
    story = _story_json(tmp_path, capsys)
    notes = [line for line in story["caveats"] if bad.name in line]
    assert len(notes) == 1 and said in notes[0] and "\n" not in notes[0], story["caveats"]
    assert len(story["story"]["processes"]) == 2  # the two others stand
    assert main(["report", str(tmp_path)]) == 0  # the report too: no traceback
    assert "Traceback" not in capsys.readouterr().err


def test_a_spans_file_that_cannot_be_written_leaves_the_rows_in_the_worker_file(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="f", trace=True, snapshot_interval_s=None)
    assert prof.path is not None
    for writes in range(1, 40):  # a folder at each name the final snapshot may use: the rename fails
        os.mkdir(spanfile.file_name(str(prof.path), writes))
    for _ in range(50):
        with prof.phase("p"):
            pass
    prof.close()
    document = workerfile.read_worker_file(prof.path)
    assert isinstance(document["trace"]["spans"], list) and len(document["trace"]["spans"]) == 50
    assert any("spans file not written" in e for e in document["errors"]), document["errors"]


def test_a_signal_that_ends_the_process_still_writes_a_readable_spans_file(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from lineprofiler.accounting import Profiler
        prof = Profiler({str(tmp_path)!r}, role="t", trace=True, snapshot_interval_s=None)
        for _ in range(200):
            with prof.phase("work"):
                pass
        with prof.phase("stuck"):
            print("ready", flush=True)
            sys.stdin.readline()
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    child.wait(60)
    (path,) = workerfile.find_worker_files(tmp_path)
    document = workerfile.read_worker_file(path)
    assert document["times"]["status"] == "signalled"
    columns = tracesection.read_trace(path)
    assert columns is not None and len(columns.spans[0]) == 200 and len(columns.open[0]) == 1
