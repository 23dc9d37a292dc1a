"""What the machine running the tests has installed (loaded by tests/conftest.py as ``lp_installed``).

CI installs the CPU build of torch (Python 3.11 only), viztracer and nvtx (both to 3.14: neither
publishes a 3.15 wheel), and has no GPU. The GPU machine has a CUDA build of torch and a device,
and may lack the others. Each test that depends on one of these says so with the reasons below,
so the suite runs on either machine and the tests of a CUDA build run where one exists.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path

import pytest


def _loads(library: str) -> bool:
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def _torch_built_with_cuda() -> bool:
    """Without importing torch (seconds): a CUDA build ships libtorch_cuda, the CPU build does not."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return False
    return any((Path(spec.origin).parent / "lib").glob("libtorch_cuda*.so*"))


HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_VIZTRACER = importlib.util.find_spec("viztracer") is not None
HAS_NVTX = importlib.util.find_spec("nvtx") is not None
#: torch is the CUDA build (it may still see no device: see CUDA_DEVICE).
TORCH_HAS_CUDA = _torch_built_with_cuda()
#: Whether this machine has an NVIDIA driver: NVML's library loads, as the sampler loads it.
NVIDIA_DRIVER = _loads("libnvidia-ml.so.1")
#: A CUDA build of torch on a machine whose driver loads: the real CUDA paths can run.
CUDA_DEVICE = TORCH_HAS_CUDA and _loads("libcuda.so.1")

NO_TORCH = "torch is not installed here (CI installs its CPU wheel, for Python 3.11 only)"
NO_VIZTRACER = f"viztracer is not installed here (Python {sys.version_info[0]}.{sys.version_info[1]})"
NO_NVTX = (
    "the nvtx package (test extra) is not installed here"
    + (" (it publishes no wheel for Python 3.15)" if sys.version_info >= (3, 15) else "")
)
NEEDS_CPU_TORCH = "needs the CPU build of torch: this torch is built with CUDA"
NEEDS_CUDA = "needs a CUDA build of torch and an NVIDIA driver (the GPU machine)"
ON_A_GPU_HOST = "this machine has an NVIDIA driver (libnvidia-ml.so.1 loads): NVML is not absent here"

#: The start methods a multiprocessing test runs under: each fixed one, and the default context,
#: which is forkserver on Linux from 3.14 on (before, it is fork: the fork case covers it).
START_METHODS = [
    "spawn",
    "fork",
    "forkserver",
    pytest.param(
        "default",
        marks=pytest.mark.skipif(sys.version_info < (3, 14), reason="the default is fork before 3.14: covered"),
    ),
]


def start_method(method: str) -> str | None:
    """``multiprocessing.get_context``'s argument for a START_METHODS value (None: the default)."""
    return None if method == "default" else method
