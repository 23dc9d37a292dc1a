"""Fixtures for the GPU work: the NVML stub library and a ctypes view of accounting/_nvml.h.

There is no NVIDIA GPU on the machines that run this suite, so NVML is the one thing faked:
``nvml_stub.c`` is built into a shared library that answers the NVML calls the header makes, and
``nvml_shim.c`` compiles the real header into a second library the test calls through ctypes.
The header finds the stub through ``LINEPROFILER_NVML_LIBRARY`` (a test-only override).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lineprofiler.accounting import _capabilities_testing

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src" / "lineprofiler"
NVML_H = SRC / "accounting" / "_nvml.h"

def _cflags() -> list[str]:
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fPIC", "-shared"]
    # Under `make test-asan` the sanitiser runtimes are preloaded: instrument these too.
    if os.environ.get("LP_ASAN"):
        flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    return flags


def _build(out: Path, sources: list[Path], extra: list[str] | None = None) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler on PATH: the NVML stub cannot be built")
    cmd = [cc, *_cflags(), *(extra or []), "-I", str(SRC), "-o", str(out), *map(str, sources), "-ldl"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"build failed: {' '.join(cmd)}\n{result.stderr}")
    return out


@pytest.fixture(scope="session")
def nvml_build(tmp_path_factory) -> Path:
    """Build the stub variants and the header shim once; returns their folder."""
    out = tmp_path_factory.mktemp("nvml")
    stub = HERE / "nvml_stub.c"
    _build(out / "libnvml_stub.so", [stub])
    _build(out / "libnvml_stub_noutil.so", [stub], ["-DLPSTUB_NO_UTIL"])
    _build(out / "libnvml_stub_noproc.so", [stub], ["-DLPSTUB_NO_PROC"])
    _build(out / "libnvml_stub_norunning.so", [stub], ["-DLPSTUB_NO_RUNNING"])
    _build(out / "libnvml_shim.so", [HERE / "nvml_shim.c"])
    return out


class Shim:
    """The header's functions, plus the stub's script, for one test."""

    def __init__(self, build: Path, stub_name: str) -> None:
        self.stub_path = build / stub_name
        self.stub = ctypes.CDLL(str(self.stub_path))
        self.lib = ctypes.CDLL(str(build / "libnvml_shim.so"))
        self.lib.shim_open.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.lib.shim_sample.argtypes = [
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_int32),
            ctypes.POINTER(ctypes.c_int32),
            ctypes.c_int,
        ]
        self.lib.shim_name.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.shim_buffer_len.restype = ctypes.c_uint
        self.stub.lpstub_add_sample.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_uint]
        self.stub.lpstub_last_seen_arg.restype = ctypes.c_ulonglong
        self.stub.lpstub_last_seen_arg.argtypes = [ctypes.c_int]
        self.stub.lpstub_set_busy.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_int]
        self.stub.lpstub_reset()

    def open(self) -> tuple[int, str]:
        why = ctypes.create_string_buffer(256)
        rc = self.lib.shim_open(why, len(why))
        return rc, why.value.decode()

    def count(self) -> int:
        return self.lib.shim_count()

    def sample(self, pid: int, n: int | None = None) -> tuple[list[int], list[int]]:
        n = self.count() if n is None else n
        busy = (ctypes.c_int32 * max(n, 1))()
        mine = (ctypes.c_int32 * max(n, 1))()
        self.lib.shim_sample(pid, busy, mine, n)
        return list(busy[:n]), list(mine[:n])

    def name(self, i: int) -> str | None:
        buf = ctypes.create_string_buffer(128)
        return buf.value.decode() if self.lib.shim_name(i, buf, len(buf)) == 0 else None

    def close(self) -> None:
        self.lib.shim_close()


@pytest.fixture
def make_shim(nvml_build, monkeypatch):
    """make_shim(stub_name, library=None): the header pointed at a stub (or at ``library``)."""
    made: list[Shim] = []

    def make(stub_name: str = "libnvml_stub.so", library: Path | None = None) -> Shim:
        monkeypatch.setenv("LINEPROFILER_NVML_LIBRARY", str(library or nvml_build / stub_name))
        shim = Shim(nvml_build, stub_name)
        made.append(shim)
        return shim

    yield make
    for shim in made:
        shim.close()


@pytest.fixture
def nvml(make_shim):
    """The header pointed at the full stub; closed after the test."""
    return make_shim()



@pytest.fixture(scope="session")
def nvtx_tool(tmp_path_factory) -> Path:
    """A test NVTX tool library (``nvtx_inject.c``): load it with NVTX_INJECTION64_PATH and it
    writes ``PUSH <name>`` / ``POP`` lines to the file named by LP_NVTX_LOG."""
    out = tmp_path_factory.mktemp("nvtx")
    return _build(out / "libnvtx_inject.so", [HERE / "nvtx_inject.c"])


@pytest.fixture
def run_python(tmp_path):
    """run_python(code, env=None): run ``code`` in a fresh interpreter (this one), return stdout.

    For what must start from a clean ``sys.modules``: a package blocked before anything imports
    it, or a check that something was never imported.
    """

    def run(code: str, env: dict[str, str] | None = None, timeout: float = 180) -> str:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
        full_env.update(env or {})
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, cwd=tmp_path, timeout=timeout
        )
        if result.returncode != 0:
            raise AssertionError(f"child failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result.stdout

    return run


@pytest.fixture(autouse=True)
def _fresh_capabilities():
    """Each test probes capabilities afresh (the answers are cached once per process)."""
    _capabilities_testing.forget_probes()
    yield
    _capabilities_testing.forget_probes()
