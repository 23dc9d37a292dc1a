"""The C test libraries: the NVML stand-in (``tests/gpu/nvml_stub.c``, with variants that lack
one call each), the shim that compiles ``accounting/_nvml.h`` for ctypes, and the NVTX tool
(``tests/gpu/nvtx_inject.c``). Under ``make test-asan`` (LP_ASAN set) they are instrumented too,
as the preloaded sanitizer runtimes expect."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .once import made_once

TESTS = Path(__file__).resolve().parents[1]
GPU_TESTS = TESTS / "gpu"
SRC = TESTS.parent / "src" / "lineprofiler"

#: Library name -> (source, defines): what ``libraries`` builds.
LIBRARIES = {
    "libnvml_stub.so": ("nvml_stub.c", ()),
    "libnvml_stub_noutil.so": ("nvml_stub.c", ("LPSTUB_NO_UTIL",)),
    "libnvml_stub_noproc.so": ("nvml_stub.c", ("LPSTUB_NO_PROC",)),
    "libnvml_stub_norunning.so": ("nvml_stub.c", ("LPSTUB_NO_RUNNING",)),
    "libnvml_shim.so": ("nvml_shim.c", ()),
    "libnvtx_inject.so": ("nvtx_inject.c", ()),
}


def _cflags() -> list[str]:
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fPIC", "-shared"]
    if os.environ.get("LP_ASAN"):
        flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    return flags


def build_library(out: Path, source: Path, defines: tuple[str, ...] = ()) -> Path:
    """Compile ``source`` (with ``src/lineprofiler`` on the include path) into ``out``; skips the
    test without a C compiler."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler on PATH: the test libraries cannot be built")
    cmd = [cc, *_cflags(), *(f"-D{name}" for name in defines), "-I", str(SRC), "-o", str(out), str(source), "-ldl"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"build failed: {' '.join(cmd)}\n{result.stderr}")
    return out


def libraries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding every library of ``LIBRARIES``, built once for the session."""

    def build_all(folder: Path) -> None:
        for name, (source, defines) in LIBRARIES.items():
            build_library(folder / name, GPU_TESTS / source, defines)

    return made_once(tmp_path_factory, "c-libraries", build_all)
