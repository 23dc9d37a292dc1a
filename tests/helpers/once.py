"""Something expensive made once for a whole test session, however many xdist workers run it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every worker of this session shares: pytest's temporary folder, or under xdist
    the folder above each worker's own (``pytest-N/popen-gwK``), which is still this session's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this session, filled by ``make(folder)`` by the first worker that
    asks; the others wait for it (a lock file) and reuse what it made."""
    shared = session_folder(tmp_path_factory)
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            folder.mkdir(exist_ok=True)
            make(folder)
            (folder / ".made").touch()
    return folder
