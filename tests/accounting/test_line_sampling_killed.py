"""``line_sampling``'s lines survive a SIGKILL: each process copies its section, after each window
that recorded a line, to ``w_<run>_<pid>_<uuid8>.sampled_lines`` beside its worker file, and the
report uses that live copy when it holds more windows than the last snapshot.

Two programs run at once (shared by the tests): one samples a hot loop in a phase with no
snapshot but its start file, and the test SIGKILLs it once its live copy exists; the other forks
a child that samples a phase and SIGKILLs itself, while the parent exits normally.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import run_cli
from helpers.env import clean_env

PROGRAM = textwrap.dedent(
    """
    import os, signal, sys, time
    from lineprofiler.accounting import Profiler
    from lineprofiler.runfiles import layout


    def hot(n):
        s = 0
        for i in range(n):
            s += i * i % 7  # HOT
        return s


    def sample(prof, phase, until):
        copy = layout.sampled_lines_path(prof.path)
        start = time.monotonic()
        while time.monotonic() < start + 0.8 or not until(copy):
            with prof.phase(phase):
                hot(2000)


    def main(run_dir, folder, how):
        prof = Profiler(run_dir, role="actor", line_sampling=0.05, snapshot_interval_s=None, lines_project=folder)
        if how == "killed":  # until the test kills it
            print(os.getpid(), flush=True)
            sample(prof, "mcts", lambda copy: False)
        pid = os.fork()
        if pid == 0:
            sample(prof, "kid", os.path.exists)
            os.kill(os.getpid(), signal.SIGKILL)
        sample(prof, "act", os.path.exists)
        os.waitpid(pid, 0)
        prof.close()
        print(pid, flush=True)


    main(*sys.argv[1:])
    """
)

HOT_LINE = next(n for n, text in enumerate(PROGRAM.splitlines(), 1) if text.endswith("# HOT"))


def _worker_files(run_dir: Path) -> dict[int, Path]:
    return {json.loads(p.read_text())["identity"]["pid"]: p for p in (run_dir / "workers").rglob("w_*.json")}


def _copy_of(worker_file: Path) -> Path:
    return worker_file.with_suffix(".sampled_lines")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("proj")
    (folder / "actor.py").write_text(PROGRAM)

    def start(how: str) -> subprocess.Popen[str]:
        argv = [sys.executable, str(folder / "actor.py"), str(folder / how), str(folder), how]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                                cwd=folder)  # fmt: skip

    killed, exited = start("killed"), start("exited")
    assert killed.stdout is not None
    pid = int(killed.stdout.readline())
    began = time.monotonic()
    deadline = began + 60
    while time.monotonic() < deadline:  # about 1 s of sampling, and a copy written
        files = _worker_files(folder / "killed") if (folder / "killed" / "workers").exists() else {}
        if pid in files and _copy_of(files[pid]).exists() and time.monotonic() > began + 1.0:
            break
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    killed.wait(timeout=30)
    out, err = exited.communicate(timeout=120)
    assert exited.returncode == 0, err
    return {"killed": folder / "killed", "pid": pid, "exited": folder / "exited", "kid": int(out.split()[-1])}


def _sampled(run_dir: Path) -> tuple[dict[str, Any], list[str]]:
    result = run_cli("report", run_dir, "--lines", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.stdout)
    (role,) = report["lines"]["sampled"]["roles"]
    return role, report["caveats"] if "caveats" in report else report["run"]["caveats"]


def _rows(role: dict[str, Any], phase: str) -> dict[int, dict[str, Any]]:
    (found,) = [p for p in role["phases"] if p["path"] == phase]
    return {row["line"]: row for row in found["rows"]}


def test_a_process_killed_before_any_snapshot_keeps_its_sampled_lines(runs):
    worker_file = _worker_files(runs["killed"])[runs["pid"]]
    assert json.loads(worker_file.read_text())["line_sampling"]["phases"] == []  # its start file: no line yet
    copy = json.loads(_copy_of(worker_file).read_text())
    role, caveats = _sampled(runs["killed"])
    assert role["processes"] == 1 and role["live_copies"] == 1
    assert role["windows"] == copy["windows"] >= 1
    hot = _rows(role, "mcts")[HOT_LINE]  # its share is not asserted: a window or two, on a busy machine
    assert hot["hits"] > 0 and hot["self_ns"] > 0
    said = [c for c in caveats if "sampled lines of actor pid" in c]
    assert len(said) == 1 and _copy_of(worker_file).name in said[0] and "live copy" in said[0]
    text = run_cli("report", runs["killed"], "--lines").out
    assert "1 process sampled at 5.0%; 1 from its live copy" in text


def test_a_fork_child_killed_keeps_its_own_and_a_clean_exit_reads_as_before(runs):
    files = _worker_files(runs["exited"])
    kid = files.pop(runs["kid"])
    ((parent_pid, parent),) = files.items()
    assert _copy_of(kid).exists() and _copy_of(parent).exists()  # one copy each
    parent_section = json.loads(parent.read_text())["line_sampling"]
    role, caveats = _sampled(runs["exited"])
    assert role["processes"] == 2 and role["live_copies"] == 1
    assert HOT_LINE in _rows(role, "kid") and HOT_LINE in _rows(role, "act")
    assert all("kid" != p["path"] for p in parent_section["phases"])  # the child's lines are its own
    (said,) = [c for c in caveats if "sampled lines of" in c]
    assert said.startswith(f"sampled lines of actor pid {runs['kid']} ") and "from its live copy" in said
    # The parent's final snapshot holds every window: its copy is not read, however many it claims.
    kid_windows = role["windows"] - parent_section["windows"]
    bogus = dict(json.loads(_copy_of(parent).read_text()), windows=10**6)
    bogus["phases"] = [dict(p, path="bogus") for p in bogus["phases"]]
    _copy_of(parent).write_text(json.dumps(bogus))
    again, _ = _sampled(runs["exited"])
    assert again["windows"] == parent_section["windows"] + kid_windows
    assert all(p["path"] != "bogus" for p in again["phases"])
    assert parent_pid != runs["kid"]


@pytest.mark.parametrize("damage", ["cut", "schema"])
def test_a_damaged_live_copy_is_a_caveat_not_a_crash(runs, tmp_path, damage):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["killed"], run_dir)
    copy = _copy_of(_worker_files(run_dir)[runs["pid"]])
    if damage == "cut":  # a copy cut short (a crash of the machine, a full disk)
        copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 2])
    else:
        copy.write_text(json.dumps(dict(json.loads(copy.read_text()), version=99)))
    result = run_cli("report", run_dir, "--lines")
    assert result.code == 0 and "Traceback" not in result.err, result.err
    (line,) = [c for c in result.out.splitlines() if "sampled lines of actor pid" in c]
    assert "from its last snapshot (live copy" in line
    assert ("not JSON" if damage == "cut" else "version 99") in line
    assert "sampled: 0 windows covering" in result.out  # its start file's section: it never wrote a snapshot
