"""The GPU block: numbers from NVML sample columns and VRAM peaks, n/a versus 0.0%."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lineprofiler.report.blocks import gpu

S = 1_000_000_000
T0 = 1_800_000_000 * S  # a whole second, so buckets start at T0


def worker(pid, columns=None, *, host="node07", nvml=True, reason=None, vram=None, ticks=None):
    # NVML lists the devices the columns mention (device 0 when there are none).
    indices = sorted({int(name[3:].split("_")[0]) for name in columns or {}}) or [0]
    doc = {
        "identity": {"host": host, "pid": pid, "role": "actor", "run_id": "r", "uuid": "0" * 8},
        "gpu": {
            "nvml": {
                "available": nvml,
                "unavailable_reason": reason,
                "devices": [{"index": i, "name": f"Stub GPU {i}"} for i in indices] if nvml else [],
            }
        },
    }
    if vram is not None:
        doc["gpu"]["vram"] = vram
    if columns is not None:
        n = len(next(iter(columns.values())))
        times = ticks if ticks is not None else [T0 + k * S for k in range(n)]
        doc["samples"] = {"columns": {"t_unix_ns": times, **columns}}
    return doc


def vram(allocated, reserved):
    return {"available": True, "allocated_peak": allocated, "reserved_peak": reserved, "samples": 3}


def rows(lines):
    return {line[:29].strip(): line[29:].split() for line in lines if line.startswith(("GPU ", "node"))}


def test_two_workers_on_one_device_add_up_per_bucket():
    a = worker(10, {"gpu0_busy": [90, 90, 90, 90], "gpu0_mine": [40, 40, -1, 40], "gpu1_busy": [8, 8, 8, 8], "gpu1_mine": [-1, -1, -1, -1]})
    # The second worker ticks half a second later, into the same buckets.
    b = worker(11, {"gpu0_busy": [94, 94, 94, 94], "gpu0_mine": [20, 20, 20, 20], "gpu1_busy": [8, 8, 8, 8], "gpu1_mine": [-1, -1, -1, -1]},
               ticks=[T0 + S // 2 + k * S for k in range(4)])
    summary = gpu.summarise([a, b], [gpu.samples_from_document(a), gpu.samples_from_document(b)])
    d0, d1 = summary.devices
    assert d0.busy == pytest.approx(92.0)
    # Buckets: 40+20, 40+20, 0+20, 40+20 -> mean 50
    assert d0.this_run == pytest.approx(50.0)
    assert d0.idle == pytest.approx(8.0)
    assert d0.pids_attributed == 2
    assert d1.busy == pytest.approx(8.0)
    assert d1.this_run is None  # never attributed: n/a, not 0
    lines = gpu.render([a, b])
    assert lines[0] == "GPU"
    assert rows(lines) == {"GPU 0": ["92.0%", "50.0%", "8.0%"], "GPU 1": ["8.0%", "n/a", "92.0%"]}
    assert "n/a: NVML attributed no sample to this run's pids on that device." in lines


def test_measured_idleness_is_zero_not_na():
    a = worker(10, {"gpu0_busy": [0, 0, 0], "gpu0_mine": [0, -1, -1]})
    lines = gpu.render([a])
    assert rows(lines)["GPU 0"] == ["0.0%", "0.0%", "100.0%"]


def test_a_worker_busy_one_tick_in_ten_reads_ten_percent():
    mine = [-1] * 10
    mine[3] = 100
    a = worker(10, {"gpu0_busy": [100 if m == 100 else 0 for m in mine], "gpu0_mine": mine})
    (d0,) = gpu.summarise([a], [gpu.samples_from_document(a)]).devices
    assert d0.this_run == pytest.approx(10.0)
    assert d0.busy == pytest.approx(10.0)


def test_unmeasured_ticks_are_left_out_not_counted_as_zero():
    # -2: the query failed; those ticks neither add nor dilute.
    a = worker(10, {"gpu0_busy": [-1, 50, -1, 50], "gpu0_mine": [-2, 50, -2, 50]})
    (d0,) = gpu.summarise([a], [gpu.samples_from_document(a)]).devices
    assert d0.busy == pytest.approx(50.0)
    assert d0.this_run == pytest.approx(50.0)
    assert d0.buckets == 2


def test_this_run_is_capped_at_100_per_bucket():
    a = worker(10, {"gpu0_busy": [100], "gpu0_mine": [80]})
    b = worker(11, {"gpu0_busy": [100], "gpu0_mine": [70]})
    (d0,) = gpu.summarise([a, b], [gpu.samples_from_document(a), gpu.samples_from_document(b)]).devices
    assert d0.this_run == 100.0


def test_devices_are_per_host():
    a = worker(10, {"gpu0_busy": [80], "gpu0_mine": [80]}, host="node07")
    b = worker(10, {"gpu0_busy": [20], "gpu0_mine": [-1]}, host="node08")
    lines = gpu.render(SimpleNamespace(workers=[a, b]))
    assert rows(lines) == {"node07 GPU 0": ["80.0%", "80.0%", "20.0%"], "node08 GPU 0": ["20.0%", "n/a", "80.0%"]}


def test_vram_peaks_largest_process_and_sum():
    a = worker(10, {"gpu0_busy": [50], "gpu0_mine": [50]}, vram=vram(6_100_000_000, 8_400_000_000))
    lines = gpu.render([a])
    assert "VRAM allocated (peak)               6.1 GB" in lines
    assert "VRAM reserved (peak)                8.4 GB" in lines
    b = worker(11, {"gpu0_busy": [50], "gpu0_mine": [10]}, vram=vram(4_000_000_000, 5_000_000_000))
    lines = gpu.render([a, b])
    assert "VRAM allocated (peak)               6.1 GB   largest of 2 processes; 10.1 GB summed" in lines


def test_the_spec_layout():
    a = worker(10, {"gpu0_busy": [92.4], "gpu0_mine": [64.1], "gpu1_busy": [8.0], "gpu1_mine": [-1]},
               vram=vram(6_100_000_000, 8_400_000_000))
    lines = gpu.render([a])
    assert lines[:7] == [
        "GPU",
        "\u2500" * 62,
        "                               busy   this run     idle",
        "GPU 0                         92.4%      64.1%     7.6%",
        "GPU 1                          8.0%        n/a    92.0%",
        "VRAM allocated (peak)               6.1 GB",
        "VRAM reserved (peak)                8.4 GB",
    ]


def test_nvml_unavailable_everywhere_gives_the_reason_only():
    a = worker(10, nvml=False, reason="cannot load NVML (no NVIDIA driver?): libnvidia-ml.so.1: cannot open shared object file")
    a["gpu"]["vram"] = {"available": False, "unavailable_reason": "torch is not imported by this process"}
    assert gpu.render([a]) == [
        "GPU",
        "\u2500" * 62,
        "absent: cannot load NVML (no NVIDIA driver?): libnvidia-ml.so.1: cannot open shared object file",
    ]


def test_nvml_unavailable_but_vram_measured():
    a = worker(10, nvml=False, reason="nvmlInit failed: Driver Not Loaded", vram=vram(1_000_000, 2_000_000))
    lines = gpu.render([a])
    assert "utilisation not measured: nvmlInit failed: Driver Not Loaded" in lines
    assert "VRAM allocated (peak)               1.0 MB" in lines


def test_some_workers_without_nvml_are_named():
    a = worker(10, {"gpu0_busy": [50], "gpu0_mine": [50]})
    b = worker(11, nvml=False, reason="nvmlInit failed: Insufficient Permissions")
    lines = gpu.render([a, b])
    assert rows(lines)["GPU 0"] == ["50.0%", "50.0%", "50.0%"]
    assert "NVML unavailable in 1 of 2 processes: nvmlInit failed: Insufficient Permissions." in lines


def test_container_hint_when_vram_but_no_pid_ever_attributed():
    a = worker(10, {"gpu0_busy": [70, 70], "gpu0_mine": [-1, -1]}, vram=vram(10**9, 2 * 10**9))
    lines = gpu.render([a])
    assert any("NVML may report host pids" in line for line in lines)


def test_a_device_nvml_sees_without_samples_is_listed():
    a = worker(10, {"gpu0_busy": [40], "gpu0_mine": [40]})
    a["gpu"]["nvml"]["devices"].append({"index": 1, "name": "Stub GPU 1"})
    assert rows(gpu.render([a]))["GPU 1"] == ["n/a", "n/a", "n/a"]


def test_no_samples_option_and_empty_runs():
    a = worker(10, {"gpu0_busy": [50], "gpu0_mine": [50]})
    assert gpu.render([a], {"no_samples": True}) == []
    assert gpu.render([a], SimpleNamespace(no_samples=True)) == []
    assert gpu.render([]) == []
    plain = {"identity": {"host": "h", "pid": 1}}
    assert gpu.render([plain]) == []  # no GPU information at all: no block


def test_an_injected_sample_loader_is_used():
    a = worker(10)
    run = SimpleNamespace(
        workers=[a],
        gpu_samples=lambda doc: gpu.WorkerGpuSamples("node07", 10, [T0, T0 + S], {0: [30, 30]}, {0: [30, -1]}),
    )
    assert rows(gpu.render(run))["GPU 0"] == ["30.0%", "15.0%", "70.0%"]


def test_interval_option_sets_the_bucket_width():
    # Two ticks 0.4 s apart fall into one 1 s bucket, so two workers' shares add there.
    a = worker(10, {"gpu0_busy": [50, 50], "gpu0_mine": [30, 30]}, ticks=[T0, T0 + 2 * S])
    b = worker(11, {"gpu0_busy": [50, 50], "gpu0_mine": [20, 20]}, ticks=[T0 + S // 3, T0 + 2 * S + S // 3])
    samples = [gpu.samples_from_document(a), gpu.samples_from_document(b)]
    assert gpu.summarise([a, b], samples, interval_s=1).devices[0].this_run == pytest.approx(50.0)
    # With 0.1 s buckets they no longer meet: each bucket holds one worker's share.
    assert gpu.summarise([a, b], samples, interval_s=0.1).devices[0].this_run == pytest.approx(25.0)
