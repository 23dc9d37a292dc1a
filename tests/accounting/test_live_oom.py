"""The kernel's OOM killer loses nothing: a worker in a memory cgroup with a small limit records
phases and counters, says over a pipe what it completed, then allocates inside phases until the
kernel kills it; the report (from its live file) counts exactly what it completed.

Protocol on the worker's stdout, per phase exit and per count: ``X <path>`` (``C <phase> <n>``)
just before the call and ``D`` just after. A kill between the two leaves one operation that may
or may not be recorded; nothing else may differ.

Needs root and a memory controller: cgroup v2 (``memory.max``) where the unified hierarchy has
it, else cgroup v1 (``memory.limit_in_bytes``). Skips, saying why, where neither can be made."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineprofiler.report.read.merge import load_run

LIMIT = 96 * 1024 * 1024

WORKER = """
import os, sys
from lineprofiler.accounting import Profiler
out = os.fdopen(1, "w", buffering=1)
prof = Profiler(sys.argv[1], role="oom", enabled=True, measure_cpu=False, snapshot_interval_s=None)
out.write("R\\n")
assert sys.stdin.readline() == "go\\n"

def leave(phase, path):
    out.write(f"X {path}\\n")
    phase.__exit__(None, None, None)
    out.write("D\\n")

for i in range(200):                       # completed work before the memory runs out
    step = prof.phase("step"); step.__enter__()
    inner = prof.phase(f"p{i % 7}"); inner.__enter__()
    out.write(f"C step/p{i % 7} {i}\\n"); prof.count("items", i); out.write("D\\n")
    leave(inner, f"step/p{i % 7}")
    leave(step, "step")
held = []
while True:                                # each entry of "grow" holds 4 MiB more, until killed
    grow = prof.phase("grow"); grow.__enter__()
    held.append(b"x" * (4 << 20))
    out.write(f"C grow 4\\n"); prof.count("mib", 4); out.write("D\\n")
    leave(grow, "grow")
"""


def _mounts() -> list[tuple[str, str, list[str]]]:
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            parts = line.split()
            if len(parts) >= 4:
                found.append((parts[1], parts[2], parts[3].split(",")))
    return found


def _try_v2(name: str) -> tuple[Path, str, Path] | str:
    """A v2 cgroup with memory.max = LIMIT: (dir, procs file, oom events file), or why not."""
    mounts = [point for point, kind, _ in _mounts() if kind == "cgroup2"]
    if not mounts:
        return "no cgroup2 mount"
    root = Path(mounts[0])
    try:
        controllers = (root / "cgroup.controllers").read_text().split()
    except OSError as error:
        return f"{root}/cgroup.controllers unreadable: {error.strerror}"
    if "memory" not in controllers:
        return f"cgroup2 at {root} has no memory controller (controllers: {' '.join(controllers) or 'none'})"
    try:
        if "memory" not in (root / "cgroup.subtree_control").read_text().split():
            (root / "cgroup.subtree_control").write_text("+memory")
        group = root / name
        group.mkdir()
    except OSError as error:
        return f"cannot create a cgroup2 memory group under {root}: {error.strerror}"
    try:
        (group / "memory.max").write_text(str(LIMIT))
        if (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")
    except OSError as error:
        group.rmdir()
        return f"cannot set {group}/memory.max: {error.strerror}"
    return group, "cgroup.procs", group / "memory.events"


def _try_v1(name: str) -> tuple[Path, str, Path] | str:
    mounts = [point for point, kind, options in _mounts() if kind == "cgroup" and "memory" in options]
    if not mounts:
        return "no cgroup v1 memory hierarchy mounted"
    group = Path(mounts[0]) / name
    try:
        group.mkdir()
    except OSError as error:
        return f"cannot create {group}: {error.strerror}"
    try:
        (group / "memory.limit_in_bytes").write_text(str(LIMIT))
    except OSError as error:
        group.rmdir()
        return f"cannot set {group}/memory.limit_in_bytes: {error.strerror}"
    try:  # no swap either, where swap accounting exists
        (group / "memory.memsw.limit_in_bytes").write_text(str(LIMIT))
    except OSError:
        pass
    return group, "cgroup.procs", group / "memory.oom_control"


@pytest.fixture
def memory_cgroup() -> Iterator[tuple[Path, str, Path]]:
    if os.geteuid() != 0:
        pytest.skip("creating a memory cgroup needs root")
    name = f"lp-test-{os.getpid()}"
    made = _try_v2(name)
    if isinstance(made, str):
        v1 = _try_v1(name)
        if isinstance(v1, str):
            pytest.skip(f"no memory cgroup: {made}; {v1}")
        made = v1
    group = made[0]
    try:
        yield made
    finally:
        for _ in range(100):  # the killed process leaves the group a moment after it is reaped
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)


def _oom_kills(events: Path) -> int:
    for line in events.read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return -1


def _expected(lines: list[str]) -> tuple[Counter[str], Counter[str], tuple[str, str] | None]:
    entries: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    pending: tuple[str, str] | None = None
    for text in lines:
        if text == "R":
            continue
        if text == "D":
            assert pending is not None
            kind, what = pending
            if kind == "X":
                entries[what] += 1
            else:
                path, n = what.rsplit(" ", 1)
                counts[path] += int(n)
            pending = None
        elif text:
            pending = (text[0], text[2:])
    return entries, counts, pending


def test_oom_killed_worker_keeps_everything_it_recorded(
    memory_cgroup: tuple[Path, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group, procs_file, events = memory_cgroup
    monkeypatch.setenv("LINEPROFILER_RUN_ID", "oom")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline() == "R\n"
        (group / procs_file).write_text(str(proc.pid))
        proc.stdin.write("go\n")
        proc.stdin.flush()
        lines = [line.rstrip("\n") for line in proc.stdout]  # until the kernel kills it
        status = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status == -signal.SIGKILL, status
    assert _oom_kills(events) >= 1, f"{events}: killed, but not by the OOM killer"
    entries, counts, pending = _expected(["R", *lines])
    assert entries["step"] == 200 and entries["grow"] >= 1  # it got past the first phase of growth

    run = load_run(run_dir)
    (worker,) = [w for w in run.workers if w.pid == proc.pid]
    assert worker.numbers_from == "live"
    got = Counter({p["path"]: p["entries"] for p in worker.document["phases"] if p["entries"]})
    got_counts = Counter({c["phase"]: c["total"] for c in worker.document["counters"] if c["total"]})
    if pending is not None and pending[0] == "X" and got != entries:
        entries[pending[1]] += 1  # the exit ran; the kill came before "D"
    if pending is not None and pending[0] == "C" and got_counts != counts:
        path, n = pending[1].rsplit(" ", 1)
        counts[path] += int(n)
    assert got == entries
    assert got_counts == counts
    assert not any("killed before any data" in line and str(proc.pid) in line for line in run.caveats)
