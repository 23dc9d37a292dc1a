"""What optional pieces this process can use, and why not: one place, asked lazily, never raising.

Every optional dependency of the accounting layer is probed here and nowhere else:

========== ================================================================================
name       what it powers, and how it is probed
========== ================================================================================
torch      installed? (``find_spec`` and the distribution's version: never imported here)
torch_cuda torch already imported by the user, built with CUDA, CUDA initialised yet?
           (sync=True, VRAM, the CUDA side of backend="torch"); read from ``sys.modules``
nvml       ``libnvidia-ml.so.1`` loadable, ``nvmlInit`` succeeds, devices and their names
           (the GPU block; the sampler reads NVML itself, from C)
viztracer  installed? (backend="viztracer"; imported only when its window starts)
nvtx       NVTX ranges for annotate=True: ``torch.cuda.nvtx`` on a CUDA build of torch,
           else the ``nvtx`` package
psutil     installed? (the sampler's memory and I/O blocks, where it uses psutil)
========== ================================================================================

Each answer is a :class:`Capability` with ``available`` and, when it is not, a one-line
``unavailable_reason``. The costly probes (NVML's init, package metadata) run once per process
and are cached; the torch answers that change when the user imports torch or initialises CUDA
(``torch_cuda``, ``nvtx``) are recomputed on each call from ``sys.modules``, which costs a
dictionary lookup and a few attribute reads. Nothing here imports torch, viztracer or psutil.

What the answers are written to (``metadata.json``) is :mod:`.metadata`'s business.
"""

from __future__ import annotations

import os
import sys
import threading

from .._record import Record

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = [
    "NAMES",
    "NVML_LIBRARY_ENV",
    "Capability",
    "all_capabilities",
    "get",
    "nvml",
    "nvtx",
    "psutil",
    "torch",
    "torch_cuda",
    "viztracer",
]

#: Test and diagnosis override of the NVML library path; the C sampler honours it too.
NVML_LIBRARY_ENV = "LINEPROFILER_NVML_LIBRARY"
NVML_LIBRARY = "libnvidia-ml.so.1"


class Capability(Record):
    """One optional piece: usable or not, and why not."""

    __slots__ = ("name", "available", "version", "unavailable_reason", "details")

    def __init__(
        self,
        name: str,
        available: bool,
        version: str | None = None,
        unavailable_reason: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.available = available
        self.version = version
        self.unavailable_reason = unavailable_reason
        self.details: Mapping[str, Any] = {} if details is None else details

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"available": self.available}
        if self.version is not None:
            out["version"] = self.version
        if not self.available:
            out["unavailable_reason"] = self.unavailable_reason or "unavailable"
        out.update(self.details)
        return out

    def __bool__(self) -> bool:
        return self.available


_lock = threading.Lock()
_cache: dict[str, Capability] = {}  # tests empty it through _capabilities_testing


def _cached(name: str, probe: Callable[[], Capability]) -> Capability:
    with _lock:
        found = _cache.get(name)
    if found is not None:
        return found
    result = _safe(name, probe)
    with _lock:
        # Two threads may both probe on first use; the first answer stays, so callers agree.
        return _cache.setdefault(name, result)


def _safe(name: str, probe: Callable[[], Capability]) -> Capability:
    try:
        return probe()
    except BaseException as error:  # a probe must never reach the user's code
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return Capability(name, False, unavailable_reason=f"probe failed: {error.__class__.__name__}: {error}")


def _installed(module: str, distribution: str) -> tuple[bool, str | None, str | None]:
    """(installed, version, reason) without importing ``module``."""
    if module in sys.modules and sys.modules[module] is None:
        return False, None, f"import of {module} is blocked in this process (sys.modules[{module!r}] is None)"
    try:
        spec = _find_spec(module)
    except (ImportError, ValueError) as error:
        return False, None, f"{module} cannot be found: {error}"
    if spec is None:
        return False, None, f"{module} is not installed"
    return True, _version(module, distribution, spec), None


def _find_spec(module: str) -> Any:
    """``importlib.util.find_spec(module)`` for a top-level name, asking the finders of
    ``sys.meta_path`` directly (their documented ``find_spec``): importing importlib.util costs a
    process more than a millisecond, and a profiler asks this while it starts (is torch there?)."""
    found = sys.modules.get(module)
    if found is not None:
        spec = getattr(found, "__spec__", None)
        if spec is None:
            raise ValueError(f"{module}.__spec__ is None")
        return spec
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None:
            spec = find(module, None)
            if spec is not None:
                return spec
    return None


def _version(module: str, distribution: str, spec: Any) -> str | None:
    """The installed version, cheaply: the module's ``__version__`` if it is imported, else the
    name of the ``<dist>-<version>.dist-info`` folder beside it. importlib.metadata is the last
    resort: importing it costs tens of milliseconds, paid by every process a run starts."""
    version = getattr(sys.modules.get(module), "__version__", None)
    if isinstance(version, str):
        return version
    wanted = _normalise(distribution)
    origin = (list(spec.submodule_search_locations or ()) or [spec.origin])[0]
    if origin:
        folder = os.path.dirname(origin)
        try:
            with os.scandir(folder) as entries:  # closed on the early return too
                for entry in entries:
                    if entry.name.endswith(".dist-info"):
                        name, _, found = entry.name[: -len(".dist-info")].rpartition("-")
                        if found and _normalise(name) == wanted:
                            return found
        except OSError:
            pass
    try:
        import importlib.metadata

        return importlib.metadata.version(distribution)
    except Exception:
        return None


def _normalise(name: str) -> str:
    return "".join("_" if c in "-_." else c for c in name.lower())


def _package(name: str, module: str, distribution: str) -> Capability:
    ok, version, reason = _installed(module, distribution)
    return Capability(name, ok, version=version, unavailable_reason=reason)


def torch() -> Capability:
    """Is torch installed? ``details["imported"]`` says whether the user has imported it."""
    base = _cached("torch", lambda: _package("torch", "torch", "torch"))
    if not base.available:
        return base
    return Capability(base.name, True, version=base.version, details={"imported": _torch_module() is not None})


def _torch_module() -> Any:
    module = sys.modules.get("torch")
    # A half-imported torch (we are inside its import) has no cuda attribute yet: not usable.
    return module if module is not None and hasattr(module, "cuda") else None


def torch_cuda() -> Capability:
    """torch, imported by the user, with CUDA compiled in; ``details["initialized"]`` too.

    Never imports torch and never initialises CUDA: ``torch.cuda.is_available()`` would call
    cuInit, which can break CUDA in processes the user forks later.
    """
    return _safe("torch_cuda", _probe_torch_cuda)


def _probe_torch_cuda() -> Capability:
    base = torch()
    if not base.available:
        return Capability("torch_cuda", False, unavailable_reason=base.unavailable_reason)
    module = _torch_module()
    if module is None:
        return Capability(
            "torch_cuda",
            False,
            version=base.version,
            unavailable_reason="torch is not imported by this process (lineprofiler never imports it)",
        )
    cuda = module.cuda
    compiled = bool(getattr(cuda, "_is_compiled", lambda: False)())
    cuda_version = getattr(getattr(module, "version", None), "cuda", None)
    if not compiled:
        return Capability(
            "torch_cuda",
            False,
            version=base.version,
            unavailable_reason=f"torch {base.version or ''} is built without CUDA".replace("  ", " "),
        )
    return Capability(
        "torch_cuda",
        True,
        version=cuda_version,
        details={"initialized": bool(cuda.is_initialized())},
    )


def nvml() -> Capability:
    """Can NVML be loaded and initialised here? Devices by NVML index, with names.

    Loads the library with ctypes, which is fine off the hot path; the sampler uses its own
    dlopen from C. ``nvmlInit`` is counted by NVML, so the ``nvmlShutdown`` here does not undo
    the sampler's.
    """
    return _cached("nvml", _probe_nvml)


def _probe_nvml() -> Capability:
    import ctypes  # here: only the NVML probe needs it, and it costs milliseconds to import

    path = os.environ.get(NVML_LIBRARY_ENV) or NVML_LIBRARY
    details: dict[str, Any] = {"library": path}
    ok, version, _ = _installed("pynvml", "nvidia-ml-py")
    details["nvidia_ml_py"] = version if ok else None
    try:
        lib = ctypes.CDLL(path)
    except OSError as error:
        reason = f"cannot load NVML (no NVIDIA driver?): {error}"
        return Capability("nvml", False, unavailable_reason=reason, details=details)
    init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
    count = getattr(lib, "nvmlDeviceGetCount_v2", None) or getattr(lib, "nvmlDeviceGetCount", None)
    handle = getattr(lib, "nvmlDeviceGetHandleByIndex_v2", None) or getattr(lib, "nvmlDeviceGetHandleByIndex", None)
    shutdown = getattr(lib, "nvmlShutdown", None)
    if not (init and count and handle and shutdown and hasattr(lib, "nvmlDeviceGetUtilizationRates")):
        reason = f"NVML library lacks nvmlInit/nvmlDeviceGetUtilizationRates: {path}"
        return Capability("nvml", False, unavailable_reason=reason, details=details)
    error_string = getattr(lib, "nvmlErrorString", None)
    if error_string is not None:
        error_string.restype = ctypes.c_char_p
        error_string.argtypes = [ctypes.c_int]

    def text(rc: int) -> str:
        if error_string is not None:
            raw = error_string(rc)
            if raw:
                return str(raw.decode(errors="replace"))
        return f"NVML error {rc}"

    rc = init()
    if rc != 0:
        return Capability("nvml", False, unavailable_reason=f"nvmlInit failed: {text(rc)}", details=details)
    try:
        n = ctypes.c_uint(0)
        rc = count(ctypes.byref(n))
        if rc != 0:
            reason = f"nvmlDeviceGetCount failed: {text(rc)}"
            return Capability("nvml", False, unavailable_reason=reason, details=details)
        devices = []
        get_name = getattr(lib, "nvmlDeviceGetName", None)
        for i in range(n.value):
            device = ctypes.c_void_p()
            name = None
            if handle(ctypes.c_uint(i), ctypes.byref(device)) == 0 and get_name is not None:
                buf = ctypes.create_string_buffer(96)
                if get_name(device, buf, ctypes.c_uint(len(buf))) == 0:
                    name = buf.value.decode(errors="replace")
            devices.append({"index": i, "name": name})
        driver = ctypes.create_string_buffer(96)
        get_driver = getattr(lib, "nvmlSystemGetDriverVersion", None)
        version = None
        if get_driver is not None and get_driver(driver, ctypes.c_uint(len(driver))) == 0:
            version = driver.value.decode(errors="replace")
    finally:
        shutdown()
    details["devices"] = devices
    if not devices:
        return Capability("nvml", False, version=version, unavailable_reason="NVML sees no GPU", details=details)
    return Capability("nvml", True, version=version, details=details)


def viztracer() -> Capability:
    """Is viztracer installed? Imported only when a viztracer window starts."""
    return _cached("viztracer", lambda: _package("viztracer", "viztracer", "viztracer"))


def psutil() -> Capability:
    return _cached("psutil", lambda: _package("psutil", "psutil", "psutil"))


def nvtx() -> Capability:
    """Where NVTX ranges would go: ``details["source"]`` is ``"torch.cuda.nvtx"`` or ``"nvtx"``."""
    return _safe("nvtx", _probe_nvtx)


def torch_has_nvtx() -> bool:
    """True when the imported torch carries NVTX (a CUDA build); the CPU build's raises."""
    module = _torch_module()
    return module is not None and hasattr(getattr(module, "_C", None), "_nvtx")


def _probe_nvtx() -> Capability:
    if torch_has_nvtx():
        return Capability("nvtx", True, details={"source": "torch.cuda.nvtx"})
    package = _cached("nvtx_package", lambda: _package("nvtx_package", "nvtx", "nvtx"))
    if package.available:
        return Capability("nvtx", True, version=package.version, details={"source": "nvtx"})
    if _torch_module() is None:
        torch_reason = "torch is not imported"
    else:
        torch_reason = "the imported torch has no NVTX (not a CUDA build)"
    return Capability("nvtx", False, unavailable_reason=f"{torch_reason}, and {package.unavailable_reason}")


_PROBES: dict[str, Callable[[], Capability]] = {
    "torch": torch,
    "torch_cuda": torch_cuda,
    "nvml": nvml,
    "viztracer": viztracer,
    "nvtx": nvtx,
    "psutil": psutil,
}
NAMES = tuple(_PROBES)


def get(name: str) -> Capability:
    """The capability called ``name`` (one of :data:`NAMES`); unknown names are unavailable."""
    probe = _PROBES.get(name)
    if probe is None:
        return Capability(name, False, unavailable_reason=f"unknown capability {name!r}")
    return _safe(name, probe)


def all_capabilities() -> dict[str, Capability]:
    return {name: get(name) for name in NAMES}
