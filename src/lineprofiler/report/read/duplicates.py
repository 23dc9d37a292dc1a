"""Worker files that hold the same process: counted once, and named under CAVEATS.

A process writes one worker file, identified by its pid and a random uuid, so two files with the
same pair are copies: a run directory copied into itself, a host folder duplicated by hand or
by a sync tool. Counting each would double that process in every total; merge keeps one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...runfiles.layout import host_component
from .. import format as fmt
from ..wording import FINAL_STATUSES
from .run import DuplicateFiles, Worker


def drop_duplicates(workers: list[Worker]) -> tuple[list[Worker], list[DuplicateFiles]]:
    """``workers`` with one file per process (pid and uuid), and what was dropped.

    The file with the newest snapshot is kept (a final flush before a periodic one at the same
    time; then one in the folder named after its host, where the profiler writes it and its
    sample file; then the first path).
    """
    groups: dict[tuple[int, str], list[Worker]] = {}
    for worker in workers:
        groups.setdefault((worker.pid, worker.uuid), []).append(worker)
    if len(groups) == len(workers):
        return workers, []
    kept: list[Worker] = []
    duplicates: list[DuplicateFiles] = []
    for group in groups.values():
        if len(group) == 1:
            kept.append(group[0])
            continue
        group.sort(key=lambda w: str(w.path))
        best = max(
            group,
            key=lambda w: (w.last_flush_ns, w.status in FINAL_STATUSES, w.path.parent.name == host_component(w.host)),
        )
        kept.append(best)
        duplicates.append(DuplicateFiles(best, [w for w in group if w is not best]))
    return kept, duplicates


def _relative(path: Path, run_dir: Path) -> str:
    try:
        return str(path.relative_to(run_dir))
    except ValueError:
        return str(path)


def caveats(duplicates: Sequence[DuplicateFiles], run_dir: Path, limit: int) -> list[str]:
    """One CAVEATS line per process found in several files, the first ``limit`` of them."""
    lines = []
    for duplicate in duplicates[:limit]:
        kept = duplicate.kept
        copies = [_relative(w.path, run_dir) for w in duplicate.dropped]
        shown = ", ".join(copies[:3]) + (f" and {len(copies) - 3} more" if len(copies) > 3 else "")
        lines.append(
            f"{len(copies) + 1} worker files hold the same process ({kept.label}, uuid {fmt.printable(kept.uuid)}): "
            f"counted once, from {_relative(kept.path, run_dir)}; not from {shown}"
        )
    if len(duplicates) > limit:
        lines.append(
            f"... and {len(duplicates) - limit} more processes found in more than one worker file, each counted once"
        )
    return lines


__all__ = ["DuplicateFiles", "caveats", "drop_duplicates"]
