"""SIGKILL at random points loses nothing: each worker says over a pipe what it completed, and the
report (through the live files) counts exactly that.

Protocol, per phase exit and per count: the worker sends ``X <path>`` (or ``C <phase> <n>``) just
before the call and ``D`` just after. A kill between the two leaves one operation whose effect
may or may not be recorded: the report may count it, nothing else."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

try:
    from lp_installed import START_METHODS, start_method
except ImportError:  # a spawn or forkserver child importing this module for its target: no conftest
    START_METHODS, start_method = [], None  # type: ignore[assignment]

from lineprofiler.report.read.merge import load_run
from lineprofiler.runfiles import layout, livefile

RUN_ID = "livekill"
N_NAMES = 300  # several node chunks: kills land during growth of the tree


def _worker(run_dir: str, conn, seed: int, snapshot_s: float) -> None:  # type: ignore[no-untyped-def]
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="k", enabled=True, measure_cpu=False, snapshot_interval_s=snapshot_s)
    conn.send_bytes(b"R")
    rng = random.Random(seed)
    while True:
        outer = prof.phase("step")
        outer.__enter__()
        name = f"p{rng.randrange(N_NAMES)}"
        inner = prof.phase(name)
        inner.__enter__()
        if rng.random() < 0.5:
            conn.send_bytes(f"C step/{name} 3".encode())
            prof.count("c", 3)
            conn.send_bytes(b"D")
        conn.send_bytes(f"X step/{name}".encode())
        inner.__exit__(None, None, None)
        conn.send_bytes(b"D")
        conn.send_bytes(b"X step")
        outer.__exit__(None, None, None)
        conn.send_bytes(b"D")


def _expected(messages: list[bytes]) -> tuple[Counter[str], Counter[str], tuple[str, str] | None]:
    entries: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    pending: tuple[str, str] | None = None
    for message in messages:
        text = message.decode()
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
        else:
            pending = (text[0], text[2:])
    return entries, counts, pending


def _drain(conn) -> list[bytes]:  # type: ignore[no-untyped-def]
    out = []
    try:
        while True:
            out.append(conn.recv_bytes())
    except (EOFError, OSError):
        pass
    return out


def _round(method: str, run_dir: Path, n: int, rng: random.Random) -> int:
    ctx = mp.get_context(start_method(method))
    procs = []
    for _i in range(n):
        reader, writer = ctx.Pipe(duplex=False)
        snapshot_s = rng.choice([0.05, 5.0])
        proc = ctx.Process(target=_worker, args=(str(run_dir), writer, rng.randrange(2**31), snapshot_s))
        proc.start()
        writer.close()
        procs.append((proc, reader))
    results: dict[int, list[bytes]] = {}

    def pump() -> None:
        # Keep the pipes flowing, so no worker blocks on a full pipe.
        for _, r in procs:
            try:
                for _ in range(200):  # bounded: a worker may write faster than this reads
                    if not r.poll(0):
                        break
                    results.setdefault(id(r), []).append(r.recv_bytes())
            except (EOFError, OSError):
                pass

    for proc, reader in procs:
        if rng.random() < 0.2:
            time.sleep(rng.random() * 0.03)  # early: before the profiler, or its first snapshot
        else:
            ready = time.monotonic() + 30
            while b"R" not in results.get(id(reader), []) and time.monotonic() < ready and proc.is_alive():
                pump()
                time.sleep(0.002)
            at = time.monotonic() + rng.random() * rng.choice([0.001, 0.05, 0.3])
            while time.monotonic() < at:
                pump()
                time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        assert proc.exitcode == -signal.SIGKILL
    kills = [(proc, reader, 0.0) for proc, reader in procs]
    checked = 0
    by_pid = {}
    for proc, reader, _ in kills:
        messages = results.get(id(reader), []) + _drain(reader)
        by_pid[proc.pid] = messages
    if not (run_dir / layout.WORKERS_DIR).exists():
        assert all(_expected(m)[0] == Counter() for m in by_pid.values())
        return 0
    run = load_run(run_dir)
    workers = {w.pid: w for w in run.workers}
    for pid, messages in by_pid.items():
        entries, counts, pending = _expected(messages)
        worker = workers.get(pid)
        if worker is None:
            assert not entries and not counts, f"{method} pid {pid}: completed work but no worker file"
            continue
        got = Counter({p["path"]: p["entries"] for p in worker.document["phases"] if p["entries"]})
        got_counts = Counter({c["phase"]: c["total"] for c in worker.document["counters"] if c["total"]})
        assert worker.numbers_from in ("live", "json"), worker.numbers_from
        if pending is not None and pending[0] == "X" and got != entries:
            entries[pending[1]] += 1  # the exit ran, the kill came before "D"
        if pending is not None and pending[0] == "C" and got_counts != counts:
            path, n = pending[1].rsplit(" ", 1)
            counts[path] += int(n)
        assert got == entries, (
            f"{method} pid {pid}: {sorted((got - entries).items())[:5]} / {sorted((entries - got).items())[:5]}"
        )
        assert got_counts == counts, f"{method} pid {pid}: counters differ"
        checked += 1
    for line in run.caveats:
        assert (
            "killed before any data" not in line
            or "pid" not in line
            or all(f"pid {pid} " not in line for pid, w in workers.items() if w.numbers_from == "live")
        )
    return checked


@pytest.mark.slow
@pytest.mark.parametrize("method", START_METHODS)
def test_sigkill_at_random_points_loses_nothing(method: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEPROFILER_RUN_ID", RUN_ID)
    rng = random.Random(hash(method) & 0xFFFF)
    kills = 0
    checked = 0
    for r in range(3):
        run_dir = tmp_path / f"run{r}"
        checked += _round(method, run_dir, 12, rng)
        kills += 12
    assert kills >= 36
    assert checked >= 12  # most die with data; those killed before the profiler existed have none


def test_live_file_cut_or_newer_is_a_caveat(tmp_path: Path) -> None:
    """A live file cut mid-growth, zero-filled, or from a newer version: read with problems,
    never an error; the report falls back or uses what is whole."""
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="x", enabled=True, measure_cpu=False, snapshot_interval_s=None)
    for i in range(200):
        with prof.phase(f"n{i}"):
            prof.count("c")
    assert prof.live_path is not None
    data = prof.live_path.read_bytes()
    full = livefile.read_live(prof.live_path, data=data)
    assert full.total_entries == 200 and not full.problems
    cut = livefile.read_live(prof.live_path, data=data[: len(data) // 2])
    assert cut.problems and cut.total_entries < 200
    zero_tail = data[: len(data) // 2] + bytes(len(data) - len(data) // 2)
    assert livefile.read_live(prof.live_path, data=zero_tail).problems
    newer = bytearray(data)
    newer[8:12] = (99).to_bytes(4, "little")
    assert not livefile.read_live(prof.live_path, data=bytes(newer)).usable
    with pytest.raises(livefile.LiveFileError):
        livefile.read_live(prof.live_path, data=bytes(len(data)))
    # The report with a newer-version live file: the snapshot's numbers, and a caveat.
    prof.flush()
    live = prof.live_path
    os.kill(os.getpid(), 0)
    prof._snapshots.stop_thread()
    live.write_bytes(bytes(newer))
    run = load_run(tmp_path)
    (worker,) = run.workers
    assert worker.numbers_from.startswith(f"json: live file {live.name}: live file version 99")
    prof.recorder.live_detach()  # type: ignore[union-attr]
    prof.close()


def test_fork_child_gets_its_own_live_file(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="x", enabled=True, measure_cpu=False, snapshot_interval_s=None)
    with prof.phase("parent"):
        pass
    parent_live = prof.live_path
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with prof.phase("child"):
                pass
            ok = prof.live_path is not None and prof.live_path != parent_live
            code = 0 if ok and prof.recorder is not None and prof.recorder.live else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent_live is not None
    parent = livefile.read_live(parent_live)
    assert [p["path"] for p in parent.phases] == ["parent"]
    lives = sorted(layout.worker_dir(tmp_path, prof.identity.host).glob("*.live"))  # type: ignore[union-attr]
    assert len(lives) == 2
    (child_live,) = [p for p in lives if p != parent_live]
    assert [p["path"] for p in livefile.read_live(child_live).phases] == ["child"]
    prof.close()
