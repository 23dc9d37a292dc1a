"""The source commit in the worker file: a real repository's HEAD and dirty state, asked of git
once per process tree and off the start path; git's own I/O never billed to a phase; git never
rewrites the user's index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lineprofiler.accounting import source_commit

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="git is not installed"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run([*GIT, "init", "-q", str(root)], check=True)
    (root / "train.py").write_text(
        "import glob, json, sys, time\n"
        "from lineprofiler.accounting import Profiler\n"
        "p = Profiler(sys.argv[1], role='trainer')\n"
        "with p:\n"
        "    with p.phase('step'):\n"
        "        time.sleep(0.05)\n"
        "(path,) = glob.glob(sys.argv[1] + '/**/w_*.json', recursive=True)\n"
        "print(json.dumps(json.load(open(path)).get('source')))\n"
    )
    (root / "model.py").write_text("LAYERS = 2\n")
    subprocess.run([*GIT, "-C", str(root), "add", "."], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "first"], check=True)
    return root


def recorded_source(repo: Path, run_dir: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(repo / "train.py"), str(run_dir)], capture_output=True, text=True, timeout=60, cwd=repo
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_a_clean_checkout_records_its_commit(repo, tmp_path):
    source = recorded_source(repo, tmp_path / "run")
    assert source["commit"] == head(repo) and source["dirty_files"] == 0 and source["diff_sha"] is None
    assert source["root"] == str(repo) and source["unavailable_reason"] is None


def test_a_modified_tree_is_dirty_and_two_diffs_are_told_apart(repo, tmp_path):
    (repo / "model.py").write_text("LAYERS = 3\n")
    first = recorded_source(repo, tmp_path / "one")
    (repo / "model.py").write_text("LAYERS = 4\n")
    second = recorded_source(repo, tmp_path / "two")
    assert first["commit"] == second["commit"] == head(repo)
    assert first["dirty_files"] == second["dirty_files"] == 1
    assert first["diff_sha"] and second["diff_sha"] and first["diff_sha"] != second["diff_sha"]


def test_outside_a_repository_the_source_says_why(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    source = source_commit.describe_source(folder)
    assert source["commit"] is None and "not in a git repository" in source["unavailable_reason"]


def test_asking_git_never_rewrites_the_index(repo):
    index = repo / ".git" / "index"
    (repo / "model.py").write_text("LAYERS = 5\n")
    os.utime(repo / "model.py", (1, 1))  # a stat change git status would refresh into the index
    before = index.stat().st_mtime_ns, index.read_bytes()
    assert source_commit.describe_source(repo)["dirty_files"] == 1
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before


BILLED = """
import json, os, sys
from lineprofiler.accounting import _phases, source_commit
repo, payload = sys.argv[1], sys.argv[2]
size = os.path.getsize(payload)
for name in source_commit.LATE_IMPORTS:  # as the late imports do: module files are read too
    __import__(name)
rec = _phases.Recorder(measure_cpu=False)
rec.make_primary()
with rec.phase("load", io=True):
    with open(payload, "rb") as handle:
        assert len(handle.read()) == size
    source = source_commit.describe_source(repo)
io = next(p for p in rec.snapshot()["phases"] if p["path"] == "load")["io_bytes"]
print(json.dumps({"size": size, "io": io, "dirty": source["dirty_files"], "own": _phases.own_io()}))
"""


def test_gits_reads_and_writes_are_the_profilers_own(repo, tmp_path):
    # Reaping a child adds its I/O to this process's counters: git's reads of the repository
    # (and of its own binary's libraries) would land in the phase open around it.
    (repo / "model.py").write_text("LAYERS = 6\n")  # dirty: all three git commands run
    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"x" * 5000)
    done = subprocess.run([sys.executable, "-c", BILLED, str(repo), str(payload)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["dirty"] == 1
    assert out["own"]["rchar"] > 10_000  # git really read: it was counted, as the profiler's
    assert out["io"]["rchar"] == out["size"] and out["io"]["wchar"] == 0


FORKED = """
import glob, json, os, sys
from lineprofiler.accounting import Profiler, source_commit
p = Profiler(sys.argv[1], role="r")
pid = os.fork()
if pid == 0:
    def no_git(root):
        raise AssertionError("a fork child asked git")
    source_commit.describe_source = no_git
    with p.phase("child"):
        pass
    p.close()
    os._exit(0)
os.waitpid(pid, 0)
p.close()
docs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/**/w_*.json", recursive=True)]
print(json.dumps({"parent": os.getpid(), "docs": [[d["identity"]["pid"], d.get("source"), d["errors"]] for d in docs]}))
"""


def test_a_fork_child_never_asks_git_itself(repo, tmp_path):
    # A child forked (from C, say) while the parent's thread was starting git could inherit a lock
    # held by a thread it does not have: it takes the parent's answer, or says it has none.
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(tmp_path / "run")], capture_output=True, text=True, timeout=60, cwd=repo
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    child = [(source, errors) for pid, source, errors in out["docs"] if pid != out["parent"]]
    assert len(child) == 1
    source, errors = child[0]
    assert not [e for e in errors if "asked git" in e]
    assert source["commit"] == head(repo) or "fork child does not ask" in source["unavailable_reason"]
