"""dump() and LineProfiler.load(): what is saved comes back the same, and prints the same."""

import io
import json
import os
import re

import lp_workloads as wl
import pytest
from lp_helpers import hits

from lineprofiler import LineProfiler
from lineprofiler.runfiles.linesfile import LinesFileError, NewerSchemaError


def printed(method, **kwargs):
    out = io.StringIO()
    method(file=out, **kwargs)
    return out.getvalue()


@pytest.fixture
def recorded(here):
    p = LineProfiler(project_folder=here)
    with p:
        wl.loop(200)
        wl.fib(10)
        wl.consume_countdown(5)
    return p


def test_dump_and_load_give_the_same_stats_and_tables(recorded, tmp_path):
    path = recorded.dump(tmp_path / "lines.json")
    assert path == tmp_path / "lines.json"
    loaded = LineProfiler.load(path)
    assert loaded.get_stats() == recorded.get_stats()
    assert hits(loaded.get_stats(), wl.loop) == {"init": 1, "for": 201, "body": 200, "ret": 1}
    for kwargs in ({}, {"sort_by": "hits", "top_n_lines": 2}, {"min_time_us": 1.0}):
        assert printed(loaded.print_stats, **kwargs) == printed(recorded.print_stats, **kwargs)
    for kwargs in ({}, {"top_n": 3, "sort_by": "line"}):
        assert printed(loaded.print_global_top_stats, **kwargs) == printed(recorded.print_global_top_stats, **kwargs)


def test_the_file_is_documented_json_with_who_wrote_it(recorded, tmp_path):
    path = recorded.dump(tmp_path / "lines.json")
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 2 and doc["kind"] == "lineprofiler-lines"
    proc = doc["process"]
    assert proc["pid"] == os.getpid() and proc["parent_pid"] == os.getppid()
    assert proc["status"] == "dumped" and proc["host"] and isinstance(proc["argv"], list)
    assert doc["profile"]["project_folder"] == str(recorded.project_folder)
    assert doc["profile"]["wall_ns"] == pytest.approx(recorded.wall_time_ns, rel=0.01)
    assert all(len(v["sha256"]) == 64 for v in doc["files"].values())
    assert not path.read_bytes().startswith(b"\x80")  # not a pickle


def test_dump_into_a_directory(recorded, tmp_path):
    first = recorded.dump(str(tmp_path / "out") + "/")
    assert re.fullmatch(r"l_.+_\d+_[0-9a-f]{8}\.json", first.name) and first.parent == tmp_path / "out"
    assert recorded.dump(tmp_path / "out") == first  # the same profiler: the same file, rewritten
    other = LineProfiler(project_folder=recorded.project_folder)
    with other:
        wl.loop(200)
    other.dump(tmp_path / "out")
    merged = LineProfiler.load(tmp_path / "out")
    assert len(merged.processes) == 2
    assert hits(merged.get_stats(), wl.loop) == {"init": 2, "for": 402, "body": 400, "ret": 2}
    # Two processes' wall times overlap: no % wall column for a merge.
    assert "% wall" not in printed(merged.print_global_top_stats)


def test_dump_errors(recorded, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        recorded.dump(tmp_path / "file" / "lines.json")


def test_load_errors(tmp_path):
    with pytest.raises(LinesFileError, match="no such file"):
        LineProfiler.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "lineprofiler-lines", "schema_version": 1}')
    with pytest.raises(LinesFileError, match="'process' is missing"):
        LineProfiler.load(bad)
    bad.write_text('{"kind": "lineprofiler-lines", "schema_version": 3}')
    with pytest.raises(NewerSchemaError):
        LineProfiler.load(bad)


def test_dump_while_enabled_and_of_nothing(here, tmp_path):
    p = LineProfiler(project_folder=here)
    assert LineProfiler.load(p.dump(tmp_path / "empty.json")).get_stats() == {}
    with p:
        wl.loop(10)
        mid = LineProfiler.load(p.dump(tmp_path / "mid.json"))
    assert hits(mid.get_stats(), wl.loop)["body"] == 10


def test_nothing_recorded_says_where_it_looked(here, tmp_path):
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    p = LineProfiler(project_folder=empty)
    with p:
        wl.loop(10)
        json.dumps([1])
    text = printed(p.print_stats)
    assert text.startswith("No line timings recorded")
    assert f"Project folder traced: {empty.resolve()}" in text
    assert re.search(r"Code objects that ran outside it: \d+", text)
    assert "lp_workloads.py" in text  # the user's own file outside the folder is named
    assert "json" not in text.split("Files outside it")[1].split("\n")[0]  # the standard library is not
    assert "project_folder=" in text and "include=" in text
    assert printed(p.print_global_top_stats) == text
    saved = LineProfiler.load(p.dump(tmp_path / "x.json"))
    assert "Project folder traced" in printed(saved.print_stats)
    # A profiler that never ran keeps the one-line answer.
    assert printed(LineProfiler(project_folder=empty).print_stats) == "No line timings recorded.\n"
