"""No text read from a file, a run directory or the command line reaches the terminal as a
command to it: every command, run as users run it, prints control characters as escapes.

The strings carry each sequence a hostile or a corrupt file could hold: an OSC 0 title change,
a screen clear, an OSC 8 hyperlink, a bare carriage return, a bidirectional override, a NUL, a
DEL and a C1 control. They sit in file paths, qualnames, source lines, roles, hosts, phase and
counter names, error texts and in the run directory's own name; each command's stdout and
stderr must then hold no character a terminal would act on other than the newline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lp_report_builders import MS, S, SimWorker

from lineprofiler._terminal import printable
from lineprofiler.runfiles import layout, linesfile

#: Every sequence at once; a path cannot hold the NUL (nor a slash).
HOSTILE = "\x1b]0;pwned\x07|\x1b[2J|\x1b]8;;http://x\x1b\\|a\rb|\u202e|\x00|\x7f|\u009b"
IN_PATH = HOSTILE.replace("\x00", "").replace("/", "_")
#: Python source cannot hold a NUL, and a CR ends its line.
IN_SOURCE = HOSTILE.replace("\x00", "").replace("\r", "")
#: What the terminal must see instead of the title change: the sequence as text.
SHOWN = printable("\x1b]0;pwned\x07")


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on (all but the newline), as escapes."""
    return sorted({ascii(ch) for ch in text if not ch.isprintable() and ch != "\n"})


def decoded(raw: bytes) -> str:
    """Output as the terminal gets it; bytes that are not UTF-8 stay visible as surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def lineprofiler(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    environment.update(env or {})
    result = subprocess.run(
        [sys.executable, "-m", "lineprofiler", *map(str, args)],
        capture_output=True,
        timeout=180,
        env=environment,
        cwd=cwd,
    )
    return result.returncode, decoded(result.stdout), decoded(result.stderr)


def assert_escaped(result: tuple[int, str, str], *, status: int = 0, shown: bool = True) -> None:
    rc, out, err = result
    assert "Traceback" not in err, err
    assert raw_controls(out) == [], out
    assert raw_controls(err) == [], err
    assert rc == status, (rc, out, err)
    if shown:
        assert SHOWN in out + err, (out, err)


# -- line-stats files -------------------------------------------------------------------------


def write_lines(
    folder: Path,
    pid: int,
    *,
    host: str = HOSTILE,
    status: str = "exited",
    digest: str = "a" * 64,
    functions: list | None = None,
    errors: tuple[str, ...] = (),
    uuid: str | None = None,
    name: str | None = None,
) -> Path:
    process = {
        "pid": pid,
        "parent_pid": 1,
        "host": host,
        "argv": [f"w{HOSTILE}.py"],
        "python": "3.12.1",
        "role": f"actor{HOSTILE}",
        "label": f"Spawn{HOSTILE}",
        "start_unix_ns": 1,
        "status": status,
    }
    if uuid is not None:
        process.update(run_id="20260813T2241-471c94", attempt=0, uuid=uuid)
    profile = {"project_folder": f"/proj{HOSTILE}", "clock": "tsc", "wall_ns": 1_000_000, "codes_outside": 3}
    source_file = f"/proj{HOSTILE}/mod{HOSTILE}.py"
    if functions is None:
        lines = [(11, 5, 50_000, f"    x = '{HOSTILE}'"), (12, 3, 900_000, f"\tcall{HOSTILE}()")]
        functions = [(source_file, 10, f"fn{HOSTILE}", lines)]
    document = linesfile.build_document(
        process=process, profile=profile, functions=functions, files={source_file: digest}, errors=errors
    )
    path = folder / (name or linesfile.lines_file_name(host, pid, f"{pid:08x}"))
    path.parent.mkdir(parents=True, exist_ok=True)
    linesfile.write_lines_file(path, document)
    return path


@pytest.fixture
def lines_dir(tmp_path: Path) -> Path:
    """Processes of every kind ``view`` names: two that agree on nothing (their source differs),
    one on another host, one that left nothing, one that ran no project line, an unreadable file."""
    folder = tmp_path / f"lines{IN_PATH}"
    folder.mkdir()
    write_lines(folder, 11, errors=(f"tracer failed: {HOSTILE}",))
    write_lines(folder, 12, digest="b" * 64)
    write_lines(folder, 13, host=f"other{HOSTILE}")
    write_lines(folder, 14, status="started", functions=[])
    write_lines(folder, 15, functions=[], errors=(f"not profiled: {HOSTILE}",))
    (folder / f"l_h{IN_PATH}_16_00000010.json").write_text('{"truncated')
    return folder


def test_view(lines_dir: Path) -> None:
    result = lineprofiler("view", lines_dir)
    assert_escaped(result)
    out = result[1]
    assert "Hosts: " in out and "left nothing" in out and "unreadable: " in out and "source differed" in out
    assert f"Function: {printable('fn' + HOSTILE)} at " in out


def test_view_by_role(lines_dir: Path) -> None:
    result = lineprofiler("view", "--by-role", "--sort", "line", lines_dir)
    assert_escaped(result)
    assert printable(f"actor{HOSTILE}".upper()) in result[1]


def test_view_of_a_profile_that_recorded_nothing(tmp_path: Path) -> None:
    write_lines(tmp_path, 11, functions=[])
    result = lineprofiler("view", tmp_path)
    assert_escaped(result)
    assert f"Project folder traced: {printable('/proj' + HOSTILE)}" in result[1]


def test_global_table_aligns_on_the_escaped_text(tmp_path: Path) -> None:
    # Each escape is four characters for one: columns sized on the raw text would be too narrow.
    functions = [
        ("/p/\x1b\x1b\x1b\x1b.py", 1, "fn\x1b\x1b\x1b", [(2, 1, 9_000, "first = 1")]),
        ("/p/plain.py", 1, "plainname", [(2, 1, 5_000, "second = 2")]),
    ]
    write_lines(tmp_path, 11, functions=functions)
    rc, out, _ = lineprofiler("view", "--functions", "0", tmp_path)
    assert rc == 0
    lines = out.splitlines()
    head, rule, first, second = lines[lines.index("Top 2 of 2 lines by time (2 functions)") + 1 :][:4]
    assert set(rule) == {"-"} and len(rule) == len(head)
    assert first.index(printable("fn\x1b\x1b\x1b")) == second.index("plainname") == head.index("Function")
    assert first.index("first = 1") == second.index("second = 2") == head.index("Source")


@pytest.mark.parametrize("target", ["missing", "empty", "corrupt"])
def test_view_errors(tmp_path: Path, target: str) -> None:
    path = tmp_path / f"{target}{IN_PATH}"
    if target == "empty":
        path.mkdir()
    elif target == "corrupt":
        path.write_text('{"trunc')
    assert_escaped(lineprofiler("view", path), status=2)


# -- lineprofiler run ---------------------------------------------------------------------------


SCRIPT = """\
def work():
    banner = r"{source}"
    return len(banner)


work.__code__ = work.__code__.replace(co_qualname={qualname!r})
for _ in range(3):
    work()
"""


@pytest.fixture
def hostile_script(tmp_path: Path) -> Path:
    project = tmp_path / f"proj{IN_PATH}"
    project.mkdir()
    script = project / f"evil{IN_PATH}.py"
    script.write_text(SCRIPT.format(source=IN_SOURCE, qualname=f"work{HOSTILE}"), encoding="utf-8")
    return script


def test_run_prints_its_tables_escaped(hostile_script: Path) -> None:
    result = lineprofiler("run", "--project", hostile_script.parent, hostile_script, cwd=hostile_script.parent)
    assert_escaped(result)
    assert printable(f'banner = r"{IN_SOURCE}"') in result[1]
    assert f"Function: {printable('work' + HOSTILE)} at evil" in result[1]


def test_run_with_children_prints_who_ran_escaped(hostile_script: Path) -> None:
    result = lineprofiler(
        "run",
        "--children",
        "--project",
        hostile_script.parent,
        hostile_script,
        cwd=hostile_script.parent,
        env={"LINEPROFILER_ROLE": f"role{IN_PATH}"},
    )
    assert_escaped(result)


def test_run_of_a_missing_script(tmp_path: Path) -> None:
    assert_escaped(lineprofiler("run", tmp_path / f"gone{IN_PATH}.py"), status=2)


# -- run directories ---------------------------------------------------------------------------


def make_run(run_dir: Path, *, lines: bool = True) -> Path:
    """Two processes of a role, host, phases and counters with every sequence in their names;
    the first left line stats of a lines window beside its worker file."""
    for rank in range(2):
        worker = SimWorker(f"actor{HOSTILE}", host=f"node{HOSTILE}", rank=rank)
        for _ in range(10):
            with worker.phase(f"step{HOSTILE}"):
                worker.work(5 * MS)
                worker.count(f"sims{HOSTILE}", 4)
            worker.wait(1 * MS)
        worker.wait(30 * S)
        path = worker.write(run_dir, errors=[f"sampler failed: {HOSTILE}"])
        if lines and rank == 0:
            write_lines(
                run_dir,
                worker.pid,
                host=worker.host,
                uuid=worker.uuid,
                name=str(layout.lines_path(run_dir, path).relative_to(run_dir)),
            )
    return run_dir


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path / f"run{IN_PATH}")


@pytest.mark.parametrize("options", [[], ["--lines"], ["--no-samples"]])
def test_report_text(run_dir: Path, options: list[str]) -> None:
    assert_escaped(lineprofiler("report", run_dir, *options))


def test_report_json_holds_no_raw_control(run_dir: Path) -> None:
    result = lineprofiler("report", "--json", "--lines", run_dir)
    assert_escaped(result, shown=False)
    json.loads(result[1])


def test_report_html_prints_its_path_escaped(run_dir: Path, tmp_path: Path) -> None:
    result = lineprofiler("report", run_dir, "--html")
    assert_escaped(result)
    assert result[1] == printable(str(run_dir / "report.html")) + "\n"
    target = tmp_path / f"page{IN_PATH}.html"
    result = lineprofiler("report", run_dir, "--html", target)
    assert_escaped(result)
    assert target.is_file()


def test_export_prints_its_path_escaped(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / f"trace{IN_PATH}.json"
    result = lineprofiler("export", run_dir, "--perfetto", target)
    assert_escaped(result)
    assert result[1] == printable(str(target)) + "\n" and target.is_file()


def test_compare(run_dir: Path, tmp_path: Path) -> None:
    other = make_run(tmp_path / f"other{IN_PATH}", lines=False)
    assert_escaped(lineprofiler("compare", run_dir, other))
    assert_escaped(lineprofiler("compare", "--json", run_dir, other), shown=False)
    result = lineprofiler("compare", "--html", tmp_path / f"cmp{IN_PATH}.html", run_dir, other)
    assert_escaped(result)


@pytest.mark.parametrize("target", ["missing", "empty", "corrupt"])
@pytest.mark.parametrize("command", ["report", "export", "compare", "top"])
def test_errors_that_name_the_run_dir(tmp_path: Path, target: str, command: str) -> None:
    path = tmp_path / f"{target}{IN_PATH}"
    if target != "missing":
        path.mkdir()
    if target == "corrupt":
        bad = path / layout.WORKERS_DIR / "n1" / "w_20260813T2241-471c94_7_0000abcd.json"
        bad.parent.mkdir(parents=True)
        bad.write_text('{"truncated')
    args = {
        "report": ["report", path],
        "export": ["export", path, "--perfetto", tmp_path / "t.json"],
        "compare": ["compare", path, path],
        "top": ["top", "--once", path],
    }[command]
    assert_escaped(lineprofiler(*args), status=2)


def test_a_wrong_attempt_and_an_unwritable_output(run_dir: Path, tmp_path: Path) -> None:
    assert_escaped(lineprofiler("report", "--attempt", f"x{IN_PATH}", run_dir), status=2)
    missing_folder = tmp_path / f"no{IN_PATH}" / "page.html"
    assert_escaped(lineprofiler("report", "--html", missing_folder, run_dir), status=2)


def test_usage_errors_echo_the_command_line_escaped(tmp_path: Path) -> None:
    assert_escaped(lineprofiler("report", tmp_path, f"--x{IN_PATH}"), status=2)
    assert_escaped(lineprofiler(f"cmd{IN_PATH}"), status=2, shown=False)
    assert_escaped(lineprofiler("top", "--interval", f"1{IN_PATH}", tmp_path), status=2, shown=False)


# -- in the user's own process ------------------------------------------------------------------


def test_print_stats_of_the_users_own_code(hostile_script: Path, tmp_path: Path) -> None:
    program = textwrap.dedent(
        f"""
        import runpy, sys
        from lineprofiler import LineProfiler

        lp = LineProfiler({str(hostile_script.parent)!r})
        with lp:
            runpy.run_path({str(hostile_script)!r})
        lp.print_stats()
        lp.print_global_top_stats()
        lp.dump({str(tmp_path / "saved.json")!r})
        from lineprofiler.lines.saved import SavedProfile
        saved = SavedProfile.load({str(tmp_path / "saved.json")!r})
        saved.print_stats()
        saved.print_global_top_stats()
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    out, err = decoded(result.stdout), decoded(result.stderr)
    assert result.returncode == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == [], out + err
    assert out.count(printable(f"work{HOSTILE}")) >= 4
