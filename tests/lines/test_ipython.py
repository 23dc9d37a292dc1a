"""The IPython extension, in a real InteractiveShell: %load_ext lineprofiler, %lprofile, %%lprofile."""

import re

import pytest

IPython = pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from lineprofiler import LineProfiler  # noqa: E402
from lineprofiler.lines.notebook import INPUT_GLOB, cell_globs  # noqa: E402
from lineprofiler.lines.project import ProjectFilter  # noqa: E402

CELL_F = """\
def f(n):
    total = 0
    for i in range(n):
        total += i
    return total
"""


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    result = sh.run_cell("%load_ext lineprofiler")
    assert result.success
    sh.run_cell(CELL_F)
    yield sh
    sh.run_cell("%unload_ext lineprofiler")


def run(shell, capsys, code):
    result = shell.run_cell(code)
    out = capsys.readouterr()
    return result, out.out + out.err


def test_line_magic_profiles_a_function_defined_in_a_cell(shell, capsys):
    result, out = run(shell, capsys, "%lprofile f(100)")
    assert result.success, out
    assert re.search(r"Function: f at <ipython-input-\d+-[0-9a-f]+>:1", out)
    assert re.search(r"^\s+4\s+100\s.*total \+= i$", out, re.M)
    assert re.search(r"^\s+3\s+101\s.*for i in range\(n\):$", out, re.M)
    assert "Top " in out


def test_cell_magic_profiles_the_cells_own_code(shell, capsys):
    result, out = run(shell, capsys, "%%lprofile -t 3 -s hits\nx = 0\nfor k in range(20):\n    x += f(3)\n")
    assert result.success, out
    assert re.search(r"Function: <module> at <ipython-input-\d+-[0-9a-f]+>:1", out)
    assert re.search(r"^\s+3\s+20\s.*x \+= f\(3\)$", out, re.M)  # the cell's line 3, 20 times
    assert "Top 3 of" in out and "lines by hits" in out
    assert shell.user_ns["x"] == 20 * 3


def test_save_and_return(shell, capsys, tmp_path):
    target = tmp_path / "cell.json"
    result, out = run(shell, capsys, f"prof = %lprofile -r -f 0 -o {target} f(30)")
    assert result.success, out
    assert "Function:" not in out and f"Saved to {target}" in out
    prof = shell.user_ns["prof"]
    assert isinstance(prof, LineProfiler)
    saved = LineProfiler.load(target)
    assert saved.get_stats() == prof.get_stats()
    (fs,) = [s for s in saved.get_stats().values() if s.qualname == "f"]
    assert fs.lines[4].hits == 30 and fs.lines[4].source == "        total += i"


def test_bad_options_are_usage_errors(shell, capsys, tmp_path):
    for line, message in (
        ("%lprofile -s bogus f(1)", "-s must be one of time, self, hits, line"),
        ("%lprofile -t x f(1)", "not a valid value"),
        (f"%lprofile -p {tmp_path / 'nope'} f(1)", "project_folder does not exist"),
        ("%lprofile", "needs a statement"),
    ):
        result, out = run(shell, capsys, line)
        assert not result.success and "UsageError" in out and message in out, (line, out)


def test_an_error_in_the_statement_still_prints(shell, capsys):
    result, out = run(shell, capsys, "%lprofile f(5); 1 / 0")
    assert "ZeroDivisionError" in out and "Function: f at" in out


def test_a_profiler_made_in_a_notebook_includes_cells(shell, capsys):
    result, out = run(
        shell,
        capsys,
        "from lineprofiler import LineProfiler\nnb = LineProfiler()\nwith nb:\n    f(7)\n",
    )
    assert result.success, out
    nb = shell.user_ns["nb"]
    assert INPUT_GLOB in nb._filter.include
    (fs,) = [s for s in nb.get_stats().values() if s.qualname == "f"]
    assert fs.lines[4].hits == 7


def test_kernel_cell_files_are_included(shell, monkeypatch, tmp_path):
    monkeypatch.setattr(shell.compile, "get_code_name", lambda raw, code, n: "/tmp/ipykernel_4242/8f1c.py")
    globs = cell_globs()
    assert globs == [INPUT_GLOB, "/tmp/ipykernel_4242/*"]
    for folder in ("/", str(tmp_path)):  # containing the kernel's folder, or not
        flt = ProjectFilter(folder, include=globs, exclude=["tmp"])
        assert flt.is_project_file("/tmp/ipykernel_4242/8f1c.py")
        assert flt.is_project_file("<ipython-input-3-8f1c2a>")
        assert not flt.is_project_file("/tmp/other/8f1c.py")


def test_unload_and_load_again(shell, capsys):
    run(shell, capsys, "%unload_ext lineprofiler")
    result, out = run(shell, capsys, "%lprofile f(1)")
    assert not result.success and "not found" in out
    result, out = run(shell, capsys, "%load_ext lineprofiler")
    assert result.success
    result, out = run(shell, capsys, "%lprofile f(2)")
    assert result.success and "Function: f" in out


CELL_G = """\
def g(n):
    return f(n) + f(2 * n)

def broken(n):
    f(n)
    raise ValueError(f"broken at {n}")
"""


def test_the_statements_value_is_the_magics(shell, capsys):
    shell.run_cell(CELL_G)
    result, out = run(shell, capsys, "x = %lprofile -t 3 f(3)")
    assert result.success, out
    assert shell.user_ns["x"] == 3 and "Out[" not in out  # assigned, not displayed
    assert "Function: f at" in out
    result, out = run(shell, capsys, "%%lprofile -t 3\ny = f(4)\ny + g(1)\n")
    assert result.success, out
    assert result.result == 6 + 1  # a cell's value: its last expression's
    assert shell.user_ns["y"] == 6


def test_an_exception_fails_the_cell_after_the_tables(shell, capsys):
    shell.run_cell(CELL_G)
    result, out = run(shell, capsys, "%lprofile -t 3 broken(4)")
    assert not result.success
    assert isinstance(result.error_in_exec, ValueError) and str(result.error_in_exec) == "broken at 4"
    assert re.search(r"^\s+4\s+4\s.*total \+= i$", out, re.M)  # what ran before it is shown
    assert out.index("Function: f at") < out.index("broken at 4")  # the tables, then the traceback
    result, out = run(shell, capsys, "%%lprofile -t 3\nz = 1\nbroken(2)\nz = 2\n")
    assert not result.success and isinstance(result.error_in_exec, ValueError)
    assert shell.user_ns["z"] == 1 and "Function: broken at" in out


def test_f_names_the_functions_to_show(shell, capsys):
    shell.run_cell(CELL_G)
    result, out = run(shell, capsys, "%lprofile -f f g(5)")
    assert result.success, out
    assert re.findall(r"^Function: (\S+) at", out, re.M) == ["f"]
    assert re.search(r"^\s+4\s+15\s.*total \+= i$", out, re.M)  # f(5) and f(10)
    result, out = run(shell, capsys, "import json\n%lprofile -f json.dumps -f g -t 3 g(1) + len(json.dumps([1]))")
    assert result.success, out
    assert sorted(re.findall(r"^Function: (\S+) at", out, re.M)) == ["dumps", "g"]
    assert f"Function: dumps at {__import__('json').__file__}:" in out  # outside the project: recorded
    result, out = run(shell, capsys, "%lprofile -f g f(1)")
    assert result.success and re.search(r"^Function: g at <ipython-input-\d+-[0-9a-f]+>:1: did not run$", out, re.M)
    result, out = run(shell, capsys, "%lprofile -f nowhere f(1)")
    assert not result.success and "UsageError: -f nowhere: NameError" in out


def test_f_n_counts_the_functions_not_the_statement(shell, capsys):
    shell.run_cell(CELL_G)
    result, out = run(shell, capsys, "%lprofile -f 1 g(50)")
    assert result.success, out
    assert re.findall(r"^Function: (\S+) at", out, re.M) == ["g"]  # the statement's own line is no table
