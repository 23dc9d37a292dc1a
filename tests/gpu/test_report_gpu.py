"""The GPU block: numbers from NVML sample columns and VRAM peaks, n/a versus 0.0%.

Every run here is written by the real writers (worker file and sample file) and read back with
``load_run``, as ``lineprofiler report`` reads it; the column values are chosen per test, to
reach each rule of the arithmetic. test_gpu_end_to_end.py has the sampler itself write them from
NVML (the test stub) in a real run.
"""

from __future__ import annotations

import pytest
from lp_report_builders import SimWorker, gpu_document

from lineprofiler.report.compute.blocks import RenderOptions, gpu, sample_infos
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import text_blocks

S = 1_000_000_000
T0 = 1_800_000_000 * S  # a whole second, so buckets start at T0


def worker(run_dir, pid, columns=None, *, host="node07", nvml=True, reason=None, vram=None, ticks=None, devices=()):
    """One actor's worker file and, given ``columns`` (one value per tick), its sample file.

    ``vram``: the peaks (:func:`vram`) or ``{"unavailable_reason": ...}``; default: torch not
    imported, as in a process without it."""
    sim = SimWorker("actor", host=host, pid=pid, start_unix_ns=T0)
    # NVML lists the devices the columns mention (device 0 when there are none).
    indices = sorted({int(name[3:].split("_")[0]) for name in columns or {}} | set(devices)) or [0]
    unavailable = (vram or {}).get("unavailable_reason")
    document = gpu_document(
        devices=indices,
        nvml_reason=None if nvml else reason,
        vram=None if vram is None or unavailable else vram,
        **({"vram_reason": unavailable} if unavailable else {}),
    )
    samples = None
    if columns is not None:
        n = len(next(iter(columns.values())))
        times = ticks if ticks is not None else [T0 + k * S for k in range(n)]
        samples = sim.write_samples(run_dir, {"t_ns": [t - T0 for t in times], **columns})
    sim.write(run_dir, gpu=document, samples=samples)


def summary(run_dir, interval_s=None):
    run = load_run(run_dir)
    found = [gpu.gpu_samples(info) for info in sample_infos(run, RenderOptions())]
    return gpu.summarise(run.workers, [f for f in found if f is not None], interval_s)


def render(run_dir, **options):
    return text_blocks.render_gpu(load_run(run_dir), RenderOptions(**options))


def vram(allocated, reserved):
    return {"available": True, "allocated_peak": allocated, "reserved_peak": reserved, "samples": 3}


def rows(lines):
    return {line[:29].strip(): line[29:].split() for line in lines if line.startswith(("GPU ", "node"))}


def test_two_workers_on_one_device_add_up_per_bucket(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [90, 90, 90, 90], "gpu0_mine": [40, 40, -1, 40],
                          "gpu1_busy": [8, 8, 8, 8], "gpu1_mine": [-1, -1, -1, -1]})
    # The second worker ticks half a second later, into the same buckets.
    worker(tmp_path, 11, {"gpu0_busy": [94, 94, 94, 94], "gpu0_mine": [20, 20, 20, 20],
                          "gpu1_busy": [8, 8, 8, 8], "gpu1_mine": [-1, -1, -1, -1]},
           ticks=[T0 + S // 2 + k * S for k in range(4)])
    d0, d1 = summary(tmp_path).devices
    assert d0.busy == pytest.approx(92.0)
    # Buckets: 40+20, 40+20, 0+20, 40+20 -> mean 50
    assert d0.this_run == pytest.approx(50.0)
    assert d0.idle == pytest.approx(8.0)
    assert d0.pids_attributed == 2
    assert d1.busy == pytest.approx(8.0)
    assert d1.this_run is None  # never attributed: n/a, not 0
    lines = render(tmp_path)
    assert lines[0] == "GPU"
    assert rows(lines) == {"GPU 0": ["92.0%", "50.0%", "8.0%"], "GPU 1": ["8.0%", "n/a", "92.0%"]}
    assert "n/a: NVML attributed no sample to this run's pids on that device." in lines


def test_measured_idleness_is_zero_not_na(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [0, 0, 0], "gpu0_mine": [0, -1, -1]})
    assert rows(render(tmp_path))["GPU 0"] == ["0.0%", "0.0%", "100.0%"]


def test_a_worker_busy_one_tick_in_ten_reads_ten_percent(tmp_path):
    mine = [-1] * 10
    mine[3] = 100
    worker(tmp_path, 10, {"gpu0_busy": [100 if m == 100 else 0 for m in mine], "gpu0_mine": mine})
    (d0,) = summary(tmp_path).devices
    assert d0.this_run == pytest.approx(10.0)
    assert d0.busy == pytest.approx(10.0)


def test_unmeasured_ticks_are_left_out_not_counted_as_zero(tmp_path):
    # -2: the query failed; those ticks neither add nor dilute.
    worker(tmp_path, 10, {"gpu0_busy": [-1, 50, -1, 50], "gpu0_mine": [-2, 50, -2, 50]})
    (d0,) = summary(tmp_path).devices
    assert d0.busy == pytest.approx(50.0)
    assert d0.this_run == pytest.approx(50.0)
    assert d0.buckets == 2


def test_this_run_is_capped_at_100_per_bucket(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [100], "gpu0_mine": [80]})
    worker(tmp_path, 11, {"gpu0_busy": [100], "gpu0_mine": [70]})
    (d0,) = summary(tmp_path).devices
    assert d0.this_run == 100.0


def test_devices_are_per_host(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [80], "gpu0_mine": [80]}, host="node07")
    worker(tmp_path, 10, {"gpu0_busy": [20], "gpu0_mine": [-1]}, host="node08")
    assert rows(render(tmp_path)) == {
        "node07 GPU 0": ["80.0%", "80.0%", "20.0%"],
        "node08 GPU 0": ["20.0%", "n/a", "80.0%"],
    }


def test_vram_peaks_largest_process_and_sum(tmp_path):
    worker(tmp_path / "a", 10, {"gpu0_busy": [50], "gpu0_mine": [50]}, vram=vram(6_100_000_000, 8_400_000_000))
    lines = render(tmp_path / "a")
    assert "VRAM allocated (peak)               6.1 GB" in lines
    assert "VRAM reserved (peak)                8.4 GB" in lines
    worker(tmp_path / "b", 10, {"gpu0_busy": [50], "gpu0_mine": [50]}, vram=vram(6_100_000_000, 8_400_000_000))
    worker(tmp_path / "b", 11, {"gpu0_busy": [50], "gpu0_mine": [10]}, vram=vram(4_000_000_000, 5_000_000_000))
    lines = render(tmp_path / "b")
    assert "VRAM allocated (peak)               6.1 GB   largest of 2 processes; 10.1 GB summed" in lines


def test_the_spec_layout(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [92], "gpu0_mine": [64], "gpu1_busy": [8], "gpu1_mine": [-1]},
           vram=vram(6_100_000_000, 8_400_000_000))
    assert render(tmp_path)[:7] == [
        "GPU",
        "\u2500" * 62,
        "                               busy   this run     idle",
        "GPU 0                         92.0%      64.0%     8.0%",
        "GPU 1                          8.0%        n/a    92.0%",
        "VRAM allocated (peak)               6.1 GB",
        "VRAM reserved (peak)                8.4 GB",
    ]


def test_nvml_unavailable_everywhere_gives_the_reason_only(tmp_path):
    reason = "cannot load NVML (no NVIDIA driver?): libnvidia-ml.so.1: cannot open shared object file"
    worker(tmp_path, 10, nvml=False, reason=reason)  # and VRAM unavailable: torch is not imported
    assert render(tmp_path) == ["GPU", "\u2500" * 62, f"absent: {reason}"]


def test_nvml_unavailable_but_vram_measured(tmp_path):
    worker(tmp_path, 10, nvml=False, reason="nvmlInit failed: Driver Not Loaded", vram=vram(1_000_000, 2_000_000))
    lines = render(tmp_path)
    assert "utilisation not measured: nvmlInit failed: Driver Not Loaded" in lines
    assert "VRAM allocated (peak)               1.0 MB" in lines


def test_some_workers_without_nvml_are_named(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [50], "gpu0_mine": [50]})
    worker(tmp_path, 11, nvml=False, reason="nvmlInit failed: Insufficient Permissions")
    lines = render(tmp_path)
    assert rows(lines)["GPU 0"] == ["50.0%", "50.0%", "50.0%"]
    assert "NVML unavailable in 1 of 2 processes: nvmlInit failed: Insufficient Permissions." in lines


def test_container_hint_when_vram_but_no_pid_ever_attributed(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [70, 70], "gpu0_mine": [-1, -1]}, vram=vram(10**9, 2 * 10**9))
    assert any("NVML may report host pids" in line for line in render(tmp_path))


def test_a_device_nvml_sees_without_samples_is_listed(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [40], "gpu0_mine": [40]}, devices=[1])
    assert rows(render(tmp_path))["GPU 1"] == ["n/a", "n/a", "n/a"]


def test_no_samples_option_and_runs_without_gpu_information(tmp_path):
    worker(tmp_path / "a", 10, {"gpu0_busy": [50], "gpu0_mine": [50]})
    assert render(tmp_path / "a", no_samples=True) == []
    SimWorker("actor").write(tmp_path / "b")
    assert render(tmp_path / "b") == []  # no GPU information at all: no block


def test_an_unreadable_sample_file_costs_that_worker_only(tmp_path):
    worker(tmp_path, 10, {"gpu0_busy": [50], "gpu0_mine": [50]})
    worker(tmp_path, 11, {"gpu0_busy": [90], "gpu0_mine": [30]})
    run = load_run(tmp_path)
    broken = next(w for w in run.workers if w.pid == 11)
    broken.path.with_suffix(".samples").write_bytes(b"not a sample file")
    assert rows(text_blocks.render_gpu(run, RenderOptions()))["GPU 0"] == ["50.0%", "50.0%", "50.0%"]


def test_interval_option_sets_the_bucket_width(tmp_path):
    # Two ticks 0.4 s apart fall into one 1 s bucket, so two workers' shares add there.
    worker(tmp_path, 10, {"gpu0_busy": [50, 50], "gpu0_mine": [30, 30]}, ticks=[T0, T0 + 2 * S])
    worker(tmp_path, 11, {"gpu0_busy": [50, 50], "gpu0_mine": [20, 20]}, ticks=[T0 + S // 3, T0 + 2 * S + S // 3])
    assert summary(tmp_path, interval_s=1).devices[0].this_run == pytest.approx(50.0)
    # With 0.1 s buckets they no longer meet: each bucket holds one worker's share.
    assert summary(tmp_path, interval_s=0.1).devices[0].this_run == pytest.approx(25.0)
