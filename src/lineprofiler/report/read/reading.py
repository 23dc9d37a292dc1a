"""One worker file read into a :class:`~.run.Worker`: validated, with its numbers from the live
file beside it when that is newer (:mod:`.live`), its sampled lines from their live copy when
that is newer (:mod:`.sampled_live_copy`), and without its bulk samples.

This is all the reading merge does per file, in a pool's process or in its own; it imports no C
module, so the report runs on a machine that only has the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...runfiles import workerfile
from . import live, sampled_live_copy
from .run import UnreadableFile, Worker, WorkerDocument, int_field

#: The snapshot interval assumed for a file that does not say.
DEFAULT_INTERVAL_S = 5.0
#: Files larger than this keep their inline ``samples`` on disk, not in memory: reading
#: ``document["samples"]`` re-reads the file. Phase trees are far smaller than this.
LARGE_FILE_BYTES = 1 << 20


def worker_from_document(path: Path, document: dict[str, Any], *, no_samples: bool = False, size: int = 0) -> Worker:
    """A :class:`Worker` from a document :func:`~..workerfile.validate` accepted.

    ``size`` is the file's size: a file larger than :data:`LARGE_FILE_BYTES` (or any file when
    ``no_samples``) keeps its inline samples on disk rather than in memory.
    """
    identity = document["identity"]
    times = document["times"]
    snapshot = document["snapshot"]
    # Top-level phases, with the time so far of entries still open at the last snapshot.
    busy = sum(p["wall_ns"] + int_field(p, "open_ns") for p in document["phases"] if "/" not in p["path"])
    interval = snapshot.get("interval_s")
    samples = document.get("samples")
    samples_on_disk = samples is workerfile.SAMPLES_SKIPPED or (
        samples is not None and (no_samples or size > LARGE_FILE_BYTES)
    )
    if samples_on_disk:
        # Keep the phase tree, not the bulk: the samples are re-read from the file if a block asks.
        document = {k: v for k, v in document.items() if k != "samples"}
        document["samples"] = None
    return Worker(
        path=path,
        document=WorkerDocument(document, path, samples_on_disk),
        run_id=identity["run_id"],
        attempt=identity.get("attempt", 0),
        role=identity["role"],
        host=identity["host"],
        pid=identity["pid"],
        uuid=identity["uuid"],
        rank=identity.get("rank"),
        local_rank=identity.get("local_rank"),
        job_id=identity.get("job_id"),
        launcher=identity.get("launcher"),
        start_ns=times["start_unix_ns"],
        last_flush_ns=times["last_flush_unix_ns"],
        end_ns=times.get("end_unix_ns"),
        elapsed_ns=times["elapsed_ns"],
        status=times["status"],
        signal=times.get("signal"),
        interval_s=float(interval) if interval else DEFAULT_INTERVAL_S,
        busy_ns=busy,
        run_id_source=source if isinstance(source := identity.get("run_id_source"), str) else None,
    )


def read_worker(task: tuple[Path, bool]) -> Worker | UnreadableFile:
    """One worker file, read and validated: ``task`` is ``(path, no_samples)``. What
    :func:`~.merge.load_run` does for each file, in a pool's process or in its own."""
    path, no_samples = task
    try:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        # Merge never needs the samples: stop before them where the layout allows.
        document = workerfile.read_worker_file(path, skip_samples=True)
        numbers = live.prefer_live_numbers(path, document)
        sampled_lines_from = sampled_live_copy.prefer_live_copy(path, numbers.document)
        worker = worker_from_document(path, numbers.document, no_samples=no_samples, size=size)
        worker.numbers_from = numbers.source
        worker.live_notes = numbers.notes
        worker.alive_until_ns = numbers.alive_until_ns
        worker.before_first_snapshot = numbers.before_first_snapshot
        worker.lifetime_measured = numbers.lifetime_measured
        worker.sampled_lines_from = sampled_lines_from
        return worker
    except workerfile.WorkerFileError as error:
        return UnreadableFile(path, str(error))
