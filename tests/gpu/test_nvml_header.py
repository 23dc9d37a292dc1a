"""accounting/_nvml.h against the NVML stub: what the sampler will read once per tick."""

from __future__ import annotations

import os

import pytest

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9
ME = 4242
OTHER = 777


def test_open_counts_devices_and_names_them(nvml):
    nvml.stub.lpstub_set_device_count(2)
    rc, why = nvml.open()
    assert (rc, why) == (0, "")
    assert nvml.count() == 2
    assert nvml.name(0) == "Stub GPU 0"
    assert nvml.name(1) == "Stub GPU 1"
    assert nvml.name(2) is None
    assert nvml.stub.lpstub_init_calls() == 1


def test_busy_and_this_pid_share(nvml):
    nvml.stub.lpstub_set_device_count(2)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_set_busy(0, 92, 0)
    nvml.stub.lpstub_set_busy(1, 8, 0)
    # Device 0: two samples of ours (60 and 70) and one of another tenant's; device 1: only theirs.
    nvml.stub.lpstub_add_sample(0, ME, 1_000, 60)
    nvml.stub.lpstub_add_sample(0, OTHER, 1_500, 30)
    nvml.stub.lpstub_add_sample(0, ME, 2_000, 70)
    nvml.stub.lpstub_add_sample(1, OTHER, 1_800, 8)
    busy, mine = nvml.sample(ME)
    assert busy == [92, 8]
    assert mine == [65, -1]  # mean of ours on device 0; none attributed to us on device 1


def test_passes_the_newest_timestamp_back_and_not_found_is_no_sample(nvml):
    nvml.stub.lpstub_set_device_count(1)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_add_sample(0, ME, 1_000, 40)
    nvml.stub.lpstub_add_sample(0, OTHER, 3_000, 10)
    assert nvml.sample(ME)[1] == [40]
    assert nvml.stub.lpstub_last_seen_arg(0) == 0  # first call: the driver picks the window
    # Nothing new: the stub answers NVML_ERROR_NOT_FOUND, which is "no sample", not a failure.
    assert nvml.sample(ME)[1] == [-1]
    assert nvml.stub.lpstub_last_seen_arg(0) == 3_000  # the newest of any pid, not only ours
    nvml.stub.lpstub_add_sample(0, ME, 4_000, 90)
    assert nvml.sample(ME)[1] == [90]
    assert nvml.stub.lpstub_last_seen_arg(0) == 3_000
    assert nvml.sample(ME)[1] == [-1]
    assert nvml.stub.lpstub_last_seen_arg(0) == 4_000


def test_old_samples_a_driver_returns_again_are_not_counted_twice(nvml):
    nvml.stub.lpstub_set_device_count(1)
    nvml.stub.lpstub_set_ignore_last_seen(1)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_add_sample(0, ME, 1_000, 50)
    assert nvml.sample(ME)[1] == [50]
    assert nvml.sample(ME)[1] == [-1]


def test_a_buffer_too_small_grows_once(nvml):
    nvml.stub.lpstub_set_device_count(1)
    assert nvml.open()[0] == 0
    for k in range(200):  # more processes than the first buffer holds
        nvml.stub.lpstub_add_sample(0, 10_000 + k, 1_000 + k, 5)
    nvml.stub.lpstub_add_sample(0, ME, 5_000, 33)
    assert nvml.sample(ME)[1] == [33]
    assert nvml.lib.shim_buffer_len() >= 201


def test_failures_are_unreadable_not_zero(nvml):
    nvml.stub.lpstub_set_device_count(2)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_set_busy(0, 0, NVML_ERROR_NOT_SUPPORTED)
    nvml.stub.lpstub_set_proc_rc(0, NVML_ERROR_NOT_SUPPORTED)
    nvml.stub.lpstub_add_sample(0, ME, 1, 50)  # this pid has a context on device 0: it is asked
    nvml.stub.lpstub_set_busy(1, 0, 0)  # measured idleness
    busy, mine = nvml.sample(ME)
    assert busy == [-1, 0]
    assert mine == [-2, -1]  # device 1: no context there, so nothing to attribute (measured)


def test_asking_for_more_devices_than_exist(nvml):
    nvml.stub.lpstub_set_device_count(1)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_set_busy(0, 12, 0)
    busy, mine = nvml.sample(ME, n=3)
    assert busy == [12, -1, -1]
    assert mine == [-1, -2, -2]


def test_a_device_without_a_handle_keeps_its_index(nvml):
    nvml.stub.lpstub_set_device_count(2)
    nvml.stub.lpstub_set_handle_rc(0, NVML_ERROR_NOT_SUPPORTED)
    nvml.stub.lpstub_set_busy(1, 55, 0)
    assert nvml.open()[0] == 0
    assert nvml.count() == 2
    busy, mine = nvml.sample(ME)
    assert busy == [-1, 55]
    assert mine == [-2, -1]


def test_init_failure_gives_the_reason_and_shuts_nothing(nvml):
    nvml.stub.lpstub_set_init_rc(NVML_ERROR_DRIVER_NOT_LOADED)
    rc, why = nvml.open()
    assert rc == -1
    assert why == "nvmlInit failed: Driver Not Loaded"
    assert nvml.count() == 0
    assert nvml.sample(ME, n=1) == ([-1], [-2])
    assert nvml.stub.lpstub_shutdown_calls() == 0


def test_no_devices_is_a_reason(nvml):
    nvml.stub.lpstub_set_device_count(0)
    rc, why = nvml.open()
    assert (rc, why) == (-1, "NVML sees no GPU")
    assert nvml.stub.lpstub_shutdown_calls() == 1  # it was initialised, so it is shut down


def test_close_shuts_down_once_and_is_idempotent(nvml):
    nvml.stub.lpstub_set_device_count(1)
    assert nvml.open()[0] == 0
    nvml.close()
    nvml.close()
    assert nvml.stub.lpstub_shutdown_calls() == 1
    assert nvml.count() == 0


def test_missing_library_gives_the_reason(make_shim, tmp_path):
    missing = tmp_path / "libnvidia-ml-does-not-exist.so.1"
    shim = make_shim(library=missing)
    rc, why = shim.open()
    assert rc == -1
    assert why.startswith("cannot load NVML (no NVIDIA driver?): ")
    assert str(missing) in why


def test_library_without_utilization_is_refused(make_shim, nvml_build):
    shim = make_shim("libnvml_stub_noutil.so")
    shim.stub.lpstub_set_device_count(1)
    rc, why = shim.open()
    assert rc == -1
    assert "lacks" in why and str(nvml_build / "libnvml_stub_noutil.so") in why


def test_library_without_process_utilization_still_reads_busy(make_shim):
    shim = make_shim("libnvml_stub_noproc.so")
    shim.stub.lpstub_set_device_count(1)
    shim.stub.lpstub_set_busy(0, 41, 0)
    assert shim.open()[0] == 0
    assert shim.sample(os.getpid()) == ([41], [-2])


# ---- the per-process query, only where the pid has a context ----
# nvmlDeviceGetProcessUtilization took 1.8-2.5 ms per call on an H200 (driver 580); the
# running-process lists 2-60 us. A pid in neither list has nothing to attribute on that device.


def test_a_pid_without_a_context_is_a_measured_zero_without_the_costly_query(nvml):
    nvml.stub.lpstub_set_device_count(2)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_add_sample(0, OTHER, 1_000, 80)
    nvml.stub.lpstub_add_sample(1, ME, 1_000, 30)
    assert nvml.sample(ME)[1] == [-1, 30]
    assert [nvml.stub.lpstub_proc_calls(d) for d in (0, 1)] == [0, 1]
    assert nvml.stub.lpstub_running_calls(0) == 2  # the compute list, then the graphics list
    # The pid gains a context on device 0: the first query covers everything since the last one
    # (here none: the driver's own window), so nothing of it is lost.
    nvml.stub.lpstub_add_sample(0, ME, 2_000, 44)
    assert nvml.sample(ME)[1] == [44, -1]
    assert nvml.stub.lpstub_proc_calls(0) == 1 and nvml.stub.lpstub_last_seen_arg(0) == 0


def test_a_graphics_context_is_a_context(nvml):
    nvml.stub.lpstub_set_device_count(1)
    assert nvml.open()[0] == 0
    nvml.stub.lpstub_set_graphics(0, ME)  # rendering only (EGL), no compute context
    assert nvml.sample(ME)[1] == [-1]  # asked, and NVML had no sample for it
    assert nvml.stub.lpstub_proc_calls(0) == 1


@pytest.mark.parametrize("cannot_tell", ["list fails", "more processes than the list holds", "no list calls"])
def test_when_the_lists_cannot_tell_the_query_is_asked(make_shim, cannot_tell):
    shim = make_shim("libnvml_stub_norunning.so" if cannot_tell == "no list calls" else "libnvml_stub.so")
    shim.stub.lpstub_set_device_count(1)
    assert shim.open()[0] == 0
    if cannot_tell == "list fails":
        shim.stub.lpstub_set_running_rc(0, NVML_ERROR_NOT_SUPPORTED)
    elif cannot_tell == "more processes than the list holds":
        shim.stub.lpstub_set_extra_processes(0, 100)
    shim.stub.lpstub_add_sample(0, OTHER, 1_000, 80)
    assert shim.sample(ME)[1] == [-1]
    assert shim.stub.lpstub_proc_calls(0) == 1
