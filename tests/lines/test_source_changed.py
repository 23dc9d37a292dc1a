"""A profiled file edited after its code ran: its numbers are shown against the text that was
recorded, or marked "source changed since the run", never against the new code. Lines are
inserted at the top, so every recorded line number now names another line."""

import io
import json
import os

import pytest
from lp_helpers import write_module

from lineprofiler import LineProfiler
from lineprofiler.cli import main

WORK = """\
def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
"""
#: Inserted at the top: line 4 (the loop body) now reads "VALUE_C = 3".
INSERTED = "VALUE_A = 1\nVALUE_B = 2\nVALUE_C = 3\n"


@pytest.fixture
def recorded(tmp_path):
    root = tmp_path / "proj"
    mod = write_module(root, "lp_source_changed_work", WORK)
    profiler = LineProfiler(project_folder=root)
    with profiler:
        mod.work(100)
    return root, profiler


def edit(root):
    path = root / "lp_source_changed_work.py"
    before = path.stat()
    path.write_text(INSERTED + WORK)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # a later mtime on any clock


def printed(method, **kwargs) -> str:
    out = io.StringIO()
    method(file=out, **kwargs)
    return out.getvalue()


def assert_not_against_new_code(text: str) -> None:
    assert "VALUE_" not in text, text


def test_the_live_profiler_marks_a_file_edited_since_the_run(recorded, tmp_path):
    root, profiler = recorded
    edit(root)
    tables = printed(profiler.print_stats) + printed(profiler.print_global_top_stats)
    assert_not_against_new_code(tables)
    assert "<source changed since the run>" in tables
    assert "Its file changed since the run" in tables
    (work,) = profiler.get_stats().values()
    assert work.source_changed and all(line.source is None for line in work.lines.values())

    page = profiler.to_html(tmp_path / "live.html").read_text(encoding="utf-8")
    assert_not_against_new_code(page)
    assert "only the recorded lines: the file on disk changed since the run" in page

    saved = profiler.dump(tmp_path / "l.json")
    entry = json.loads(saved.read_text())["files"][str(root / "lp_source_changed_work.py")]
    assert entry == {"sha256": None, "changed": True}
    loaded = LineProfiler.load(saved)
    view = printed(loaded.print_stats)
    assert_not_against_new_code(view)
    assert "<source changed since the run>" in view


def test_a_saved_profile_shows_its_recorded_text_after_an_edit(recorded, tmp_path, capsys):
    root, profiler = recorded
    saved = profiler.dump(tmp_path / "l.json")
    edit(root)
    loaded = LineProfiler.load(saved)
    tables = printed(loaded.print_stats)
    assert_not_against_new_code(tables)
    assert "        total += i * i" in tables  # the recorded text, at its recorded line

    capsys.readouterr()
    assert main(["view", str(saved)]) == 0
    view = capsys.readouterr().out
    assert_not_against_new_code(view)
    assert "total += i * i" in view

    page = tmp_path / "saved.html"
    assert main(["view", str(saved), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert_not_against_new_code(html)
    assert "total += i * i" in html
    assert "only the recorded lines: the file on disk changed since the run" in html


def test_a_file_not_edited_is_shown_whole_from_disk(recorded, tmp_path):
    root, profiler = recorded
    tables = printed(profiler.print_stats)
    assert "changed since the run" not in tables and "        total += i * i" in tables
    page = profiler.to_html(tmp_path / "same.html").read_text(encoding="utf-8")
    assert "the file on disk, the same source that ran" in page
    entry = json.loads(profiler.dump(tmp_path / "l.json").read_text())["files"]
    assert list(entry.values()) == [{"sha256": entry[next(iter(entry))]["sha256"]}]
    assert next(iter(entry.values()))["sha256"] is not None


def test_a_stamp_survives_a_chdir_and_sees_an_edit(tmp_path, monkeypatch):
    from lineprofiler.lines.sourcefile import SourceStamps

    (tmp_path / "mod.py").write_text(WORK)
    monkeypatch.chdir(tmp_path)
    stamps = SourceStamps()
    stamps.note("mod.py")  # a relative co_filename, stamped by its absolute path
    stamps.note("<string>")  # a pseudo-file: never stamped, never "changed"
    monkeypatch.chdir(tmp_path.parent)
    assert not stamps.changed("mod.py") and not stamps.changed("<string>")
    edit_at = tmp_path / "mod.py"
    edit_at.write_text(INSERTED + WORK)
    assert stamps.changed("mod.py")
