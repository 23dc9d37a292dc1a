"""`lineprofiler report` over runs made with every wired piece switched on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from lp_installed import HAS_TORCH, HAS_VIZTRACER, NO_TORCH, NVIDIA_DRIVER, ON_A_GPU_HOST, TORCH_HAS_CUDA
from lp_integration_helpers import clean_env, worker_documents

PIPELINE = """
import multiprocessing as mp
from lineprofiler.accounting import Profiler

def actor():
    p = Profiler(role="actor", annotate=True)
    for _ in range(6):
        with p.phase("iteration"), p.phase("self_play", sync=True):
            p.count("moves", 3)
    p.close()

if __name__ == "__main__":
    {imports}
    learner = Profiler(run_dir={run_dir!r}, role="learner", annotate=True, **{window})
    for _ in range(5):
        with learner.phase("iteration"):
            with learner.phase("train", sync=True):
                sum(i * i for i in range(2000))
    for method in ("spawn", "fork"):
        child = mp.get_context(method).Process(target=actor)
        child.start()
        child.join()
        assert child.exitcode == 0
    learner.close()
"""


def make_run(run_python, tmp_path, *, window: dict | None = None, imports: str = "", env=None):
    run_dir = tmp_path / "run"
    code = PIPELINE.format(window=repr(window or {}), imports=imports or "pass", run_dir=str(run_dir))
    run_python(code, env=env, as_file=True)
    return run_dir


def block(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title)
    out = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        out.append(line)
    return out


@pytest.fixture(scope="module")
def viztracer_run(tmp_path_factory):
    """One run of the pipeline with a VizTracer window, shared by the tests that read it."""
    if not HAS_VIZTRACER:
        pytest.skip("viztracer is not installed")
    tmp_path = tmp_path_factory.mktemp("viztracer-run")
    run_dir = tmp_path / "run"
    window = {"backend": "viztracer", "backend_window": (2, 4), "window_phase": "iteration"}
    script = tmp_path / "main_script.py"  # spawn children import the main module by its file
    script.write_text(textwrap.dedent(PIPELINE.format(window=repr(window), imports="pass", run_dir=str(run_dir))))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=clean_env(),
                            cwd=tmp_path, timeout=240)
    assert result.returncode == 0, result.stderr
    return run_dir


def test_the_report_of_a_run_with_a_window_renders(viztracer_run, report):
    documents = worker_documents(viztracer_run)
    assert sorted(d["identity"]["role"] for d in documents) == ["actor", "actor", "learner"]
    for document in documents:
        assert document["gpu"]["vram"]["unavailable_reason"] == "torch is not imported by this process"
    rc, out, err = report(viztracer_run)
    assert rc == 0, err
    assert "LEARNER  (1 process" in out and "ACTOR  (2 processes" in out
    assert "ITERATIONS  phase iteration (window_phase)" in out.splitlines()
    assert "GPU" in out.splitlines()
    assert (viztracer_run / "backend").is_dir()  # the learner's window wrote its trace beside the run
    rc, out, err = report(viztracer_run, "--no-samples")
    assert rc == 0, err
    assert "GPU" not in out.splitlines()


@pytest.mark.skipif(NVIDIA_DRIVER, reason=ON_A_GPU_HOST)
def test_the_report_says_why_the_gpu_block_is_absent(viztracer_run, report):
    for document in worker_documents(viztracer_run):
        assert document["gpu"]["nvml"]["available"] is False
    rc, out, err = report(viztracer_run)
    assert rc == 0, err
    gpu = block(out, "GPU")
    assert len(gpu) == 1 and gpu[0].startswith("absent: cannot load NVML (no NVIDIA driver?): ")
    assert "libnvidia-ml.so.1" in gpu[0]


def test_a_loadable_nvml_without_devices_gives_its_own_reason(run_python, tmp_path, report, nvml_stub):
    run_dir = make_run(run_python, tmp_path, env={"LINEPROFILER_NVML_LIBRARY": str(nvml_stub)})
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["capabilities"]["nvml"]["unavailable_reason"] == "NVML sees no GPU"
    assert meta["capabilities"]["nvml"]["library"] == str(nvml_stub)
    rc, out, err = report(run_dir)
    assert rc == 0, err
    assert block(out, "GPU") == ["absent: NVML sees no GPU"]


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_the_report_over_a_torch_run(run_python, tmp_path, report):
    window = {"backend": "torch", "backend_window": (2, 4), "window_phase": "iteration"}
    # NVML pinned to a library that does not exist: the GPU block reads the same on a GPU host.
    missing = str(tmp_path / "libnvidia-ml.so.1")
    run_dir = make_run(run_python, tmp_path, window=window, imports="import torch",
                       env={"LINEPROFILER_NVML_LIBRARY": missing})
    rc, out, err = report(run_dir)
    assert rc == 0, err
    assert block(out, "GPU")[0].startswith(f"absent: cannot load NVML (no NVIDIA driver?): {missing}")
    learner = next(d for d in worker_documents(run_dir) if d["identity"]["role"] == "learner")
    assert learner["backend_window"]["state"] == "done"
    # The run never touches CUDA: on a CUDA build, its context is never created.
    expected = "CUDA is not initialised in this process" if TORCH_HAS_CUDA else "torch is built without CUDA"
    assert learner["gpu"]["vram"]["unavailable_reason"] == expected
    assert learner["errors"] == []


IO_RUN = """
import os, time
from lineprofiler.accounting import Profiler

profiler = Profiler(run_dir={run_dir!r}, role="learner", sample_interval_s=0.05)
payload = os.urandom(1 << 20)
for step in range(4):
    with profiler.phase("iteration"):
        with profiler.phase("checkpoint", io=True):
            with open({target!r} + str(step), "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
        time.sleep(0.06)  # a few sampler ticks per step
profiler.close()
"""


def test_the_report_of_a_real_run_has_the_io_and_memory_blocks(run_python, tmp_path, report):
    """End to end through merge: io=True bytes land in I/O BY PHASE, the sampler's sample file
    feeds I/O and MEMORY, and --no-samples keeps the exact block but skips the sampled ones."""
    run_dir = tmp_path / "run"
    run_python(IO_RUN.format(run_dir=str(run_dir), target=str(tmp_path / "ckpt")), as_file=True)
    code, text, err = report(run_dir)
    assert code == 0, err
    by_phase = block(text, "I/O BY PHASE (measured exactly)")
    (row,) = [line for line in by_phase if line.split()[0] == "iteration/checkpoint"]
    assert "4.2 MB" in row  # 4 x 1 MiB written under io=True, through write() and to the disk
    assert "MEMORY (RSS, sampled)" in text
    sampled = block(text, "I/O")
    assert any(line.startswith("Write") for line in sampled)
    code, quick, err = report(run_dir, "--no-samples")
    assert code == 0, err
    assert "I/O BY PHASE (measured exactly)" in quick
    assert "MEMORY (RSS, sampled)" not in quick and "\nI/O\n" not in quick
