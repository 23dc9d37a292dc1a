"""The GPU block end to end: NVML read by the sampler, columns in the sample file, the report.

A learner and an actor it spawns run under the real ``Profiler``. NVML is the test stub (built
from ``nvml_stub.c``), loaded by the sampler through ``LINEPROFILER_NVML_LIBRARY`` and scripted
by the script itself through ctypes (the same library, so the same script): the learner's
process sees two devices, device 0 busy 92 % with the learner's own pid at a steady 64 % SM
share, device 1 busy 8 % with nothing of the run on it; the actor's NVML sees no device. The
sampler writes ``gpuN_busy`` / ``gpuN_mine`` into the learner's sample file, and
``lineprofiler report`` prints them. VRAM comes from ``torch.cuda.memory_stats``, which needs a
CUDA device: there the script installs a stand-in torch module with only the calls the profiler
makes (the one part that cannot be real on a machine without an NVIDIA GPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from lineprofiler.runfiles import samplefile, workerfile

SCRIPT = textwrap.dedent(
    """
    import ctypes
    import importlib.machinery
    import multiprocessing as mp
    import os
    import sys
    import time
    import types

    stub = ctypes.CDLL(os.environ["LINEPROFILER_NVML_LIBRARY"])  # the library the sampler loads
    stub.lpstub_reset()  # the spawned actor sees no device


    def cuda_torch(peaks):
        # Stand-in for a CUDA build of torch: the torch.cuda calls the profiler makes.
        def stats(device):
            allocated, reserved = peaks[device]
            return {"allocated_bytes.all.current": allocated // 2, "allocated_bytes.all.peak": allocated,
                    "reserved_bytes.all.current": reserved // 2, "reserved_bytes.all.peak": reserved}

        module = types.ModuleType("torch")
        module.__spec__ = importlib.machinery.ModuleSpec("torch", None)
        module.cuda = types.SimpleNamespace(
            _is_compiled=lambda: True, is_initialized=lambda: True, device_count=lambda: len(peaks),
            memory_stats=stats, synchronize=lambda: None,
        )
        sys.modules["torch"] = module


    def actor():
        cuda_torch([(4_000_000_000, 5_000_000_000)])
        from lineprofiler.accounting import Profiler

        profiler = Profiler(role="actor", sample_interval_s=0.05)
        with profiler.phase("rollout"):
            time.sleep(0.3)
        profiler.close()


    if __name__ == "__main__":
        stub.lpstub_set_device_count(2)
        stub.lpstub_set_busy(0, 92, 0)
        stub.lpstub_set_busy(1, 8, 0)
        stub.lpstub_set_steady(0, 0, 64)  # pid 0: whichever process asks, here the learner
        cuda_torch([(6_100_000_000, 8_400_000_000), (0, 0)])
        from lineprofiler.accounting import Profiler

        profiler = Profiler(run_dir=sys.argv[1], role="learner", sample_interval_s=0.05)
        with profiler.phase("train"):
            child = mp.get_context("spawn").Process(target=actor)
            child.start()
            child.join()
            assert child.exitcode == 0
            # Rows tick by tick: waited for, as a loaded machine runs the sampler's thread seldom.
            from lineprofiler.accounting.sampling import ResourceSampler

            (sampler,) = [a for a in profiler._attachments if isinstance(a, ResourceSampler)]
            deadline = time.monotonic() + 60
            while sampler.stats()["ticks"] < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
        profiler.close()
    """
)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    env.update(extra)
    return env


def _report(run_dir, *args):
    return subprocess.run([sys.executable, "-m", "lineprofiler", "report", str(run_dir), *args],
                          capture_output=True, text=True, env=_env(), timeout=120)


def test_nvml_columns_from_the_sampler_reach_the_report(tmp_path, nvml_build):
    run_dir = tmp_path / "run"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = _env(LINEPROFILER_NVML_LIBRARY=str(nvml_build / "libnvml_stub.so"))
    made = subprocess.run([sys.executable, str(script), str(run_dir)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=240)
    assert made.returncode == 0, made.stderr

    documents = {}
    for path in workerfile.find_worker_files(run_dir):
        document = workerfile.read_worker_file(path)
        documents[document["identity"]["role"]] = (path, document)
    assert set(documents) == {"learner", "actor"}
    path, learner = documents["learner"]
    assert learner["gpu"]["nvml"] == {
        "available": True, "unavailable_reason": None, "driver": None,
        "devices": [{"index": 0, "name": "Stub GPU 0"}, {"index": 1, "name": "Stub GPU 1"}],
    }
    gpu = learner["samples"]["gpu"]
    assert (gpu["devices"], gpu["unavailable_reason"]) == (2, None)
    # What the sampler wrote, tick by tick, in the learner's sample file. A row taken within half
    # an interval of the last NVML read (a snapshot's) says "not measured": -1 busy, -2 this pid.
    table = samplefile.read_samples(path.parent / learner["samples"]["file"])
    assert table.columns[-4:] == ("gpu0_busy", "gpu0_mine", "gpu1_busy", "gpu1_mine")
    assert gpu["reads"] >= 5 and gpu["reads"] + gpu["reads_skipped"] == table.rows
    read = [k for k, busy in enumerate(table.column("gpu0_busy")) if busy != -1]
    assert len(read) == gpu["reads"]
    for name, value in (("gpu0_busy", 92), ("gpu0_mine", 64), ("gpu1_busy", 8), ("gpu1_mine", -1)):  # 1: none
        column = table.column(name)
        assert {column[k] for k in read} == {value}, name
        assert {column[k] for k in range(table.rows) if k not in read} <= {-1 if name.endswith("busy") else -2}
    _, actor = documents["actor"]
    assert actor["gpu"]["nvml"]["unavailable_reason"] == "NVML sees no GPU"
    assert not any(c.startswith("gpu") for c in actor["samples"]["columns"])

    result = _report(run_dir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("GPU")
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    assert lines[start:end] == [
        "GPU",
        "\u2500" * 62,
        "                               busy   this run     idle",
        "GPU 0                         92.0%      64.0%     8.0%",
        "GPU 1                          8.0%        n/a    92.0%",
        "VRAM allocated (peak)               6.1 GB   largest of 2 processes; 10.1 GB summed",
        "VRAM reserved (peak)                8.4 GB   largest of 2 processes; 13.4 GB summed",
        "n/a: NVML attributed no sample to this run's pids on that device.",
        "NVML unavailable in 1 of 2 processes: NVML sees no GPU.",
    ]
    quick = _report(run_dir, "--no-samples")
    assert quick.returncode == 0 and "GPU" not in quick.stdout.splitlines()
