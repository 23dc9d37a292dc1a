"""The metadata files' content, gathered from the live process: what it had available, why not,
and how its profiler was configured. Their schema, writing and reading are
:mod:`lineprofiler.runfiles.metadata`'s.

Every enabled profiler writes its own ``run_dir/metadata/<host>/m_<run>_<pid>_<uuid8>.json``
(named after its worker file) with its first snapshot after construction (the periodic one, a
``flush()``, or at close or a signal that ends the process, whichever comes first) and again at
close, and ``run_dir/metadata.json``, the run's summary, when that file does not already name
this run and attempt. Both are written whole to a temporary name and renamed, inside
``run_dir`` only. The report never needs either: they are for people and tools that ask why a
block is missing.
"""

from __future__ import annotations

import os
import sys
import time

from ..runfiles.metadata import (
    METADATA_FILE,
    METADATA_KIND,
    METADATA_VERSION,
    build_document,
    read_metadata,
    write_document,
)
from . import _phases, capabilities
from .identity import machine_name

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

    from ..runfiles.layout import RunPaths
    from ._options import Options
    from ._wiring import Wiring
    from .identity import Identity

__all__ = ["METADATA_FILE", "METADATA_KIND", "METADATA_VERSION", "metadata", "read_metadata", "write_metadata"]


def metadata(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The content of a metadata file: what was available to the writing process, and why not.

    ``extra`` adds keys (the profiler puts its backend window's description under
    ``"backend"``); it cannot replace ``kind``, ``schema_version`` or ``capabilities``.
    """
    return build_document(
        extra,
        written_unix_ns=time.time_ns(),
        host=machine_name(),
        pid=os.getpid(),
        python=sys.version.split()[0],
        platform=sys.platform,
        capabilities={name: cap.as_dict() for name, cap in capabilities.all_capabilities().items()},
    )


def write_metadata(
    run_dir: str | os.PathLike[str],
    extra: Mapping[str, Any] | None = None,
    *,
    relative: str | None = None,
    notes: list[str] | None = None,
) -> Path:
    """Write this process's :func:`metadata` to ``<run_dir>/metadata.json`` (or
    ``<run_dir>/<relative>``) atomically; return its path.

    ``relative`` is a path inside ``run_dir`` (the profiler's per-process files,
    ``metadata/<host>/m_<run>_<pid>_<uuid8>.json``); one that would leave ``run_dir`` is refused
    with ValueError. Nothing below ``run_dir`` is followed; a link replaced at the file's name is
    said in ``notes``. Raises OSError (or TypeError/ValueError for an ``extra`` that is not
    JSON): the profiler records the failure instead of letting it reach user code.
    """
    return write_document(run_dir, metadata(extra), relative=relative, notes=notes)


# ---------------------------------------------------------------------------------------------
# The profiler's own metadata files
# ---------------------------------------------------------------------------------------------


def describe(
    identity: Identity, run_dir: Path, worker_file: Path, options: Options, wiring: Wiring, final: bool
) -> dict[str, Any]:
    """The keys a profiler adds to its metadata files: its run, its arguments, and what its
    sync hook, annotator and backend window could do."""
    from . import gpu

    annotator = wiring.annotator
    if annotator is not None:
        annotate: dict[str, Any] = {"requested": True, **annotator.describe()}
        if annotate.get("nvtx") is None and not annotate.get("record_function"):
            annotate["unavailable_reason"] = (
                f"no NVTX ({capabilities.nvtx().unavailable_reason}) and no record_function (torch is not imported)"
            )
    else:
        annotate = {"requested": options.annotate}
    return {
        "run_id": identity.run_id,
        "attempt": identity.attempt,
        "role": identity.role,
        "worker_file": worker_file.relative_to(run_dir).as_posix(),
        "final": final,
        "profiler": {
            "measure_cpu": options.measure_cpu,
            "snapshot_interval_s": options.snapshot_interval_s,
            "annotate": options.annotate,
            "backend": options.backend,
            "backend_window": list(options.backend_window) if options.backend_window else None,
            "window_phase": options.window_phase,
        },
        "backend": wiring.window.describe() if wiring.window is not None else None,
        "sync": gpu.describe_sync(wiring.sync_fn),
        "annotate": annotate,
    }


def write_process_files(
    identity: Identity,
    paths: RunPaths,
    worker_file: Path,
    options: Options,
    wiring: Wiring,
    *,
    final: bool = False,
    notes: list[str] | None = None,
) -> None:
    """The profiler's own ``metadata/<host>/m_….json``, and ``run_dir/metadata.json``.

    Every process writes its own file (a unique name: no two processes ever write the same
    one). ``metadata.json`` is written by the first process of a run to get there: a process
    rewrites it only when it does not already name this run and attempt (a rerun into the same
    directory replaces it); two processes of a new run racing on it each leave a complete file
    of the run. Raises what writing raises; the profiler records it, and ``notes``.
    """
    run_dir = paths.path
    own = paths.metadata(worker_file)
    extra = describe(identity, run_dir, worker_file, options, wiring, final)
    write_metadata(run_dir, extra, relative=own.relative_to(run_dir).as_posix(), notes=notes)
    if not final:
        current = read_metadata(paths.run_metadata(), root=run_dir)
        if current is None or (current.get("run_id"), current.get("attempt")) != (identity.run_id, identity.attempt):
            write_metadata(run_dir, extra, notes=notes)


def write_recorded(
    identity: Identity,
    paths: RunPaths,
    worker_file: Path,
    options: Options,
    wiring: Wiring,
    record_error: Callable[[str], None],
    *,
    final: bool = False,
) -> None:
    """:func:`write_process_files` for a recording profiler: its failure and notes go to
    ``record_error`` (the worker file's ``errors``), never raised."""
    notes: list[str] = []
    # The profiler's own I/O, as the snapshot's is: never billed to a phase open around a
    # flush() that writes these files.
    token = _phases.own_io_begin()
    try:
        write_process_files(identity, paths, worker_file, options, wiring, final=final, notes=notes)
    except Exception as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        record_error(f"metadata: {type(error).__name__}: {reason}")
    finally:
        _phases.own_io_end(token)
    for note in notes:
        record_error(f"metadata: {note}")
