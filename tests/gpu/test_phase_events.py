"""phase(name, gpu=True): CUDA event pairs from a bounded pool, read back without waiting.

There is no NVIDIA GPU on the machines that run this suite, so the events are the one thing
faked (``helpers/fake_cuda_events.py``: an event that completes after a chosen number of queries, on a
clock the test moves). The recorder, its hooks, the profiler, the worker file and the report
are the real ones. ``benchmarks/gpu_check_phase_events.py`` runs the real CUDA path on a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import run_cli
from helpers.env import clean_env
from helpers.fake_cuda_events import FakeEvents
from lineprofiler.accounting import _phases, gpu_events
from lineprofiler.accounting.gpu_events import PhaseGpuTimer
from lineprofiler.report import format as fmt
from lineprofiler.runfiles import workerfile

MS = 1_000_000


def timed_recorder(source: FakeEvents, pool_pairs: int = gpu_events.POOL_PAIRS) -> tuple[Any, PhaseGpuTimer]:
    recorder = _phases.Recorder()
    timer = PhaseGpuTimer(recorder.current_path, source, pool_pairs=pool_pairs)
    recorder.set_gpu(timer.enter, timer.exit)
    return recorder, timer


def rows(timer: PhaseGpuTimer) -> dict[str, tuple[int, int, int, int]]:
    return {r["path"]: (r["gpu_ns"], r["pairs"], r["dropped"], r["pending"]) for r in timer.document()["phases"]}


def test_a_pair_still_pending_at_a_snapshot_is_counted_at_the_next():
    source = FakeEvents(ready_after=1)
    recorder, timer = timed_recorder(source)
    with recorder.phase("step"):
        with recorder.phase("forward", gpu=True):
            source.gpu_work(2 * MS)
            with recorder.phase("matmul", gpu=True):  # nested: its own pair, its own path
                source.gpu_work(3 * MS)
        with recorder.phase("plain"):  # not gpu=True: no events
            source.gpu_work(7 * MS)
    timer.drain()  # the first snapshot: the events are not complete yet
    assert rows(timer) == {"step/forward": (0, 0, 0, 1), "step/forward/matmul": (0, 0, 0, 1)}
    timer.drain()
    assert rows(timer) == {"step/forward": (5 * MS, 1, 0, 0), "step/forward/matmul": (3 * MS, 1, 0, 0)}
    assert source.created == 4
    document = timer.document()
    assert (document["available"], document["unavailable_reason"], document["source"]) == (True, None, "fake")


def test_a_full_pool_drops_pairs_and_reuses_them_once_read():
    source = FakeEvents(ready_after=10**9)  # never complete until the test says
    recorder, timer = timed_recorder(source, pool_pairs=2)
    for _ in range(5):
        with recorder.phase("matmul", gpu=True):
            source.gpu_work(MS)
    timer.drain()
    assert rows(timer) == {"matmul": (0, 0, 3, 2)}
    source.ready_after = 0
    for _path, pair in timer._pending:
        for event in pair:
            event.record()  # completes them, at the clock's time now: each pair measures 0
    timer.drain()
    assert rows(timer) == {"matmul": (0, 2, 3, 0)}
    with recorder.phase("matmul", gpu=True):
        source.gpu_work(4 * MS)
    timer.drain()
    assert rows(timer) == {"matmul": (4 * MS, 3, 3, 0)}
    assert source.created == 4  # the freed pairs were reused, never more than the pool


def test_an_event_that_raises_never_reaches_the_program():
    source = FakeEvents()
    source.record_error = RuntimeError("CUDA error: an illegal memory access")
    recorder, timer = timed_recorder(source)
    ran = []
    with recorder.phase("forward", gpu=True):
        ran.append(1)
    with pytest.raises(ZeroDivisionError):  # the program's own exception still goes through
        with recorder.phase("forward", gpu=True):
            raise ZeroDivisionError
    assert ran == [1] and timer._stacks.open == []
    document = timer.document()
    assert document["errors"] == 2 and "illegal memory access" in document["last_error"]
    assert recorder.phase("forward", gpu=True).gpu and not recorder.phase("forward").gpu

    # A hook that raises (here: the recorder's path lookup) is the recorder's error, not the program's.
    def broken(name: str) -> None:
        raise ValueError("hook broke")

    recorder.set_gpu(broken, broken)
    with recorder.phase("forward", gpu=True):
        ran.append(2)
    assert ran == [1, 2]
    broke = ["gpu enter: ValueError: hook broke", "gpu exit: ValueError: hook broke"]
    assert recorder.snapshot()["errors"][-2:] == broke



def test_entries_whose_exit_never_came_are_given_up_and_a_fork_child_starts_empty():
    source = FakeEvents()
    recorder, timer = timed_recorder(source, pool_pairs=3)
    with recorder.phase("forward", gpu=True):
        timer.enter("lost")  # as when the core could not push the frame: no exit will come
        source.gpu_work(MS)
    timer.exit("forward")  # an exit whose entry is gone: ignored
    timer.drain()
    assert rows(timer) == {"forward": (MS, 1, 0, 0)} and timer._stacks.open == [] and timer._created == 1
    with recorder.phase("forward", gpu=True):
        pass  # left pending: the child must not read the parent's events
    timer.after_fork_child()
    timer.drain()
    assert timer.document()["phases"] == [] and timer._created == 0 and len(timer._orphans) == 1

def cuda_module(compiled: bool, initialized: bool) -> types.SimpleNamespace:
    cuda = types.SimpleNamespace(_is_compiled=lambda: compiled, is_initialized=lambda: initialized, Event=object)
    return types.SimpleNamespace(cuda=cuda)


def test_without_cuda_the_time_is_absent_with_why_never_zero():
    assert gpu_events.torch_source(None) == (None, gpu_events.NO_TORCH, False)  # decided again at the next entry
    assert gpu_events.torch_source(cuda_module(False, False)) == (None, gpu_events.NO_DEVICE, True)
    assert gpu_events.torch_source(cuda_module(True, False)) == (None, gpu_events.NOT_INITIALISED, False)
    source, reason, final = gpu_events.torch_source(cuda_module(True, True))
    assert isinstance(source, gpu_events.TorchCudaEvents) and final and reason == ""
    assert _phases.Noop().phase("matmul", gpu=True) is not None  # a disabled profiler takes gpu=True too

    recorder = _phases.Recorder()
    timer = PhaseGpuTimer(recorder.current_path)
    assert timer.document()["unavailable_reason"] == gpu_events.NEVER_ENTERED
    recorder.set_gpu(timer.enter, timer.exit)
    with recorder.phase("matmul", gpu=True):
        pass
    document = timer.document()
    torch = sys.modules.get("torch")  # imported by another test of this session, or not
    if torch is None:
        expected = gpu_events.NO_TORCH
    elif not torch.cuda._is_compiled():
        expected = gpu_events.NO_DEVICE  # the CPU build CI tests with
    else:
        pytest.skip("a CUDA build of torch is imported: benchmarks/gpu_check_phase_events.py checks it")
    assert (document["available"], document["unavailable_reason"], document["phases"]) == (False, expected, [])


# ---- end to end: a real profiler in a real process, its worker file and the report

SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from helpers.fake_cuda_events import FakeEvents
    from lineprofiler.accounting import Profiler
    from lineprofiler.accounting.gpu_events import PhaseGpuTimer

    profiler = Profiler(run_dir=sys.argv[1], role="trainer", snapshot_interval_s=None, sample_interval_s=None)
    (timer,) = [a for a in profiler._attachments if isinstance(a, PhaseGpuTimer)]
    source = FakeEvents(ready_after=1)
    timer.use_source(source)

    def step():
        with profiler.phase("step"):
            time.sleep(0.004)  # the CPU's part of the step: the GPU idles meanwhile
            with profiler.phase("forward", gpu=True):
                source.gpu_work(2_000_000)

    for _ in range(3):
        step()
    profiler.flush()  # these three are still pending: read at the final snapshot
    step()  # pending at the end: said, not counted
    profiler.close()
    print("program output unchanged")
    """
)


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gpu_events")
    script = root / "train.py"
    script.write_text(SCRIPT)
    made = subprocess.run(
        [sys.executable, str(script), str(root / "run"), str(Path(__file__).parent.parent)],
        capture_output=True, text=True, env=clean_env(), cwd=root, timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout == "program output unchanged\n"
    return root / "run"


def test_the_worker_file_holds_each_phase_gpu_time_and_what_was_pending_at_the_end(gpu_run):
    (path,) = workerfile.find_worker_files(gpu_run)
    document = workerfile.read_worker_file(path)
    phase_time = document["gpu"]["phase_time"]
    assert (phase_time["available"], phase_time["source"], phase_time["ended"], phase_time["errors"]) == (
        True, "fake", True, 0,
    )
    assert phase_time["pool_pairs"] == gpu_events.POOL_PAIRS
    (row,) = phase_time["phases"]
    assert row == {"path": "step/forward", "gpu_ns": 6_000_000, "pairs": 3, "dropped": 0, "pending": 1}


def test_the_report_gives_gpu_time_beside_wall_time_and_the_idle_time_between_steps(gpu_run):
    doc = json.loads(run_cli("report", gpu_run, "--json").stdout)
    phases = {p["path"]: p for p in doc["dominant"]["phases"]}
    assert phases["step/forward"]["gpu_ns"] == 6_000_000
    assert phases["step/forward"]["gpu"] == {"pairs": 3, "dropped": 0, "pending": 1}
    assert phases["step"]["gpu_ns"] is None and phases["step"]["gpu_reason"] == "not a gpu=True phase"
    (idle,) = doc["dominant"]["gpu_idle"]
    step_wall = phases["step"]["wall_ns"]
    assert idle["role"] == "trainer" and idle["step"] == "step"
    assert idle["gpu_ns"] == 6_000_000 and idle["idle_ns"] == step_wall - 6_000_000 > 0
    text = run_cli("report", gpu_run).stdout
    head = next(line for line in text.splitlines() if line.startswith("DOMINANT PHASES"))
    assert head.rstrip().endswith("gpu")
    forward = next(line for line in text.splitlines() if line.lstrip().startswith("step/forward"))
    assert forward.rstrip().endswith(fmt.duration(6_000_000))
    assert "GPU idle between steps" in text and "1 event pair still pending at the end" in text


def test_without_cuda_the_report_says_why_there_is_no_gpu_time(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from lineprofiler.accounting import Profiler

            profiler = Profiler(run_dir=sys.argv[1], snapshot_interval_s=None, sample_interval_s=None)
            for _ in range(3):
                with profiler.phase("matmul", gpu=True):
                    sum(range(1000))
            profiler.close()
            assert "torch" not in sys.modules  # gpu=True never imports torch for the program
            """
        )
    )
    made = subprocess.run([sys.executable, str(script), str(tmp_path / "run")], capture_output=True, text=True,
                          env=clean_env(), timeout=120)
    assert made.returncode == 0, made.stderr
    doc = json.loads(run_cli("report", tmp_path / "run", "--json").stdout)
    (matmul,) = doc["dominant"]["phases"]
    assert (matmul["gpu_ns"], matmul["gpu_reason"]) == (None, gpu_events.NO_TORCH)
    assert doc["dominant"]["gpu_note"] == gpu_events.NO_TORCH and doc["dominant"]["gpu_idle"] == []
    text = run_cli("report", tmp_path / "run").stdout
    assert f"gpu=True phases have no GPU time: {gpu_events.NO_TORCH}" in text
    assert "DOMINANT PHASES" in text and " gpu\n" not in text  # no column of dashes
