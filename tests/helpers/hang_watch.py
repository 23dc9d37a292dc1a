"""A test that hangs fails alone, with its stacks, and the suite goes on.

Without this, one stuck test holds CI until its limit and the log never says which. The watch
runs in the xdist controller, which runs no test: a watchdog thread or timer inside the process
that runs the tests would change what they see (a second thread turns a fork into a crowded one,
an alarm takes SIGALRM from the tests that send it). Each worker notes the test it starts in a
file of its own; past ``LIMIT_S`` the controller sends that worker SIGABRT, on which pytest's
faulthandler prints every thread's stack, and xdist reports the test as failed ("worker crashed")
and starts a new worker for the rest. The note is there only while a test runs, so an idle worker
is never taken for a hung one. Without xdist (``-n 0``) nothing is watched.

A pytest plugin: tests/conftest.py registers it (``-p helpers.hang_watch`` elsewhere).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

#: Above every limit a test sets its own processes (600 s at most): only a hang no test
#: foresaw meets it, never a passing test on a slow machine. LP_TEST_HANG_LIMIT_S changes it (to
#: see the watch work).
LIMIT_S = float(os.environ.get("LP_TEST_HANG_LIMIT_S", "900"))
_FOLDER_VARIABLE = "LP_TEST_HANG_WATCH"
_POLL_S = 2.0
_FOLDER = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """In the xdist controller (before it starts its workers, who inherit the folder's name):
    start watching. Elsewhere, nothing."""
    distributed = bool(getattr(config.option, "numprocesses", None))
    if not distributed or os.environ.get("PYTEST_XDIST_WORKER") or _FOLDER_VARIABLE in os.environ:
        return
    folder = Path(tempfile.mkdtemp(prefix="lp-hang-watch-"))
    os.environ[_FOLDER_VARIABLE] = str(folder)
    config.stash[_FOLDER] = folder
    threading.Thread(target=_watch, args=(folder,), name="hang-watch", daemon=True).start()


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_FOLDER, None)  # only the controller that made it
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _note() -> Path | None:
    # By pid too: a pytest that a test starts inherits the worker's environment, and its notes
    # must not replace the worker's.
    folder, worker = os.environ.get(_FOLDER_VARIABLE), os.environ.get("PYTEST_XDIST_WORKER")
    return Path(folder) / f"{worker}-{os.getpid()}" if folder and worker else None


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    """In a worker: ``nodeid`` runs from now (its setup included)."""
    note = _note()
    if note is not None:
        try:
            note.write_text(f"{os.getpid()}\t{time.monotonic()}\t{nodeid}")
        except OSError:
            pass  # the watch is a net, never a reason for a test to fail


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    """In a worker: the test noted has ended (its teardown included)."""
    note = _note()
    if note is not None:
        try:
            note.unlink(missing_ok=True)
        except OSError:
            pass


def _watch(folder: Path) -> None:
    aborted: set[tuple[int, str]] = set()
    while True:
        time.sleep(_POLL_S)
        try:
            notes = list(folder.iterdir())
        except OSError:
            return  # the session has ended
        for note in notes:
            try:
                pid_text, started, nodeid = note.read_text().split("\t", 2)
                pid, ran = int(pid_text), time.monotonic() - float(started)
            except (OSError, ValueError):
                continue  # being written, or gone
            if ran < LIMIT_S or (pid, nodeid) in aborted:
                continue
            aborted.add((pid, nodeid))
            print(
                f"\n{nodeid} still running after {ran:.0f} s (worker {note.name}): its stacks follow",
                file=sys.stderr,
                flush=True,
            )
            try:
                os.kill(pid, signal.SIGABRT)
            except OSError:
                pass
