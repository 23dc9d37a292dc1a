"""Whatever happens to a running worker's live file, the worker itself is unharmed.

Another process truncates the file, copies another file over it, or overwrites its records; a
child forked from C (bypassing Python's fork hooks) records phases into its copy of the mapping.
Each worker here is a real process doing a known number of phase entries and counts before and
after the damage; it must exit 0 and its final snapshot must hold exactly what it did. A SIGBUS
that is not ours still ends the process the way it would have without the profiler.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.runfiles import livefile, workerfile

# Phase entries per round, and rounds before and after the damage. The second half makes new
# paths (the tree grows: new segments of the file) and new counters, and stores into every node
# the first half made.
N_PATHS = 150
ROUNDS = 3

WORKER = textwrap.dedent(
    """
    import json, os, sys
    from lineprofiler.accounting import Profiler

    n_paths, rounds = int(sys.argv[2]), int(sys.argv[3])
    fault_first = sys.argv[4] == "faulthandler"
    prof = Profiler(sys.argv[1], role="victim", enabled=True, measure_cpu=False, snapshot_interval_s=3600)
    if fault_first:
        import faulthandler
        faulthandler.enable()  # after the profiler: its handler runs before ours and re-raises

    def work(prefix):
        for _ in range(rounds):
            for i in range(n_paths):
                with prof.phase("step"), prof.phase(f"{prefix}{i}"):
                    prof.count(f"{prefix}_c", 2)

    work("a")
    print(json.dumps({"live": str(prof.live_path), "pid": os.getpid()}), flush=True)
    sys.stdin.readline()  # the test damages the file now
    work("a")
    work("b")
    prof.close()
    print("done", flush=True)
    """
)


def _start(run_dir: Path, mode: str = "") -> tuple[subprocess.Popen[str], Path]:
    return _spawn(WORKER, str(run_dir), str(N_PATHS), str(ROUNDS), mode)


def _spawn(script: str, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """A worker running ``script``, once it has printed its live file's path."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line, child.stderr.read() if child.stderr else ""
    return child, Path(json.loads(line)["live"])


def _finish(child: subprocess.Popen[str]) -> str:
    out, err = child.communicate("go\n", timeout=120)
    assert child.returncode == 0, f"worker died ({child.returncode}): {err[-2000:]}"
    assert out.strip() == "done"
    return err


def _final_document(run_dir: Path) -> dict:
    (path,) = workerfile.find_worker_files(run_dir)
    return workerfile.read_worker_file(path)


def _assert_exact(document: dict) -> None:
    """Every entry and count the worker made, in its final snapshot."""
    entries = {p["path"]: p["entries"] for p in document["phases"]}
    counters = {(c["phase"], c["name"]): c["total"] for c in document["counters"]}
    assert document["times"]["status"] == "exited"
    assert entries["step"] == 3 * ROUNDS * N_PATHS
    for i in range(N_PATHS):
        assert entries[f"step/a{i}"] == 2 * ROUNDS, i
        assert entries[f"step/b{i}"] == ROUNDS, i
        assert counters[(f"step/a{i}", "a_c")] == 4 * ROUNDS
        assert counters[(f"step/b{i}", "b_c")] == 2 * ROUNDS


@pytest.mark.parametrize("size", [0, 100, livefile._HEADER.size, 4096, 4096 + 8192])
def test_truncated_under_a_running_worker(tmp_path: Path, size: int) -> None:
    """`: > file`, a cleanup script's truncate: the next store past the end would be SIGBUS."""
    run = tmp_path / "run"
    child, live = _start(run)
    os.truncate(live, size)
    err = _finish(child)
    document = _final_document(run)
    _assert_exact(document)
    assert any("live file lost" in e for e in document["errors"]), document["errors"]
    assert "Bus error" not in err


def test_truncated_with_faulthandler_installed_after_us(tmp_path: Path) -> None:
    """faulthandler's handler runs first and re-raises the SIGBUS without its address: the
    profiler recognises its shrunk file by its size, and the process still lives."""
    run = tmp_path / "run"
    child, live = _start(run, "faulthandler")
    os.truncate(live, 0)
    _finish(child)
    document = _final_document(run)
    _assert_exact(document)
    assert any("live file lost" in e for e in document["errors"]), document["errors"]


def test_a_shorter_file_copied_over_it(tmp_path: Path) -> None:
    """`cp small.live running.live`: truncate to the other's size, then its bytes."""
    other = tmp_path / "small.live"
    other.write_bytes(b"\0" * 4096 + b"x" * 100)
    run = tmp_path / "run"
    child, live = _start(run)
    shutil.copyfile(other, live)
    _finish(child)
    _assert_exact(_final_document(run))


def test_a_larger_file_copied_over_it(tmp_path: Path) -> None:
    """Another run's (larger) live file copied over this one: no fault, the worker's own stores
    go on into the pages, and nothing it reads comes from them."""
    run = tmp_path / "run"
    child, live = _start(run)
    other = tmp_path / "big.live"
    other.write_bytes(bytes(range(256)) * (4 * live.stat().st_size // 256 + 1))
    shutil.copyfile(other, live)
    _finish(child)
    _assert_exact(_final_document(run))


@pytest.mark.parametrize("fill", [b"\0", b"\xff", b"\x41"])
def test_records_overwritten_in_place(tmp_path: Path, fill: bytes) -> None:
    """The chunks after the header page overwritten (zeros, 0xff, text), size unchanged: the
    pointers that used to live there made the next snapshot crash."""
    run = tmp_path / "run"
    child, live = _start(run)
    size = live.stat().st_size
    with open(live, "r+b") as f:
        f.seek(4096)
        f.write(fill * (size - 4096))
        f.seek(0)
        f.write(fill * 2048)  # the header too
    _finish(child)
    _assert_exact(_final_document(run))


CHAIN = textwrap.dedent(
    """
    import mmap, os, signal, sys
    from lineprofiler.accounting import Profiler

    prof = Profiler(sys.argv[1], role="x", enabled=True, snapshot_interval_s=3600)
    with prof.phase("p"):
        pass
    how = sys.argv[2]
    if how == "kill":
        os.kill(os.getpid(), signal.SIGBUS)
    elif how == "fault":  # a SIGBUS of the program's own: a store past the end of its own mapping
        path = os.path.join(sys.argv[1], "own.bin")
        with open(path, "w+b") as f:
            f.truncate(8192)
            m = mmap.mmap(f.fileno(), 8192)
            f.truncate(0)
            m[5000] = 1
    elif how == "handler":
        signal.signal(signal.SIGBUS, lambda s, f: (print("handled", flush=True), os._exit(5)))
        os.kill(os.getpid(), signal.SIGBUS)
    print("survived", flush=True)
    """
)


@pytest.mark.parametrize("how", ["kill", "fault"])
def test_a_sigbus_that_is_not_ours_still_ends_the_process(tmp_path: Path, how: str) -> None:
    done = subprocess.run([sys.executable, "-c", CHAIN, str(tmp_path), how], capture_output=True, text=True)
    # Under AddressSanitizer the handler that was there before ours is ASan's: it reports the
    # bus error and aborts, which is the chain working.
    expected = {-signal.SIGBUS, -signal.SIGABRT} if os.environ.get("LP_ASAN") else {-signal.SIGBUS}
    assert done.returncode in expected, (done.returncode, done.stderr[-2000:])
    assert "survived" not in done.stdout


def test_a_python_sigbus_handler_set_later_still_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHAIN, str(tmp_path), "handler"], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (5, "handled"), done.stderr[-2000:]


C_FORK = textwrap.dedent(
    """
    import ctypes, json, os, sys
    from lineprofiler.accounting import Profiler
    from lineprofiler.runfiles import livefile

    prof = Profiler(sys.argv[1], role="parent", enabled=True, measure_cpu=False, snapshot_interval_s=3600)
    for i in range(100):
        with prof.phase("before"):
            prof.count("n")
    # PyDLL: fork() with the GIL held, as a C extension calls it (CDLL lets go of it around the
    # call, and a child forked while the snapshot thread held it could never run Python)
    pid = ctypes.PyDLL(None).fork()  # no Python fork hook runs in the child
    if pid == 0:
        # the child records into the tree it inherited: new paths too (new segments)
        for i in range(300):
            with prof.phase("child_only"), prof.phase(f"c{i}"):
                prof.count("child_count")
        with prof.phase("before"):
            pass
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    for i in range(50):
        with prof.phase("after"):
            pass
    prof.flush()
    live = livefile.read_live(prof.live_path)
    print(json.dumps({
        "status": status,
        "live": {p["path"]: p["entries"] for p in live.phases},
        "counters": {c["name"]: c["total"] for c in live.counters},
        "pid": live.pid,
    }), flush=True)
    prof.close()
    """
)


@pytest.mark.skipif(
    bool(os.environ.get("LP_ASAN")),
    reason="GCC 12's libasan allocator is not fork-safe with threads: a child forked from C hangs in it",
)
def test_a_child_forked_from_c_never_writes_the_parents_file(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", C_FORK, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["status"] == 0
    assert result["live"] == {"before": 100, "after": 50}
    assert result["counters"] == {"n": 100}
    document = _final_documents_by_role(tmp_path)["parent"]
    entries = {p["path"]: p["entries"] for p in document["phases"]}
    assert entries == {"before": 100, "after": 50}


def _final_documents_by_role(run_dir: Path) -> dict[str, dict]:
    out = {}
    for path in workerfile.find_worker_files(run_dir):
        document = workerfile.read_worker_file(path)
        out[document["identity"]["role"]] = document
    return out


def test_a_python_fork_child_leaves_the_parents_file_alone(tmp_path: Path) -> None:
    """The same through os.fork (Python's hooks run): the child's records go to its own file."""
    script = C_FORK.replace("ctypes.PyDLL(None).fork()", "os.fork()")
    assert script != C_FORK
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["live"] == {"before": 100, "after": 50}


FROZEN = textwrap.dedent(
    """
    import json, resource, signal, sys
    from lineprofiler.accounting import Profiler

    # Files of this process may not grow past the live file's first node segment: the next one
    # fails (EFBIG), as on a full disk, and the file must keep what it has.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
    prof = Profiler(sys.argv[1], role="f", enabled=True, measure_cpu=False, snapshot_interval_s=3600)
    for rounds in range(3):
        for i in range(150):
            with prof.phase(f"p{i}"):
                prof.count("c")
    print(json.dumps({"live": str(prof.live_path)}), flush=True)
    sys.stdin.readline()
    prof.close()
    """
)


def test_a_live_file_that_cannot_grow_keeps_what_it_has(tmp_path: Path) -> None:
    limit = 4096 + 200 * 1024  # the header and one node segment (about 160 kB), not two
    child, live_path = _spawn(FROZEN, str(tmp_path), str(limit))
    data = live_path.read_bytes()
    flags = int.from_bytes(data[livefile._HEADER.size + 2048 :][:4], "little")
    assert flags == 1  # frozen, not abandoned
    live = livefile.read_live(live_path, data=data)
    assert live.usable, live.problems
    # the first chunk's paths are in the file, exact and current; the rest only in memory
    entries = {p["path"]: p["entries"] for p in live.phases}
    assert 0 < len(entries) < 150
    assert set(entries.values()) == {3}
    _, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, err[-2000:]
    document = _final_document(tmp_path)
    assert {p["path"]: p["entries"] for p in document["phases"]} == {f"p{i}": 3 for i in range(150)}
    assert any("could not grow" in e for e in document["errors"]), document["errors"]
