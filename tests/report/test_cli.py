"""The command line, run as users run it: ``python -m lineprofiler`` in a subprocess.

Every bad input gives one line on stderr and exit status 2 when nothing can be reported;
when only some files are bad the report is printed from the rest. Never a traceback.
"""

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lp_report_builders import MS, S, SimWorker, actor_loop

from lineprofiler import __version__
from lineprofiler.runfiles import workerfile


def lineprofiler(*args, prefix=(), stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "LINEPROFILER_DEBUG"}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "lineprofiler", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("lineprofiler")
    for fragment in fragments:
        assert fragment in result.stderr


def make_run(run_dir, n=2, **kwargs):
    paths = []
    for rank in range(n):
        worker = SimWorker("actor", rank=rank, **kwargs)
        actor_loop(worker, 20, mcts_ns=8 * MS, env_ns=2 * MS)
        worker.wait(60 * S)
        paths.append(worker.write(run_dir))
    return paths


@functools.cache
def _unprivileged_prefix():
    """How to run a command that permission bits apply to, or None.

    Root reads through mode 000, so as root the command runs in a new user namespace mapped to
    root, where files owned by an unmapped uid obey their permission bits.
    """
    if os.geteuid() != 0:
        return ()
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    probe = Path(f"/tmp/lp-perm-probe-{os.getpid()}")
    probe.write_text("x")
    try:
        os.chown(probe, 65534, 65534)
        probe.chmod(0)
        result = subprocess.run([unshare, "--user", "--map-root-user", "cat", str(probe)], capture_output=True)
    finally:
        probe.unlink()
    return None if result.returncode == 0 or b"Permission denied" not in result.stderr else (
        unshare, "--user", "--map-root-user")


def make_unreadable(path):
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
    path.chmod(0)


@pytest.fixture
def unprivileged():
    prefix = _unprivileged_prefix()
    if prefix is None:
        pytest.skip("cannot drop the ability to read through permissions here (root without user namespaces)")
    return prefix


# -- good input -------------------------------------------------------------------------------


def test_report_prints_the_report(tmp_path):
    make_run(tmp_path / "profile")
    result = lineprofiler("report", tmp_path / "profile")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("Runtime 1m 00s   Processes 2   Roles actor x2\n")
    counter = f"    + {'mcts_simulations':<24}{'2,560':>8}{'8,000.0/s':>14}{'125.0us/ea':>13}  always 64\n"
    assert counter in result.stdout
    no_samples = lineprofiler("report", tmp_path / "profile", "--no-samples")
    assert no_samples.returncode == 0 and no_samples.stdout == result.stdout


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("lineprofiler")
    if not script.exists():
        pytest.skip("the package is not installed in this environment (no console script)")
    result = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == f"lineprofiler {__version__}"


def test_version_and_help_for_every_command():
    assert lineprofiler("--version").stdout.strip() == f"lineprofiler {__version__}"
    for args, expected in ((["--help"], "report"), (["report", "--help"], "--no-samples"),
                           (["compare", "--help"], "--json")):
        result = lineprofiler(*args)
        assert result.returncode == 0 and expected in result.stdout and result.stderr == ""


@pytest.mark.parametrize(
    "args, fragment",
    [
        ([], "required"),
        (["report"], "required: RUN_DIR"),
        (["frobnicate"], "invalid choice"),
        (["report", "x", "--bogus"], "unrecognized arguments: --bogus"),
        (["compare", "a"], "required: B"),
    ],
)
def test_usage_errors_are_one_line(args, fragment):
    assert_one_line_error(lineprofiler(*args), fragment, "--help")


# -- bad input: nothing to report -------------------------------------------------------------


def test_missing_directory(tmp_path):
    assert_one_line_error(lineprofiler("report", tmp_path / "nope"), "no such directory")


def test_directory_that_is_a_file(tmp_path):
    (tmp_path / "profile").write_text("hello")
    assert_one_line_error(lineprofiler("report", tmp_path / "profile"), "not a directory")


def test_directory_with_no_worker_files(tmp_path):
    (tmp_path / "profile" / "workers" / "node07").mkdir(parents=True)
    (tmp_path / "profile" / "workers" / "node07" / "notes.txt").write_text("x")
    assert_one_line_error(lineprofiler("report", tmp_path / "profile"), "no worker files")


def test_only_a_truncated_file(tmp_path):
    (path,) = make_run(tmp_path, n=1)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert_one_line_error(lineprofiler("report", tmp_path), "none of the 1 worker file", "truncated JSON")


def test_only_corrupt_files(tmp_path):
    paths = make_run(tmp_path, n=2)
    paths[0].write_bytes(b"\xff\xfe\x00garbage")
    paths[1].write_text(json.dumps({"kind": "something-else"}))
    assert_one_line_error(lineprofiler("report", tmp_path), "none of the 2 worker files")


def test_only_a_newer_schema(tmp_path):
    worker = SimWorker("actor")
    document = worker.document()
    document["schema_version"] = 99
    workerfile.write_worker_file(worker.path_in(tmp_path), document)
    assert_one_line_error(lineprofiler("report", tmp_path), "schema version 99", "upgrade lineprofiler")


def test_unreadable_run_directory(tmp_path, unprivileged):
    run_dir = tmp_path / "profile"
    make_run(run_dir)
    tmp_path.chmod(0o755)
    make_unreadable(run_dir)
    assert_one_line_error(lineprofiler("report", run_dir, prefix=unprivileged), "Permission denied")


# -- bad input: some files bad, the report from the rest ---------------------------------------


def test_partly_bad_files_give_a_report_from_the_rest_with_caveats(tmp_path, unprivileged):
    paths = make_run(tmp_path, n=4)
    paths[1].write_bytes(paths[1].read_bytes()[:-7])
    newer = json.loads(paths[2].read_bytes())
    newer["schema_version"] = 2
    paths[2].write_text(json.dumps(newer))
    tmp_path.chmod(0o755)
    make_unreadable(paths[3])
    result = lineprofiler("report", tmp_path, prefix=unprivileged)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "Processes 1   Roles actor x1" in result.stdout
    caveats = result.stdout[result.stdout.index("CAVEATS"):]
    for path, reason in ((paths[1], "truncated JSON"), (paths[2], "schema version 2"),
                         (paths[3], "cannot read: Permission denied")):
        assert f"{path.relative_to(tmp_path)}: " in caveats and reason in caveats


def test_unlistable_host_folder(tmp_path, unprivileged):
    make_run(tmp_path, n=1, host="node07")
    make_run(tmp_path, n=1, host="node08")
    tmp_path.chmod(0o755)
    make_unreadable(tmp_path / "workers" / "node08")
    result = lineprofiler("report", tmp_path, prefix=unprivileged)
    assert result.returncode == 0, result.stderr
    assert "Hosts node07 (1 node)" in result.stdout
    (line,) = [line for line in result.stdout.splitlines() if "node08" in line]
    assert line.startswith("  - folder not listed, its workers are missing from every total: ")
    assert line.endswith("node08: cannot list: Permission denied")


def test_output_closed_early_is_not_an_error(tmp_path):
    """``lineprofiler report run/ | head``: the reader leaves; exit 0, nothing on stderr."""
    make_run(tmp_path, n=2)
    env = {k: v for k, v in os.environ.items() if k != "LINEPROFILER_DEBUG"}
    for command in ("report", "compare"):
        args = [tmp_path] if command == "report" else [tmp_path, tmp_path]
        read_end, write_end = os.pipe()
        os.close(read_end)  # no reader from the start: the first write fails with EPIPE
        try:
            result = subprocess.run([sys.executable, "-m", "lineprofiler", command, *map(str, args)], stdout=write_end,
                                    stderr=subprocess.PIPE, text=True, timeout=120, env=env)
        finally:
            os.close(write_end)
        assert result.returncode == 0, (command, result.stderr)
        assert result.stderr == ""


# -- compare ----------------------------------------------------------------------------------


def test_compare_text_and_json(tmp_path):
    make_run(tmp_path / "a")
    for rank in range(2):
        worker = SimWorker("actor", rank=rank)
        actor_loop(worker, 20, mcts_ns=12 * MS, env_ns=2 * MS)
        worker.write(tmp_path / "b")
    text = lineprofiler("compare", tmp_path / "a", tmp_path / "b")
    assert text.returncode == 0, text.stderr
    assert "p50/p99 changes are marked * only beyond the histograms' bucket error" in text.stdout
    row = next(line for line in text.stdout.splitlines() if line.startswith("mcts "))
    assert row.split() == ["mcts", "80.0%", "85.7%", "+5.7pp", "8.0ms", "12.0ms", "+50.0%", "*",
                           "8.0ms", "12.0ms", "+50.0%", "*"]

    as_json = lineprofiler("compare", tmp_path / "a", tmp_path / "b", "--json")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["kind"] == "lineprofiler-compare"
    (role,) = document["roles"]
    mcts = next(p for p in role["phases"] if p["path"] == "iteration/self_play/mcts")
    assert mcts["a"]["share"] == pytest.approx(0.8) and mcts["b"]["share"] == pytest.approx(12 / 14)
    assert mcts["p50_real"] is True and mcts["p50_change"] == pytest.approx(0.5)


def test_compare_with_a_bad_side_names_the_side(tmp_path):
    make_run(tmp_path / "a")
    assert_one_line_error(lineprofiler("compare", tmp_path / "a", tmp_path / "missing"), "B: no such directory")
    assert_one_line_error(lineprofiler("compare", tmp_path / "missing", tmp_path / "a"), "A: no such directory")
