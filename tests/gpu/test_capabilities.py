"""capabilities.py: what is available, why not, never importing the heavy packages to find out."""

from __future__ import annotations

import json
import os

import pytest
from lp_installed import (
    HAS_TORCH,
    HAS_VIZTRACER,
    NO_TORCH,
    NVIDIA_DRIVER,
    ON_A_GPU_HOST,
    TORCH_HAS_CUDA,
)

from lineprofiler.accounting import capabilities, metadata


def test_probing_imports_none_of_the_heavy_packages(run_python):
    out = run_python(
        "import json, sys\n"
        "from lineprofiler.accounting import capabilities, metadata\n"
        "doc = metadata.metadata()\n"
        "print(json.dumps({'doc': doc, 'imported': [m for m in ('torch', 'viztracer', 'psutil', 'nvtx', 'pynvml')"
        " if m in sys.modules]}))\n"
    )
    result = json.loads(out)
    assert result["imported"] == []
    caps = result["doc"]["capabilities"]
    assert set(caps) == set(capabilities.NAMES)
    for name, cap in caps.items():
        assert isinstance(cap["available"], bool), name
        if not cap["available"]:
            assert cap["unavailable_reason"], name
    assert caps["viztracer"]["available"] is HAS_VIZTRACER
    assert caps["torch"]["available"] is HAS_TORCH
    if HAS_TORCH:
        assert caps["torch"]["imported"] is False


def test_blocked_packages_give_their_reasons(run_python):
    out = run_python(
        "import json, sys\n"
        "for name in ('torch', 'viztracer', 'psutil', 'nvtx', 'pynvml'):\n"
        "    sys.modules[name] = None\n"
        "from lineprofiler.accounting import metadata\n"
        "print(json.dumps(metadata.metadata()['capabilities']))\n"
    )
    caps = json.loads(out)
    for name in ("torch", "viztracer", "psutil"):
        assert caps[name] == {
            "available": False,
            "unavailable_reason": f"import of {name} is blocked in this process (sys.modules[{name!r}] is None)",
        }
    assert caps["torch_cuda"]["available"] is False
    assert "import of torch is blocked" in caps["torch_cuda"]["unavailable_reason"]
    assert caps["nvtx"]["available"] is False
    assert caps["nvtx"]["unavailable_reason"] == (
        "torch is not imported, and import of nvtx is blocked in this process (sys.modules['nvtx'] is None)"
    )


def test_nvml_library_missing(monkeypatch, tmp_path):
    missing = tmp_path / "libnvidia-ml.so.1"
    monkeypatch.setenv("LINEPROFILER_NVML_LIBRARY", str(missing))
    cap = capabilities.nvml()
    assert not cap
    assert cap.unavailable_reason.startswith("cannot load NVML (no NVIDIA driver?): ")
    assert str(missing) in cap.unavailable_reason


@pytest.mark.skipif(NVIDIA_DRIVER, reason=ON_A_GPU_HOST)
def test_nvml_on_a_machine_without_a_driver():
    cap = capabilities.nvml()
    assert not cap
    assert "libnvidia-ml.so.1" in cap.unavailable_reason


def test_nvml_through_the_stub_is_probed_once(make_shim):
    shim = make_shim()  # sets LINEPROFILER_NVML_LIBRARY to the stub
    shim.stub.lpstub_set_device_count(2)
    first = capabilities.nvml()
    second = capabilities.get("nvml")
    assert first is second
    assert first.available
    assert first.details["devices"] == [{"index": 0, "name": "Stub GPU 0"}, {"index": 1, "name": "Stub GPU 1"}]
    assert first.details["library"].endswith("libnvml_stub.so")
    assert shim.stub.lpstub_init_calls() == 1
    assert shim.stub.lpstub_shutdown_calls() == 1  # balanced: the sampler's own init is unaffected


def test_nvml_init_failure_is_the_reason(make_shim):
    shim = make_shim()
    shim.stub.lpstub_set_init_rc(9)
    cap = capabilities.nvml()
    assert not cap
    assert cap.unavailable_reason == "nvmlInit failed: Driver Not Loaded"


def test_nvml_without_devices(make_shim):
    make_shim()
    cap = capabilities.nvml()
    assert (cap.available, cap.unavailable_reason) == (False, "NVML sees no GPU")


def test_a_probe_that_raises_becomes_a_reason(monkeypatch):
    def broken():
        raise RuntimeError("boom")

    monkeypatch.setattr(capabilities, "_probe_nvml", broken)
    cap = capabilities.nvml()
    assert not cap
    assert cap.unavailable_reason == "probe failed: RuntimeError: boom"
    assert capabilities.get("no-such-thing").unavailable_reason == "unknown capability 'no-such-thing'"


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_torch_cuda_is_decided_once_torch_is_imported(run_python):
    out = run_python(
        "import json\n"
        "from lineprofiler.accounting import capabilities\n"
        "before = capabilities.torch_cuda().as_dict()\n"
        "import torch\n"
        "after = capabilities.torch_cuda().as_dict()\n"
        "print(json.dumps([before, after, capabilities.torch().as_dict()]))\n"
    )
    before, after, torch_cap = json.loads(out)
    assert before["unavailable_reason"] == "torch is not imported by this process (lineprofiler never imports it)"
    assert torch_cap["imported"] is True
    if TORCH_HAS_CUDA:  # the GPU machine
        assert after["available"] is True, after
        assert after["initialized"] is False  # deciding it created no CUDA context
    else:
        assert after["available"] is False
        assert after["unavailable_reason"].endswith("is built without CUDA")


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here")
def test_torch_not_installed():
    assert capabilities.torch().unavailable_reason == "torch is not installed"
    assert capabilities.torch_cuda().unavailable_reason == "torch is not installed"


def test_write_metadata(tmp_path, make_shim):
    make_shim().stub.lpstub_set_device_count(1)
    run_dir = tmp_path / "profile"
    path = metadata.write_metadata(run_dir, {"backend": {"backend": "torch", "state": "waiting"}, "kind": "nope"})
    assert path == run_dir / "metadata.json"
    doc = json.loads(path.read_text())
    assert doc["kind"] == "lineprofiler-metadata"  # extra cannot replace it
    assert doc["schema_version"] == 1
    assert doc["pid"] == os.getpid()
    assert doc["backend"] == {"backend": "torch", "state": "waiting"}
    assert doc["capabilities"]["nvml"]["available"] is True
    assert doc["capabilities"]["nvml"]["devices"] == [{"index": 0, "name": "Stub GPU 0"}]
    assert sorted(p.name for p in run_dir.iterdir()) == ["metadata.json"]  # no temp file left


def test_write_metadata_failure_raises_oserror_for_the_caller(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(OSError):
        metadata.write_metadata(blocker)
    with pytest.raises(TypeError):
        metadata.write_metadata(tmp_path / "run", {"bad": object()})
    assert not (tmp_path / "run").exists()  # refused before anything was made
