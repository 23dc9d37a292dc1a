"""Nothing outside the run directory is ever created, truncated or written, whatever is planted in it.

Each test plants a symbolic link (or a hard link, or a FIFO) at one of the paths the profiler
writes, runs a real Profiler through construction, snapshots and close, and checks that the
file or folder the link points to is exactly as it was, that the profiler never raised, and
that what it refused is in the worker file's ``errors``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from pathlib import Path

import pytest

from lineprofiler.accounting import Profiler, identity
from lineprofiler.accounting._process import PROCESS
from lineprofiler.runfiles import layout, workerfile

HOST = "node07"
RUN = "r1"
UUID = "0000abcd"
VICTIM_BYTES = 1 << 20


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A run directory whose paths are known in advance, and an outside folder with a 1 MiB file."""
    monkeypatch.setenv("LINEPROFILER_HOST", HOST)
    monkeypatch.setenv("LINEPROFILER_RUN_ID", RUN)
    monkeypatch.setattr(identity, "new_uuid8", lambda: UUID)
    monkeypatch.setattr(PROCESS, "warned_unwritable", False)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.bin"
    victim.write_bytes(os.urandom(VICTIM_BYTES))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    worker = layout.worker_path(run_dir, HOST, RUN, os.getpid(), UUID)
    return {
        "run_dir": run_dir,
        "outside": outside,
        "victim": victim,
        "worker": worker,
        "sidecar": layout.sidecar_path(worker),
        "metadata": layout.metadata_path(run_dir, worker),
        "before": _fingerprint(tmp_path, run_dir),
        "tmp": tmp_path,
    }


def _fingerprint(tmp_path: Path, run_dir: Path) -> dict[str, tuple]:
    """Every path under tmp_path outside the run directory, with its kind, size, mtime and hash."""
    seen = {}
    for path in sorted(tmp_path.rglob("*")):
        if path == run_dir or run_dir in path.parents:
            continue
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(info.st_mode) else None
        seen[str(path)] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns, digest)
    return seen


def _run_profiler(run_dir: Path, **kwargs) -> tuple[Profiler, list[str]]:
    """Construct, record, flush twice, close: never raising. Returns the profiler and the errors
    of the last worker file it wrote (or of its in-memory document when none could be written)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the one-time "cannot write" warning
        profiler = Profiler(run_dir, role="actor", snapshot_interval_s=None, **kwargs)
        for _ in range(3):
            with profiler.phase("it"):
                profiler.count("items")
        profiler.flush()
        profiler.flush()
        document = profiler._document("running", False)
        profiler.close()
    try:
        errors = workerfile.read_worker_file(profiler.path)["errors"]
    except workerfile.WorkerFileError:
        errors = document["errors"]
    return profiler, errors


def _assert_outside_untouched(site) -> None:
    assert _fingerprint(site["tmp"], site["run_dir"]) == site["before"]
    assert site["victim"].stat().st_size == VICTIM_BYTES


def _plant_link(at: Path, target: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(target)


@pytest.mark.parametrize(
    "where, target",
    [
        ("workers", "outside"),
        ("workers_host", "outside"),
        ("metadata_dir", "outside"),
        ("metadata_host", "outside"),
        ("backend", "outside"),
    ],
)
def test_a_link_at_a_folder_is_refused_never_followed(site, where, target):
    run_dir = site["run_dir"]
    at = {
        "workers": run_dir / "workers",
        "workers_host": site["worker"].parent,
        "metadata_dir": run_dir / "metadata",
        "metadata_host": site["metadata"].parent,
        "backend": run_dir / "backend",
    }[where]
    _plant_link(at, site[target])
    kwargs = {"backend": "viztracer", "backend_window": (1, 2), "window_phase": "it"} if where == "backend" else {}
    profiler, errors = _run_profiler(run_dir, **kwargs)
    _assert_outside_untouched(site)
    assert at.is_symlink()  # a shared folder's link is refused, not removed
    if where.startswith("workers"):
        assert not site["worker"].exists()
        assert any("symbolic link: refused, never followed" in e for e in errors), errors
    elif where.startswith("metadata"):
        assert site["worker"].is_file() and not profiler.metadata_path().exists()
        assert any(e.startswith("metadata: ") and "symbolic link" in e for e in errors), errors
    else:
        window = workerfile.read_worker_file(profiler.path)["backend_window"]
        if window["state"] != "unavailable":  # viztracer is installed with the test extra
            assert window["state"] == "failed" and "symbolic link" in window["error"], window


@pytest.mark.parametrize("name", ["worker", "sidecar_at_start", "metadata", "run_metadata"])
def test_a_link_at_a_file_is_never_followed(site, name):
    at = {
        "worker": site["worker"],
        "sidecar_at_start": site["sidecar"],
        "metadata": site["metadata"],
        "run_metadata": layout.run_metadata_path(site["run_dir"]),
    }[name]
    _plant_link(at, site["victim"])
    profiler, errors = _run_profiler(site["run_dir"])
    _assert_outside_untouched(site)
    assert at.is_file() and not at.is_symlink()
    assert site["worker"].is_file()
    if name.startswith("sidecar"):
        # Appended to in place: the link is removed, the rows kept and written to a new file next time.
        assert any("was a symbolic link: removed, never written through" in e for e in errors), errors
    else:
        # Written whole and renamed: the rename replaces the link itself.
        assert any("was a symbolic link: replaced, never followed" in e for e in errors), errors


def test_a_sample_file_swapped_for_a_link_between_snapshots(site):
    """The attack of a shared run dir: replace the growing sidecar with a link to a 1 MiB file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        profiler = Profiler(site["run_dir"], snapshot_interval_s=None)
        assert profiler.flush()
        sidecar = site["sidecar"]
        assert sidecar.is_file() and sidecar.stat().st_size > 0
        sidecar.unlink()
        sidecar.symlink_to(site["victim"])
        assert profiler.flush()  # the worker file is written; the samples are refused this time
        refused = workerfile.read_worker_file(profiler.path)
        assert profiler.flush()  # and begun again in a new file the time after
        profiler.close()
    _assert_outside_untouched(site)
    assert any("samples: " in e and "symbolic link" in e for e in refused["errors"]), refused["errors"]
    assert refused["samples"]["write_failures"] == 1 and refused["samples"]["pending_rows"] > 0
    final = workerfile.read_worker_file(profiler.path)
    assert sidecar.is_file() and not sidecar.is_symlink()
    assert final["samples"]["file_restarts"] == 1 and final["samples"]["pending_rows"] == 0


def test_a_hard_link_at_the_sample_file_is_never_written(site):
    os.makedirs(site["sidecar"].parent)
    os.link(site["victim"], site["sidecar"])  # same file system: the victim now has two names
    profiler, errors = _run_profiler(site["run_dir"])
    _assert_outside_untouched(site)
    assert site["victim"].stat().st_nlink == 1  # only the planted name was removed
    assert any("samples: " in e for e in errors), errors


def test_a_fifo_at_metadata_json_neither_blocks_nor_is_read(site):
    os.mkfifo(layout.run_metadata_path(site["run_dir"]))
    profiler, errors = _run_profiler(site["run_dir"])  # would hang on an open() that blocks
    _assert_outside_untouched(site)
    assert layout.run_metadata_path(site["run_dir"]).is_file()
    assert not [e for e in errors if e.startswith("metadata")]


def test_files_are_readable_by_colleagues_and_agree_on_their_mode(site):
    old = os.umask(0o022)
    try:
        profiler, errors = _run_profiler(site["run_dir"])
    finally:
        os.umask(old)
    assert errors == []
    modes = {
        path.name: stat.S_IMODE(path.stat().st_mode)
        for path in (site["worker"], site["sidecar"], site["metadata"], layout.run_metadata_path(site["run_dir"]))
    }
    assert set(modes.values()) == {0o644}, modes
    for folder in (site["worker"].parent, site["metadata"].parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755


def test_a_link_at_the_backend_artifact_is_replaced_never_followed(site):
    pytest.importorskip("viztracer")
    artifact = layout.artifact_path(site["run_dir"], "viztracer", HOST, os.getpid())
    _plant_link(artifact, site["victim"])
    profiler, errors = _run_profiler(site["run_dir"], backend="viztracer", backend_window=(1, 2), window_phase="it")
    _assert_outside_untouched(site)
    window = workerfile.read_worker_file(profiler.path)["backend_window"]
    assert window["state"] == "done" and "was a symbolic link: replaced, never followed" in window["error"]
    assert artifact.is_file() and not artifact.is_symlink() and artifact.stat().st_size > 0
    assert [p.name for p in artifact.parent.iterdir()] == [artifact.name]  # no private folder left
