"""Shared pytest set-up: every test runs with a clean lineprofiler environment.

The report's worker-file builders (``tests/report/builders.py``) are loaded here, once, as
``lp_report_builders``, so that any test folder can build real run directories with them, and
``tests/installed.py`` (what this machine has: torch and its build, viztracer, a GPU) as
``lp_installed``.

``disk_dir`` is a folder on a real block-backed filesystem, for the tests of exact disk
traffic (``write_bytes``, ``read_bytes``): tmpfs and overlay charge none.

``nvml_build``, ``nvml_stub`` and ``nvtx_tool`` are the C test libraries of ``helpers.native``,
compiled once for the session (for every xdist worker).
"""

import fcntl
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from helpers import hang_watch, native
from helpers.once import session_folder


def _load_once(name: str, path: Path) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_load_once("lp_report_builders", Path(__file__).parent / "report" / "builders.py")
_load_once("lp_installed", Path(__file__).parent / "installed.py")


def pytest_configure(config):
    """A suite started in the background by a non-interactive shell (``make test &``) inherits
    SIGINT ignored, and so would every program the tests start and then interrupt: their Ctrl-C
    would be lost, as the shell meant for itself. Tests of Ctrl-C need it as a terminal gives it.
    Set before xdist starts its workers, who inherit it, as the programs they start do."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.pluginmanager.register(hang_watch, "lineprofiler-hang-watch")


@pytest.fixture(autouse=True)
def _alone_when_marked(request, tmp_path_factory):
    """Under xdist a test marked ``alone`` runs while no other worker runs a test: every test
    holds a shared lock, an ``alone`` one the exclusive lock. A gate taken first keeps a busy
    worker from re-taking the shared lock ahead of a waiting ``alone`` test forever."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    alone = request.node.get_closest_marker("alone") is not None
    shared = session_folder(tmp_path_factory)
    with open(shared / "alone.gate", "w") as gate, open(shared / "alone.lock", "w") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield


@pytest.fixture(autouse=True)
def _clean_lineprofiler_env(monkeypatch):
    # A profiler enabled by one test exports LINEPROFILER_* for its children; do not let it
    # leak into the next test.
    for key in list(os.environ):
        if key.startswith("LINEPROFILER_"):
            monkeypatch.delenv(key, raising=False)
    yield


# -- the C test libraries ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def nvml_build(tmp_path_factory) -> Path:
    """The folder of the NVML stub (and its variants), the header's shim and the NVTX tool."""
    return native.libraries(tmp_path_factory)


@pytest.fixture(scope="session")
def nvml_stub(nvml_build) -> Path:
    """The NVML stand-in: it loads and initialises, and sees no device unless told."""
    return nvml_build / "libnvml_stub.so"


@pytest.fixture(scope="session")
def nvtx_tool(nvml_build) -> Path:
    """The NVTX tool library (loaded through NVTX_INJECTION64_PATH, as nsys is): it writes
    ``PUSH <name>`` / ``POP`` lines to the file named by LP_NVTX_LOG."""
    return nvml_build / "libnvtx_inject.so"


# -- a folder on a disk ------------------------------------------------------------------------

_TESTS = Path(__file__).resolve().parent
_REPO = _TESTS.parent
_MiB = 1 << 20
#: Filesystems whose writes go through a block device's writeback (so write_bytes moves).
_BLOCK_FILESYSTEMS = {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs"}


def _thread_io() -> dict[str, int]:
    with open("/proc/thread-self/io") as handle:
        return {key: int(value) for key, _, value in (line.partition(":") for line in handle)}


def _disk_traffic_is_charged(folder: Path) -> str | None:
    """None when an fsync'd 1 MiB write in ``folder`` moves write_bytes by 1 MiB and reading it
    back after posix_fadvise(DONTNEED) moves read_bytes by 1 MiB; else why not."""
    probe = folder / f".probe-{uuid.uuid4().hex}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
        try:
            before = _thread_io()["write_bytes"]
            os.write(fd, os.urandom(_MiB))
            os.fsync(fd)
            moved = _thread_io()["write_bytes"] - before
        finally:
            os.close(fd)
        if moved < _MiB:
            return f"{folder}: an fsync'd 1 MiB write moved write_bytes by {moved}"
        fd = os.open(probe, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            before = _thread_io()["read_bytes"]
            os.read(fd, _MiB)
            moved = _thread_io()["read_bytes"] - before
        finally:
            os.close(fd)
        if moved < _MiB:
            return f"{folder}: a read after posix_fadvise(DONTNEED) moved read_bytes by {moved}"
        return None
    except OSError as error:
        return f"{folder}: {error}"
    finally:
        probe.unlink(missing_ok=True)


def _block_mounts() -> list[Path]:
    """Writable mount points of block-backed filesystems, from /proc/mounts."""
    found = []
    try:
        with open("/proc/mounts") as handle:
            for line in handle:
                source, point, kind, options = line.split()[:4]
                if kind in _BLOCK_FILESYSTEMS and source.startswith("/dev/") and "rw" in options.split(","):
                    path = Path(point.replace("\\040", " "))
                    if os.access(path, os.W_OK) and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def _loop_mount(base: Path) -> tuple[Path | None, str]:
    """A 64 MiB ext4 image loop-mounted under ``base`` (root only), or None and why not."""
    if os.geteuid() != 0:
        return None, "loop-mounted ext4: not root"
    tools = {name: shutil.which(name) for name in ("mkfs.ext4", "mount", "umount")}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        return None, f"loop-mounted ext4: {', '.join(missing)} not found"
    image, point = base / "disk.img", base / "mnt"
    point.mkdir()
    with open(image, "wb") as handle:
        handle.truncate(64 * _MiB)
    for cmd in ([tools["mkfs.ext4"], "-q", "-F", str(image)], [tools["mount"], "-o", "loop", str(image), str(point)]):
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            image.unlink()
            why = (result.stderr or result.stdout).strip().splitlines()[-1:] or [f"exit {result.returncode}"]
            return None, f"loop-mounted ext4: {Path(cmd[0]).name} failed: {why[0]}"
    return point, ""


@pytest.fixture(scope="session")
def _disk_root(tmp_path_factory):
    """The first of: pytest's temporary folder, /var/tmp, the checkout's build/ (ignored by
    git), a writable ext4/xfs/... mount, a loop-mounted ext4 image, where disk traffic is
    charged to the process. Skips the tests that need it, saying why each one failed."""
    if not os.path.exists("/proc/thread-self/io"):
        pytest.skip("no /proc/thread-self/io on this system")
    reasons = []
    candidates = [tmp_path_factory.getbasetemp(), Path("/var/tmp"), _REPO / "build", *_block_mounts()]
    for parent in dict.fromkeys(candidates):
        try:
            parent.mkdir(parents=True, exist_ok=True)
            folder = Path(parent) / f".lineprofiler-disk-{uuid.uuid4().hex[:8]}"
            folder.mkdir()
        except OSError as error:
            reasons.append(f"{parent}: {error.strerror or error}")
            continue
        reason = _disk_traffic_is_charged(folder)
        if reason is None:
            yield folder
            shutil.rmtree(folder, ignore_errors=True)
            return
        reasons.append(reason)
        shutil.rmtree(folder, ignore_errors=True)
    point, reason = _loop_mount(tmp_path_factory.mktemp("loop-ext4"))
    if point is not None:
        reason = _disk_traffic_is_charged(point)
        if reason is None:
            try:
                yield point
            finally:
                subprocess.run(["umount", str(point)], capture_output=True)
                (point.parent / "disk.img").unlink(missing_ok=True)
            return
        subprocess.run(["umount", str(point)], capture_output=True)
    reasons.append(reason)
    pytest.skip("no folder where the kernel charges disk traffic to this process: " + "; ".join(reasons))


@pytest.fixture
def disk_dir(_disk_root):
    """A fresh, empty folder on a block-backed filesystem (see ``_disk_root``)."""
    folder = _disk_root / uuid.uuid4().hex[:8]
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)

