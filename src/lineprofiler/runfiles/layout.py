"""Where every file of a run directory goes, and how it is written: decided here and nowhere else.

A run directory holds::

    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.json      one worker file per process
    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.samples   its resource samples (the sidecar)
    <run_dir>/metadata/<host>/m_<run>_<pid>_<uuid8>.json     what that process had available
    <run_dir>/metadata.json                                  the same, for the run
    <run_dir>/backend/<tool>_<host>_<pid>.json               a heavy profiler window's artifact

``<run>`` is the run id and ``<host>`` the host name, each made safe as one path component
(:func:`sanitize_component`); ``<uuid8>`` is 8 hex digits, new for every process (a fork child
gets its own). Every file is written whole to a temporary name and renamed into place
(:func:`write_atomic`), so a reader sees a previous complete file or the new one, never half of
one; the sidecar is the exception, appended to in place by its writer.

This module imports nothing of the profilers: the report reads with the same names.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

WORKERS_DIR = "workers"
METADATA_DIR = "metadata"
METADATA_FILE = "metadata.json"
BACKEND_DIR = "backend"
WORKER_PREFIX = "w_"
METADATA_PREFIX = "m_"
JSON_SUFFIX = ".json"
SAMPLES_SUFFIX = ".samples"
#: A temporary file of an atomic write in progress; readers skip these names.
TEMP_PREFIX = ".tmp_"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sanitize_component(text: str, fallback: str = "unknown") -> str:
    """Make ``text`` safe as one path component: no separators, no dots-only, bounded length.

    Lossy (every run of other characters becomes one ``_``): used for run ids, whose file-name
    form only has to be stable.
    """
    cleaned = _UNSAFE.sub("_", str(text)).strip("._")[:64]
    return cleaned or fallback


def host_component(host: str) -> str:
    """The folder name of ``host`` under ``workers/`` and ``metadata/``."""
    return sanitize_component(host, "unknown-host")


def worker_file_name(run_id: str, pid: int, uuid8: str) -> str:
    """``w_<run>_<pid>_<uuid8>.json``."""
    return f"{WORKER_PREFIX}{sanitize_component(run_id)}_{int(pid)}_{uuid8}{JSON_SUFFIX}"


def worker_dir(run_dir: str | os.PathLike[str], host: str) -> Path:
    """``<run_dir>/workers/<host>``."""
    return Path(run_dir) / WORKERS_DIR / host_component(host)


def worker_path(run_dir: str | os.PathLike[str], host: str, run_id: str, pid: int, uuid8: str) -> Path:
    """The worker file of one process."""
    return worker_dir(run_dir, host) / worker_file_name(run_id, pid, uuid8)


def sidecar_name(worker_file_name: str) -> str:
    """``w_run_12_abcd1234.json`` -> ``w_run_12_abcd1234.samples``."""
    stem = worker_file_name.removesuffix(JSON_SUFFIX)
    return stem + SAMPLES_SUFFIX


def sidecar_path(worker_file: str | os.PathLike[str]) -> Path:
    """The sample file beside a worker file."""
    worker_file = Path(worker_file)
    return worker_file.with_name(sidecar_name(worker_file.name))


def metadata_path(run_dir: str | os.PathLike[str], worker_file: str | os.PathLike[str]) -> Path:
    """``<run_dir>/metadata/<host>/m_<run>_<pid>_<uuid8>.json``, named after the worker file."""
    worker_file = Path(worker_file)
    name = METADATA_PREFIX + worker_file.name.removeprefix(WORKER_PREFIX)
    return Path(run_dir) / METADATA_DIR / worker_file.parent.name / name


def run_metadata_path(run_dir: str | os.PathLike[str]) -> Path:
    """``<run_dir>/metadata.json``."""
    return Path(run_dir) / METADATA_FILE


def artifact_name(tool: str, host: str, pid: int) -> str:
    """``<tool>_<host>_<pid>.json``: one artifact per process, so processes never collide."""
    return f"{tool}_{sanitize_component(host)}_{int(pid)}{JSON_SUFFIX}"


def artifact_path(run_dir: str | os.PathLike[str], tool: str, host: str, pid: int) -> Path:
    """``<run_dir>/backend/<tool>_<host>_<pid>.json``."""
    return Path(run_dir) / BACKEND_DIR / artifact_name(tool, host, pid)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and a rename, so a
    reader sees the old file or the new one, never half of one. Raises OSError."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=JSON_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
