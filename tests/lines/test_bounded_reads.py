"""What the line profiler reads from a path it did not choose is bounded and never blocks: the
``[tool.lineprofiler]`` table's ``pyproject.toml``, and the source of a profiled file (a code
object's ``co_filename`` can name a FIFO, a device or a ``/proc`` file). Each gives one
problem (or no text) and the defaults, never a hang, a RecursionError or a MemoryError.

A check that would hang on a regression runs in a child process with a timeout and a memory
limit, so it fails instead. Devices are made with ``mknod`` in a temporary folder (as root),
never taken from the system's ``/dev``.
"""

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.config import MAX_PYPROJECT_BYTES, read_tool_table
from lineprofiler.lines.annotate.sources import MAX_SOURCE_BYTES

#: Long enough for a cold interpreter on a loaded machine; a blocking read never ends.
TIMEOUT_S = 60
#: What a child may map: a read of /dev/zero or /proc/self/pagemap runs into it at once.
MEMORY_LIMIT = 2 * 1024**3


def _limited() -> None:
    import resource

    # AddressSanitizer reserves terabytes of shadow address space at start, which no address-space
    # limit allows: under `make test-asan` the timeout alone stands guard, the plain jobs the limit.
    if not os.environ.get("LP_ASAN"):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_child(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; a hang fails the test rather than stalling it."""
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            preexec_fn=_limited,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not finish within {TIMEOUT_S} s: a read blocked")


def zero_device(folder: Path) -> Path:
    """A character device like /dev/zero (1, 5), made in ``folder``; skips when not root."""
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root (mknod)")
    path = folder / "zero"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("mknod is not permitted here (no CAP_MKNOD)")
    return path


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


# -- the [tool.lineprofiler] table -----------------------------------------------------------

START = """
import json, warnings
import lineprofiler
from lineprofiler.config import read_tool_table
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    profiler = lineprofiler.start_profiling(".", enabled=False)
config = read_tool_table(".")
print(json.dumps({"warnings": [str(w.message) for w in caught], "problems": list(config.problems),
                  "narrows": config.narrows}))
"""


def check_one_warning(project: Path, reason: str) -> None:
    import json

    done = run_child(START, project)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert len(said["warnings"]) == 1 and len(said["problems"]) == 1, said
    assert said["warnings"][0].endswith(said["problems"][0].removeprefix("pyproject.toml"))
    assert reason in said["warnings"][0] and "no table used" in said["warnings"][0]
    assert not said["narrows"]


def test_a_pyproject_that_is_a_fifo_is_not_waited_on(project):
    os.mkfifo(project / "pyproject.toml")  # no writer: opening it for reading blocks
    check_one_warning(project, "not a regular file (a FIFO)")


def test_a_pyproject_linked_to_a_zero_device_is_not_read(project, tmp_path):
    (project / "pyproject.toml").symlink_to(zero_device(tmp_path))
    check_one_warning(project, "not a regular file (a character device)")


def test_a_pyproject_nested_thousands_deep_is_one_problem(project):
    depth = 100_000
    (project / "pyproject.toml").write_text("a = " + "[" * depth + "]" * depth + "\n")
    config = read_tool_table(project)  # tomllib recurses per level: RecursionError unguarded
    assert len(config.problems) == 1 and "nested too deep" in config.problems[0]
    assert not config.narrows


def test_an_oversized_pyproject_is_not_read(project):
    # Valid TOML that narrows, behind a comment that makes it larger than the bound.
    filler = "# " + "x" * (MAX_PYPROJECT_BYTES + 1) + "\n"
    (project / "pyproject.toml").write_text(filler + '[tool.lineprofiler]\ninclude = ["src/*"]\n')
    config = read_tool_table(project)
    assert len(config.problems) == 1 and f"larger than the {MAX_PYPROJECT_BYTES:,}-byte limit" in config.problems[0]
    assert not config.narrows


def test_a_regular_pyproject_still_narrows(project):
    (project / "pyproject.toml").write_text('[tool.lineprofiler]\ninclude = ["src/*"]\n')
    config = read_tool_table(project)
    assert config.problems == () and config.include == ("src/*",)


# -- a profiled file's source ------------------------------------------------------------------

PROFILE_FROM = """
import io, sys
from lineprofiler import LineProfiler
from lineprofiler.cli import main
name = sys.argv[1]
code = compile("def f(n):\\n    return sum(range(n))\\n", name, "exec")
space = {}
exec(code, space)
profiler = LineProfiler(".")
profiler.add_function(space["f"])
with profiler:
    space["f"](10)
out = io.StringIO()
profiler.print_stats(file=out)
profiler.print_global_top_stats(file=out)
profiler.to_html("live.html")
profiler.dump("lines.json")
loaded = LineProfiler.load("lines.json")
loaded.print_stats(file=out)
loaded.to_html("saved.html")
assert main(["view", "lines.json"]) == 0
print(out.getvalue())
print("finished")
"""


def check_profiled_from(project: Path, name: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROFILE_FROM), str(name)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 2,
        preexec_fn=_limited,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("finished")
    # The numbers are there; the line has no text (none could be read), and says so.
    assert "Function: f at" in done.stdout and "<source unavailable>" in done.stdout
    for page in ("live.html", "saved.html"):
        assert "only the recorded lines" in (project / page).read_text(encoding="utf-8")


def test_a_source_file_that_is_a_fifo_is_not_waited_on(project):
    fifo = project / "fifo.py"
    os.mkfifo(fifo)
    try:
        check_profiled_from(project, fifo)
    except subprocess.TimeoutExpired:
        pytest.fail("reading the source of a profiled FIFO blocked")


def test_a_source_file_linked_to_proc_is_not_streamed(project):
    # /proc/self/pagemap says size 0 and then streams 8 bytes per page of the address space.
    link = project / "pagemap.py"
    link.symlink_to("/proc/self/pagemap")
    try:
        check_profiled_from(project, link)
    except subprocess.TimeoutExpired:
        pytest.fail("reading the source of a file linked to /proc streamed")


def test_a_source_file_that_is_a_zero_device_is_not_read(project, tmp_path):
    device = zero_device(tmp_path)
    link = project / "zero.py"
    link.symlink_to(device)
    try:
        check_profiled_from(project, link)
    except subprocess.TimeoutExpired:
        pytest.fail("reading the source of a profiled device streamed")


def test_an_oversized_source_file_is_not_read(project, tmp_path):
    from lineprofiler.lines.sourcefile import disk_lines, source_lines

    big = project / "big.py"
    big.write_text("x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1))
    assert disk_lines(str(big)) is None and source_lines(str(big)) is None
    small = project / "small.py"
    small.write_text("# -*- coding: latin-1 -*-\ns = '\xe9'\n", encoding="latin-1")
    assert source_lines(str(small)) == ["# -*- coding: latin-1 -*-\n", "s = '\xe9'\n"]


def test_view_of_a_fifo_is_one_line_not_a_hang(project):
    os.mkfifo(project / "l_host_1_00000000.json")
    done = run_child(
        """
        from lineprofiler.cli import main
        raise SystemExit(main(["view", "l_host_1_00000000.json"]))
        """,
        project,
    )
    assert done.returncode != 0
    assert "not a regular file (a FIFO)" in done.stderr and "Traceback" not in done.stderr
