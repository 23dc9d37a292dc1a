"""``RUN_DIR/ray/collect.json``: what the last Ray collect brought to the run directory, and what not.

The Ray integration's ``collect`` writes it on the driver after each collect (with
:func:`build_document`); the report reads it (with :func:`read_collect_file`) to name the nodes
whose files did not arrive and the actors that died without a final flush. Its ``caveats`` are
one line each, written for the report by the collect that knew why. No file means the run was
not collected from Ray nodes, which is the usual case.

This module imports nothing of Ray or of the profilers: the report reads it where only the files are.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from .reading import read_limited

#: ``run_dir/ray/``: collect's own files, never copied from a node nor written over from one.
RAY_DIR = "ray"
COLLECT_FILE = "collect.json"
KIND = "lineprofiler-ray-collect"
SCHEMA_VERSION = 1
#: Far above what collect writes (a few hundred bytes per node; 20 errors each at most).
MAX_FILE_BYTES = 16 << 20


class CollectFileError(InputError):
    """A collect file that cannot be used; ``str()`` is one line naming the file and why."""


@dataclass(frozen=True)
class CollectFile:
    """The parts of a collect file the report uses."""

    path: Path
    #: The run id the collect was for; None when Ray named none.
    run_id: str | None
    collected_unix_ns: int | None
    #: One line per problem: a node that left or could not be collected, files not copied, an
    #: actor that died without a final flush.
    caveats: tuple[str, ...]


def collect_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / RAY_DIR / COLLECT_FILE


def build_document(
    *,
    run_id: str | None,
    job_id: str | None,
    collected_unix_ns: int,
    nodes: list[dict[str, Any]],
    dead_actors: list[dict[str, Any]],
    caveats: list[str],
) -> dict[str, Any]:
    """The collect file's document (``nodes``: one object per node, as ``NodeResult.to_json``)."""
    return {
        "kind": KIND, "schema_version": SCHEMA_VERSION, "run_id": run_id, "job_id": job_id,
        "collected_unix_ns": collected_unix_ns, "nodes": nodes, "dead_actors": dead_actors, "caveats": caveats,
    }


def read_collect_file(run_dir: str | os.PathLike[str]) -> CollectFile | None:
    """The run directory's collect file, or None when it has none (not a Ray run).

    Raises :class:`CollectFileError` (one line) when the file is there but cannot be used:
    unreadable, not a regular file, too large, corrupt, or written by a newer lineprofiler.
    """
    path = collect_path(run_dir)
    try:
        raw = read_limited(path, MAX_FILE_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise CollectFileError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise CollectFileError(f"{path}: corrupt or truncated JSON ({error.__class__.__name__})") from None
    return _validated(path, document)


def _validated(path: Path, document: Any) -> CollectFile:
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise CollectFileError(f"{path}: not a Ray collect file (its kind is not {KIND!r})")
    version = document.get("schema_version")
    if type(version) is not int:
        raise CollectFileError(f"{path}: no schema_version")
    if version > SCHEMA_VERSION:
        raise CollectFileError(
            f"{path}: written by a newer lineprofiler (schema {version}; this one reads {SCHEMA_VERSION})"
        )
    run_id, collected, caveats = document.get("run_id"), document.get("collected_unix_ns"), document.get("caveats")
    if run_id is not None and not isinstance(run_id, str):
        raise CollectFileError(f"{path}: run_id is not text")
    if not isinstance(caveats, list) or not all(isinstance(line, str) for line in caveats):
        raise CollectFileError(f"{path}: caveats is not a list of lines")
    if type(collected) is not int:
        collected = None
    return CollectFile(path, run_id, collected, tuple(caveats))


__all__ = [
    "COLLECT_FILE",
    "KIND",
    "MAX_FILE_BYTES",
    "RAY_DIR",
    "SCHEMA_VERSION",
    "CollectFile",
    "CollectFileError",
    "build_document",
    "collect_path",
    "read_collect_file",
]
