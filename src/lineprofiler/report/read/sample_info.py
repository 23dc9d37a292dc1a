"""What a worker's document says about its resource samples, read back from its worker file
(merge keeps the samples on disk) and checked value by value, so the blocks never read the raw
object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...runfiles.workerfile import WorkerFileError
from .cpu_samples import WorkerCpu, unreadable, worker_cpu
from .run import Worker


@dataclass(frozen=True)
class SampleInfo:
    """What one worker's document says about its resource samples (its ``samples`` object).

    The object comes from the worker file and only its type was checked on reading, so each
    value is checked here once: the blocks read this, never the raw object.
    """

    worker: Worker
    #: The sample file, in the worker file's own folder; None when none was written.
    sidecar: Path | None
    #: The sampling interval in seconds, when the document gives a positive one.
    interval_s: float | None
    #: The sample file's columns as the document lists them.
    columns: tuple[str, ...]
    #: Why no sample file was written (or the worker file could not be re-read).
    unavailable_reason: str | None
    io_unavailable_reason: str | None
    phase_unavailable_reason: str | None
    #: What it says about CPU: why its threads waited, per phase; its CPU time; its CPUs.
    cpu: WorkerCpu | None = None


def _text(samples: dict[str, Any], key: str) -> str | None:
    value = samples.get(key)
    return value if isinstance(value, str) and value else None


def sample_info(worker: Worker) -> SampleInfo | None:
    """The worker's :class:`SampleInfo`, or None when its document has no ``samples`` object.

    Reads the samples once (merge keeps them on disk: this re-reads the worker file);
    a file that can no longer be read gives a SampleInfo whose reason says so.
    """
    try:
        samples = worker.document.read_samples()
    except WorkerFileError as error:
        reason = f"its worker file could not be re-read: {error}"
        return SampleInfo(worker, None, None, (), reason, None, None, unreadable(reason))
    if not isinstance(samples, dict):
        return None
    name = samples.get("file")
    sidecar = None
    # Only a plain name: a sample file is never looked for outside its worker's folder.
    if isinstance(name, str) and name and "/" not in name and "\\" not in name and name not in (".", ".."):
        sidecar = worker.path.parent / name
    interval = samples.get("interval_s")
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 < interval < 1e9:
        interval = None
    columns = samples.get("columns")
    names = tuple(c for c in columns if isinstance(c, str)) if isinstance(columns, list) else ()
    return SampleInfo(
        worker=worker,
        sidecar=sidecar,
        interval_s=None if interval is None else float(interval),
        columns=names,
        unavailable_reason=_text(samples, "unavailable_reason"),
        io_unavailable_reason=_text(samples, "io_unavailable_reason"),
        phase_unavailable_reason=_text(samples, "phase_unavailable_reason"),
        cpu=worker_cpu(samples),
    )
