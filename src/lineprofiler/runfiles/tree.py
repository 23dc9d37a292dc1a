"""Walking a folder of run files (a run directory, a folder of line-stats files): the one walker
every lister of files below a folder uses.

Names starting with a dot are left out (a write's temporary file, :data:`.layout.TEMP_PREFIX`,
and whatever a user hid), and no link to a folder is entered: a walk stays inside the folder.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:  # cannot be told: what the caller makes of the entry decides
        return False


def walk(
    root: str | os.PathLike[str],
    max_depth: int,
    *,
    enter: Callable[[str, int], bool] | None = None,
) -> Iterator[tuple[str, os.DirEntry[str], int]]:
    """``(relative path, entry, depth)`` of everything under ``root`` that is not a folder (files,
    links, anything else), ``depth`` being that of the folder holding it (``root``: 0), in name
    order (a folder's entries come where its name sorts).

    A folder is entered when it lies at most ``max_depth`` below ``root`` and ``enter(relative
    path, depth of the folder holding it)`` (when given) says so. Raises OSError when ``root``
    itself cannot be listed; a folder below it that cannot be listed is left out.
    """
    yield from _walk(os.fspath(root), "", 0, max_depth, enter)


def _walk(
    folder: str, prefix: str, depth: int, max_depth: int, enter: Callable[[str, int], bool] | None
) -> Iterator[tuple[str, os.DirEntry[str], int]]:
    try:
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda e: e.name)
    except OSError:
        if depth == 0:
            raise
        return
    for entry in listed:
        if entry.name.startswith("."):
            continue
        rel = prefix + entry.name
        if not _is_folder(entry):
            yield rel, entry, depth
        elif depth < max_depth and (enter is None or enter(rel, depth)):
            yield from _walk(entry.path, rel + "/", depth + 1, max_depth, enter)
