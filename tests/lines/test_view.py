"""`lineprofiler view`: files of several processes merged, by role, with who left nothing."""

import json
import re

from lineprofiler.cli import main
from lineprofiler.runfiles import linesfile


def write(folder, pid, role=None, label="SpawnPoolWorker", functions=None, status="exited", files=None, host="n1"):
    process = {
        "pid": pid,
        "parent_pid": 1,
        "host": host,
        "argv": ["w.py"],
        "python": "3.12.1",
        "role": role,
        "label": label,
        "start_unix_ns": 1,
        "status": status,
    }
    profile = {"project_folder": "/proj", "clock": "tsc", "wall_ns": 1_000_000, "codes_outside": 12}
    if functions is None:
        lines = [(11, 100, 50_000, "    for s in sims:"), (12, 99, 900_000, "        x()")]
        functions = [("/proj/mcts.py", 10, "search", lines)]
    doc = linesfile.build_document(process=process, profile=profile, functions=functions, files=files or {})
    path = folder / linesfile.lines_file_name(host, pid, f"{pid:08x}")
    path.write_text(json.dumps(doc))
    return path


def view(capsys, *args):
    rc = main(["view", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_merged_over_processes(tmp_path, capsys):
    for pid in (11, 12, 13):
        write(tmp_path, pid, role="actor")
    write(tmp_path, 1, role="learner", label="main", functions=[("/proj/learn.py", 1, "step", [(2, 5, 7_000, "  y")])])
    rc, out, err = view(capsys, tmp_path)
    assert rc == 0 and err == ""
    assert out.startswith("Line profile of 4 processes (actor x3, learner x1)")
    assert re.search(r"^\s+12\s+297\s+2\.70 ms", out, re.M)  # 3 x 99 hits, 3 x 900 us
    assert "Function: search at mcts.py:10" in out
    assert "% wall" not in out


def test_by_role(tmp_path, capsys):
    for pid in (11, 12):
        write(tmp_path, pid, role="actor")
    write(tmp_path, 1, label="main", functions=[("/proj/learn.py", 1, "step", [(2, 5, 7_000, "  y")])])
    rc, out, _ = view(capsys, tmp_path, "--by-role", "--top", "1", "--functions", "0", "--sort", "hits")
    assert rc == 0
    actor, main_part = out.split("ACTOR  (2 processes)")[1].split("MAIN  (1 process)")
    assert "Top 1 of 2 lines by hits" in actor and re.search(r"\s+1\s+.*\s200\s", actor)
    assert "learn.py" not in actor and "learn.py" in main_part and "Function:" not in out


def test_processes_that_left_nothing_are_named(tmp_path, capsys):
    write(tmp_path, 11, role="actor")
    write(tmp_path, 12, role="actor", functions=[], status="started")
    write(tmp_path, 13, role="actor", functions=[])
    (tmp_path / "l_n1_14_0000000e.json").write_text('{"truncated')
    rc, out, _ = view(capsys, tmp_path)
    assert rc == 0
    assert "pid 12 (actor) on n1 left nothing: it ended without writing its file" in out
    assert "1 process(es) ran no line of the project: pid 13" in out
    assert re.search(r"unreadable: .*l_n1_14_0000000e\.json: corrupt or truncated JSON", out)


def test_source_that_differed_is_not_merged_silently(tmp_path, capsys):
    write(tmp_path, 11, files={"/proj/mcts.py": "a" * 64})
    write(tmp_path, 12, files={"/proj/mcts.py": "a" * 64})
    write(tmp_path, 13, files={"/proj/mcts.py": "b" * 64})
    rc, out, _ = view(capsys, tmp_path)
    assert rc == 0
    assert "/proj/mcts.py: the source differed between processes (aaaaaaaa in pid 11, 12; bbbbbbbb in pid 13)" in out
    assert "Function: search at mcts.py [source bbbbbbbb]:10" in out
    assert re.search(r"^\s+12\s+198\s", out, re.M)  # only the two that agree are summed


def test_hosts_are_listed_when_several(tmp_path, capsys):
    write(tmp_path, 11, host="n1")
    write(tmp_path, 11, host="n2")
    rc, out, _ = view(capsys, tmp_path)
    assert "Hosts: n1, n2" in out and "Line profile of 2 processes" in out


def test_nothing_recorded_anywhere(tmp_path, capsys):
    write(tmp_path, 11, functions=[])
    rc, out, _ = view(capsys, tmp_path)
    assert rc == 0 and "Project folder traced: /proj" in out and "Code objects that ran outside it: 12" in out
