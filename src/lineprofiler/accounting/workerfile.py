"""The worker file: one schema, written and read only through this module.

Every process of a run writes ``<run_dir>/workers/<host>/w_<run_id>_<pid>_<uuid8>.json``
by write-to-temp + rename, so a reader sees either the previous complete snapshot or the
new one, never half a file. The report reads these files and nothing else: this module
imports no C module, so the report runs where only the files are.

Schema version 1 (a JSON object). Keys marked * are required; readers ignore keys they do
not know, so later versions may add keys without a schema break. A file whose
``schema_version`` is newer than :data:`SCHEMA_VERSION` is refused with a clear reason.

``schema_version``\\* (int), ``kind``\\* (``"lineprofiler-worker"``)

``identity``\\* object:
    ``run_id``\\* str, ``attempt`` int (0 for a first run; a requeue of the same job counts up),
    ``role``\\* str, ``host``\\* str, ``pid``\\* int, ``uuid``\\* str (8 hex digits),
    ``rank`` / ``local_rank`` / ``node_rank`` / ``world_size``: int or null,
    ``job_id``: str or null, ``launcher``: str or null (``"slurm"``, ``"torchrun"``,
    ``"mpi"``, ``"pmi"``...), ``python``: str, ``argv``: list of str, ``parent_pid``: int.

``times``\\* object:
    ``start_unix_ns``\\* int, ``last_flush_unix_ns``\\* int, ``elapsed_ns``\\* int (monotonic
    time from start to this flush), ``end_unix_ns``: int or null (set by the final flush),
    ``status``\\* str: ``"started"`` (the file written at construction, before any data),
    ``"running"`` (a periodic snapshot), ``"exited"`` (the final flush at exit) or
    ``"signalled"`` (flushed from SIGTERM/SIGUSR1/SIGHUP), ``signal``: str or null.

``snapshot``\\* object:
    ``interval_s`` float, ``writes`` int (successful), ``failures`` int, ``last_error`` str or
    null, ``last_success_unix_ns`` int or null.

``config`` object: ``measure_cpu`` bool, ``window_phase`` str or null, ``backend`` str or
    null, ``annotate`` bool, anything else the profiler was given.

``histogram``\\* object: ``scheme`` (``"log2x8-1us"``, see :mod:`.histogram`), ``n_buckets`` int.

``phases``\\* list of objects, one per phase path seen in this process:
    ``path``\\* str (``"iteration/self_play/mcts"``), ``entries``\\* int, ``wall_ns``\\* int,
    ``self_ns``\\* int (wall minus the wall of child phases), ``cpu_ns`` int or null (thread
    CPU time; null when not measured), ``min_ns`` / ``max_ns`` int or null,
    ``hist``\\* list of ``[bucket_index, count]`` pairs (sparse), ``io`` bool and ``sync``
    bool (how the phase was opened), ``io_bytes``: object or null (exact per-phase I/O,
    filled by the sampler work), ``overflow`` bool (the node that takes entries past the cap).

``counters``\\* list of objects: ``phase``\\* str (the path open when counted, ``""`` when
    none was), ``name``\\* str, ``total``\\* int.

``caps`` object: ``max_paths`` int, ``paths_overflowed`` int (entries sent to the overflow
    node), ``max_counters`` int, ``counters_overflowed`` int.

``repairs`` object: ``mismatched_exits`` int (phase exits out of order or from another thread,
    repaired).

``samples``: null or an object describing the resource samples (the sampler work defines
    it; it may name a sidecar file in the same folder).

``gpu``: null or an object (the GPU work defines it).

``errors`` list of str: failures inside the profiler that were recorded instead of raised.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
KIND = "lineprofiler-worker"
WORKERS_DIR = "workers"
_FILE_RE = re.compile(r"^w_.+_\d+_[0-9a-f]{8}\.json$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class WorkerFileError(Exception):
    """A worker file that cannot be used; ``str()`` is a one-line reason with the path."""


class NewerSchemaError(WorkerFileError):
    """A worker file written by a newer lineprofiler than this one."""


def sanitize_component(text: str, fallback: str = "unknown") -> str:
    """Make ``text`` safe as one path component: no separators, no dots-only, bounded length."""
    cleaned = _UNSAFE.sub("_", str(text)).strip("._")[:64]
    return cleaned or fallback


def worker_dir(run_dir: str | os.PathLike[str], host: str) -> Path:
    return Path(run_dir) / WORKERS_DIR / sanitize_component(host)


def worker_file_name(run_id: str, pid: int, uuid8: str) -> str:
    return f"w_{sanitize_component(run_id)}_{int(pid)}_{uuid8}.json"


def write_worker_file(path: str | os.PathLike[str], document: dict[str, Any], *, fsync: bool = False) -> int:
    """Write ``document`` to ``path`` atomically (temp file + rename); returns the bytes written.

    Raises OSError on failure; the caller (the profiler) counts it and never lets it reach
    user code.
    """
    path = Path(path)
    data = json.dumps(document, separators=(",", ":"), allow_nan=False).encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=".json", dir=path.parent)
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
    return len(data)


def find_worker_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Every worker file under ``run_dir/workers/<host>/``, sorted; temp files are skipped."""
    root = Path(run_dir) / WORKERS_DIR
    if not root.is_dir():
        return []
    found = []
    for host_dir in sorted(root.iterdir()):
        if host_dir.is_dir():
            found.extend(p for p in sorted(host_dir.iterdir()) if _FILE_RE.match(p.name))
    return found


@dataclass(frozen=True)
class _Field:
    key: str
    types: tuple[type, ...]
    required: bool = True


def _check(obj: Any, where: str, fields: tuple[_Field, ...], path: Path) -> None:
    if not isinstance(obj, dict):
        raise WorkerFileError(f"{path}: '{where}' is not an object")
    for field in fields:
        if field.key not in obj:
            if field.required:
                raise WorkerFileError(f"{path}: '{where}.{field.key}' is missing")
            continue
        value = obj[field.key]
        # bool is an int in Python: refuse it where a number is wanted.
        if isinstance(value, bool) and bool not in field.types:
            raise WorkerFileError(f"{path}: '{where}.{field.key}' has the wrong type")
        if not isinstance(value, field.types):
            raise WorkerFileError(f"{path}: '{where}.{field.key}' has the wrong type")


_NONE = type(None)
_IDENTITY = (
    _Field("run_id", (str,)),
    _Field("role", (str,)),
    _Field("host", (str,)),
    _Field("pid", (int,)),
    _Field("uuid", (str,)),
    _Field("attempt", (int,), required=False),
    _Field("rank", (int, _NONE), required=False),
    _Field("local_rank", (int, _NONE), required=False),
    _Field("node_rank", (int, _NONE), required=False),
    _Field("job_id", (str, _NONE), required=False),
)
_TIMES = (
    _Field("start_unix_ns", (int,)),
    _Field("last_flush_unix_ns", (int,)),
    _Field("elapsed_ns", (int,)),
    _Field("status", (str,)),
    _Field("end_unix_ns", (int, _NONE), required=False),
)
_SNAPSHOT = (
    _Field("writes", (int,), required=False),
    _Field("failures", (int,), required=False),
    _Field("last_error", (str, _NONE), required=False),
)
_PHASE = (
    _Field("path", (str,)),
    _Field("entries", (int,)),
    _Field("wall_ns", (int,)),
    _Field("self_ns", (int,)),
    _Field("cpu_ns", (int, _NONE), required=False),
    _Field("min_ns", (int, _NONE), required=False),
    _Field("max_ns", (int, _NONE), required=False),
    _Field("hist", (list,)),
)
_COUNTER = (
    _Field("phase", (str,)),
    _Field("name", (str,)),
    _Field("total", (int,)),
)


def validate(document: Any, path: Path) -> dict[str, Any]:
    """Check the parts of a document the report relies on; raise WorkerFileError if wrong."""
    if not isinstance(document, dict):
        raise WorkerFileError(f"{path}: not a worker file (top level is not an object)")
    if document.get("kind") != KIND:
        raise WorkerFileError(f"{path}: not a worker file (kind is {document.get('kind')!r})")
    version = document.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise WorkerFileError(f"{path}: invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"{path}: written with schema version {version}, this lineprofiler reads up to "
            f"{SCHEMA_VERSION}; upgrade lineprofiler to read it"
        )
    _check(document.get("identity"), "identity", _IDENTITY, path)
    _check(document.get("times"), "times", _TIMES, path)
    _check(document.get("snapshot"), "snapshot", _SNAPSHOT, path)
    phases = document.get("phases")
    counters = document.get("counters")
    if not isinstance(phases, list):
        raise WorkerFileError(f"{path}: 'phases' is not a list")
    if not isinstance(counters, list):
        raise WorkerFileError(f"{path}: 'counters' is not a list")
    for i, phase in enumerate(phases):
        _check(phase, f"phases[{i}]", _PHASE, path)
        for pair in phase["hist"]:
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
                or pair[1] < 0
            ):
                raise WorkerFileError(f"{path}: 'phases[{i}].hist' holds a malformed bucket")
    for i, counter in enumerate(counters):
        _check(counter, f"counters[{i}]", _COUNTER, path)
    return document


def read_worker_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate one worker file; raise WorkerFileError (one line) when it is unusable."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise WorkerFileError(f"{path}: cannot read: {error.strerror or error}") from None
    if not raw:
        raise WorkerFileError(f"{path}: empty file")
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise WorkerFileError(f"{path}: corrupt or truncated JSON ({error.__class__.__name__})") from None
    return validate(document, path)
