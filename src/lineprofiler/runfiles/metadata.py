"""The metadata files: one schema, built, written and read in this module alone.

A run directory holds ``<run_dir>/metadata.json`` (the run's) and one
``<run_dir>/metadata/<host>/m_<run>_<pid>_<uuid8>.json`` per process (named after its worker
file; see :mod:`.layout`). Each says what was available to the process that wrote it and why
not; the report never needs them. What goes in them is gathered by the live process
(:mod:`lineprofiler.accounting.metadata`).

Schema version 1 (a JSON object, written with sorted keys and an indent of 2):

``kind`` (``"lineprofiler-metadata"``), ``schema_version`` (int), ``written_unix_ns`` (int),
``host`` (str), ``pid`` (int), ``python`` (str), ``platform`` (str), ``capabilities`` (object:
per optional piece ``available`` bool and, when it is not, ``unavailable_reason`` str, with
``version`` and details), and the writer's own keys (a profiler's: ``run_id``, ``attempt``,
``role``, ``worker_file``, ``final``, ``profiler``, ``backend``, ``sync``, ``annotate``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import layout, workerfile

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["METADATA_FILE", "METADATA_KIND", "METADATA_VERSION", "build_document", "read_metadata", "write_document"]

METADATA_FILE = layout.METADATA_FILE
METADATA_KIND = "lineprofiler-metadata"
METADATA_VERSION = 1
_READ_LIMIT = 1 << 20


def build_document(
    extra: Mapping[str, Any] | None,
    *,
    written_unix_ns: int,
    host: str,
    pid: int,
    python: str,
    platform: str,
    capabilities: Mapping[str, Any],
) -> dict[str, Any]:
    """A metadata document: the writer's ``extra`` keys, then the schema's, which ``extra``
    cannot replace."""
    document: dict[str, Any] = {}
    for key, value in (extra or {}).items():
        document[str(key)] = value
    document.update(
        {
            "kind": METADATA_KIND,
            "schema_version": METADATA_VERSION,
            "written_unix_ns": written_unix_ns,
            "host": host,
            "pid": pid,
            "python": python,
            "platform": platform,
            "capabilities": dict(capabilities),
        }
    )
    return document


def write_document(
    run_dir: str | os.PathLike[str],
    document: Mapping[str, Any],
    *,
    relative: str | None = None,
    notes: list[str] | None = None,
) -> Path:
    """Write ``document`` to ``<run_dir>/metadata.json`` (or ``<run_dir>/<relative>``)
    atomically; return its path.

    ``relative`` is a path inside ``run_dir`` (a process's own file,
    ``metadata/<host>/m_<run>_<pid>_<uuid8>.json``); one that would leave ``run_dir`` is refused
    with ValueError. Nothing below ``run_dir`` is followed; a link replaced at the file's name is
    said in ``notes``. Raises OSError, or TypeError/ValueError for a document that is not JSON.
    """
    run_dir = Path(run_dir)
    target = layout.run_metadata_path(run_dir) if relative is None else run_dir / relative
    if relative is not None:
        parts = Path(relative).parts
        if not parts or Path(relative).is_absolute() or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"metadata path must stay inside the run directory, not {relative!r}")
    data = workerfile.encode_json(document, indent=2, sort_keys=True)
    layout.write_atomic(target, data + b"\n", root=run_dir, notes=notes)
    return target


def read_metadata(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """A metadata file's content, or None when it is missing, unreadable or not ours (a symbolic
    link, a FIFO or a file over 1 MiB among them: nothing below ``root`` is followed)."""
    try:
        document = json.loads(layout.read_small(path, root=root, limit=_READ_LIMIT))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("kind") != METADATA_KIND:
        return None
    return document
