"""The line-stats file: its schema, the validator, reading, finding and merging files."""

import json
import subprocess
import sys

import pytest

from lineprofiler.runfiles import linesfile
from lineprofiler.runfiles.linesfile import LinesFileError, NewerSchemaError


def document(pid=100, functions=None, files=None, status="exited", role=None, label="main"):
    process = {
        "pid": pid,
        "parent_pid": 1,
        "host": "nodeA",
        "argv": ["train.py", "--epochs", "3"],
        "python": "3.12.1",
        "role": role,
        "label": label,
        "start_unix_ns": 1_000,
        "end_unix_ns": 2_000,
        "status": status,
        "signal": None,
        "exit_code": 0,
    }
    profile = {"project_folder": "/proj", "include": [], "exclude": [], "clock": "tsc", "wall_ns": 5_000}
    if functions is None:
        functions = [("/proj/a.py", 1, "f", [(2, 10, 1_000, "    x = 1"), (3, 10, 2_000, "    y = 2")])]
    return linesfile.build_document(process=process, profile=profile, functions=functions, files=files or {})


def write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def test_build_validate_read_round_trip(tmp_path):
    doc = document(files={"/proj/a.py": "ab" * 32})
    assert linesfile.validate(doc) is doc
    path = tmp_path / linesfile.lines_file_name("nodeA", 100, "0123abcd")
    assert path.name == "l_nodeA_100_0123abcd.json"
    n = linesfile.write_lines_file(path, doc)
    assert n == path.stat().st_size
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp_")]
    read = linesfile.read_lines_file(path)
    assert read.pid == 100 and read.status == "exited" and read.finished
    assert read.process["argv"] == ["train.py", "--epochs", "3"]
    assert read.files == {"/proj/a.py": "ab" * 32}
    (fn,) = read.functions
    assert fn.key == ("/proj/a.py", 1, "f")
    assert [(r.lineno, r.hits, r.time_ns, r.source) for r in fn.lines] == [
        (2, 10, 1_000, "    x = 1"),
        (3, 10, 2_000, "    y = 2"),
    ]


def test_text_that_is_not_utf8_is_escaped():
    # Undecodable bytes in a file name or source reach Python as lone surrogates.
    doc = document(functions=[("/proj/\udce9.py", 1, "f", [(1, 1, 1, "s = '\udcff'")])])
    assert doc["functions"][0]["file"] == "/proj/\\udce9.py"
    assert doc["functions"][0]["lines"][0][3] == "s = '\\udcff'"
    linesfile.validate(json.loads(json.dumps(doc)))


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (lambda d: d.update(kind="lineprofiler-worker"), "not a line-stats file"),
        (lambda d: d.update(schema_version=0), "invalid schema_version"),
        (lambda d: d.update(schema_version="1"), "invalid schema_version"),
        (lambda d: d.pop("process"), "'process' is missing"),
        (lambda d: d["process"].pop("pid"), "'process.pid' is missing"),
        (lambda d: d["process"].update(pid=-1), "'process.pid'"),
        (lambda d: d["process"].update(pid=True), "'process.pid'"),
        (lambda d: d["process"].update(pid=2**63), "'process.pid'"),
        (lambda d: d["process"].update(status="weird"), "'process.status'"),
        (lambda d: d["process"].update(argv="train.py"), "'process.argv'"),
        (lambda d: d["profile"].update(wall_ns=1.5), "'profile.wall_ns'"),
        (lambda d: d.update(functions={}), "'functions'"),
        (lambda d: d["functions"][0].update(first_line="1"), "'functions[0]' is malformed"),
        (lambda d: d["functions"][0]["lines"].append([1, 2, 3]), "malformed row"),
        (lambda d: d["functions"][0]["lines"].append([1, -2, 3, None]), "malformed row"),
        (lambda d: d["functions"][0]["lines"].append([1, 2, 3.0, None]), "malformed row"),
        (lambda d: d.update(files={"/proj/a.py": {"sha256": 5}}), "'files' holds a malformed entry"),
        (lambda d: d.update(errors="oops"), "'errors'"),
        (lambda d: d["process"].update(attempt="0"), "'process.attempt'"),
        (lambda d: d["process"].update(run_id=3), "'process.run_id'"),
        (lambda d: d["profile"].update(window=[2, 5]), "'profile.window' is missing or not an object"),
        (lambda d: d["profile"].update(window={"phase": "it", "start": 2, "stop": 5}), "'profile.window.partial'"),
        (lambda d: d["profile"].update(window=dict(WINDOW, stopped_entry="5")), "'profile.window.stopped_entry'"),
    ],
)
def test_validator_refuses_with_one_line(tmp_path, mutate, reason):
    doc = document()
    mutate(doc)
    path = write(tmp_path / "l_nodeA_1_00000000.json", doc)
    with pytest.raises(LinesFileError) as info:
        linesfile.read_lines_file(path)
    message = str(info.value)
    assert reason in message and str(path) in message and "\n" not in message


WINDOW = {"phase": "iteration", "start": 2, "stop": 5, "partial": True, "started_entry": 2, "stopped_entry": None}


def test_an_accounting_windows_keys_are_read(tmp_path):
    doc = document(role="actor")
    doc["process"].update(run_id="r1", attempt=0, uuid="0123abcd", rank=None)
    doc["profile"]["window"] = dict(WINDOW)
    read = linesfile.read_lines_file(write(tmp_path / "l_r1_100_0123abcd.json", doc))
    assert read.window == WINDOW and read.partial and read.role == "actor"
    assert (read.process["run_id"], read.process["attempt"]) == ("r1", 0)
    plain = linesfile.read_lines_file(write(tmp_path / "l_nodeA_100_0123abcd.json", document()))
    assert plain.window is None and not plain.partial


def test_future_schema_is_refused_clearly(tmp_path):
    doc = document()
    doc["schema_version"] = linesfile.SCHEMA_VERSION + 1
    path = write(tmp_path / "x.json", doc)
    with pytest.raises(NewerSchemaError, match="upgrade lineprofiler"):
        linesfile.read_lines_file(path)


def test_unknown_keys_are_ignored(tmp_path):
    doc = document()
    doc["later"] = {"anything": 1}
    doc["process"]["cgroup"] = "x"
    assert linesfile.read_lines_file(write(tmp_path / "x.json", doc)).pid == 100


@pytest.mark.parametrize("raw", [b"", b"{", b"[1, 2]", b"\xff\xfe", b'{"a": NaN}'])
def test_corrupt_bytes(tmp_path, raw):
    path = tmp_path / "x.json"
    path.write_bytes(raw)
    with pytest.raises(LinesFileError):
        linesfile.read_lines_file(path)


def test_find_and_load_a_directory(tmp_path):
    a = write(tmp_path / "l_nodeA_100_00000001.json", document(100))
    sub = tmp_path / "lines" / "nodeB"
    sub.mkdir(parents=True)
    b = write(sub / "l_nodeB_100_00000002.json", document(100))
    (tmp_path / ".tmp_abc.json").write_text("{")
    (tmp_path / "notes.json").write_text("{}")
    bad = tmp_path / "l_nodeA_7_00000003.json"
    bad.write_text("{ truncated")
    assert linesfile.find_lines_files(tmp_path) == sorted([a, b, bad])
    loaded, problems = linesfile.load_lines(tmp_path)
    assert sorted(p.path for p in loaded) == sorted([a, b])
    assert len(problems) == 1 and str(bad) in problems[0]


def test_load_errors(tmp_path):
    with pytest.raises(LinesFileError, match="no such file"):
        linesfile.load_lines(tmp_path / "missing")
    with pytest.raises(LinesFileError, match="no line-stats files"):
        linesfile.load_lines(tmp_path)
    (tmp_path / "l_h_1_00000000.json").write_text("nope")
    with pytest.raises(LinesFileError, match="no usable line-stats file"):
        linesfile.load_lines(tmp_path)
    doc = document()
    doc["schema_version"] = 99
    write(tmp_path / "l_h_2_00000000.json", doc)
    with pytest.raises(NewerSchemaError):
        linesfile.load_lines(tmp_path)


def read(tmp_path, name, doc):
    return linesfile.read_lines_file(write(tmp_path / name, doc))


def test_merge_sums_the_same_keys(tmp_path):
    f1 = read(tmp_path, "1.json", document(1, [("/p/a.py", 1, "f", [(2, 3, 30, "a"), (3, 1, 10, "b")])]))
    two = [("/p/a.py", 1, "f", [(2, 5, 50, "a")]), ("/p/b.py", 9, "g", [(10, 1, 7, None)])]
    f2 = read(tmp_path, "2.json", document(2, two))
    merged = linesfile.merge_lines([f1, f2])
    fn = merged.functions[("/p/a.py", 1, "f", None)]
    assert (fn.lines[2].hits, fn.lines[2].time_ns) == (8, 80)
    assert fn.lines[2].per_process == [(0, 3, 30), (1, 5, 50)]
    assert (fn.lines[3].hits, fn.lines[3].time_ns) == (1, 10)
    assert fn.hits == 9 and fn.time_ns == 90
    assert merged.functions[("/p/b.py", 9, "g", None)].lines[10].source is None
    assert merged.conflicts == [] and merged.wall_ns == 10_000


def test_merge_keeps_different_sources_apart(tmp_path):
    func = [("/p/a.py", 1, "f", [(2, 1, 10, "x")])]
    v1, v2 = "1" * 64, "2" * 64
    files = [
        read(tmp_path, "1.json", document(1, func, {"/p/a.py": v1})),
        read(tmp_path, "2.json", document(2, func, {"/p/a.py": v2})),
        read(tmp_path, "3.json", document(3, func, {"/p/a.py": v2})),
        read(tmp_path, "4.json", document(4, func, {})),  # no hash: cannot tell, merged
    ]
    merged = linesfile.merge_lines(files)
    main = merged.functions[("/p/a.py", 1, "f", None)]
    other = merged.functions[("/p/a.py", 1, "f", "11111111")]
    assert main.lines[2].hits == 3 and other.lines[2].hits == 1
    (conflict,) = merged.conflicts
    assert conflict.file == "/p/a.py"
    assert conflict.versions == ((v2, (2, 3)), (v1, (1,)))


def test_merge_names_processes_that_left_nothing(tmp_path):
    done = read(tmp_path, "1.json", document(1))
    started = read(tmp_path, "2.json", document(2, [], status="started"))
    silent = read(tmp_path, "3.json", document(3, []))
    merged = linesfile.merge_lines([done, started, silent])
    assert merged.unfinished == [started]
    assert merged.silent == [silent]
    assert started.describe() == "pid 2 (main) on nodeA"


def test_reading_and_viewing_never_load_the_tracer(tmp_path):
    path = write(tmp_path / "l_nodeA_100_00000001.json", document())
    code = (
        "import sys\n"
        "from lineprofiler.cli import main\n"
        f"rc = main(['view', {str(tmp_path)!r}])\n"
        "import lineprofiler.lines.saved as s\n"
        f"s.SavedProfile.load({str(path)!r}).print_stats()\n"
        "assert rc == 0, rc\n"
        "bad = [m for m in sys.modules if m.endswith('_tracer') or m.startswith('lineprofiler.accounting')]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Function: f at a.py:1" in out.stdout or "Function: f at /proj/a.py:1" in out.stdout
