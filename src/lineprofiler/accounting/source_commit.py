"""Which code a process ran: the git commit of its project and whether its working tree differed,
in the worker document's ``source`` (the report's header shows it).

A profile read against a tree that has since changed describes a program that no longer exists;
the commit and a dirty mark let the reader tell. Git is asked once per process tree: by the
first snapshot thread, after the late imports (a fork never waits for it), and a fork child
keeps its parent's answer. ``GIT_OPTIONAL_LOCKS=0`` keeps ``git status`` from rewriting the
index, so nothing is written outside the run directory, and git's I/O is the profiler's own:
reading its output is measured on this thread, and its own reads and writes, which the kernel
adds to this process's counters when it is reaped, are taken out (``_phases.reap_own_child``),
so no ``io=True`` phase is billed for them. Any failure (no repository, no git, a timeout)
becomes a reason, never an error.
"""

from __future__ import annotations

import os
import sys
import time

from . import _phases

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any

#: What asking git imports, first by the late imports (see ``_process.load_late_modules``):
#: never at a profiler's construction, never in a fork child.
LATE_IMPORTS = ("hashlib", "selectors", "subprocess", "lineprofiler.config")

GIT_TIMEOUT_S = 2.0
DIFF_SHA_CHARS = 8


#: What each project's answer was, in this process tree (a fork child inherits it).
_KNOWN: dict[str, dict[str, Any]] = {}


def _read_output(process: subprocess.Popen[bytes]) -> bytes | None:
    """The child's stdout until it closes it, or None past GIT_TIMEOUT_S (the child is killed)."""
    import selectors

    assert process.stdout is not None
    chunks: list[bytes] = []
    deadline = time.monotonic() + GIT_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                process.kill()
                return None
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _git(root: str, *arguments: str) -> str | None:
    """One git command's output in ``root``, or None on any failure."""
    import subprocess

    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    token = _phases.own_io_begin()
    try:
        process = subprocess.Popen(
            ["git", "-C", root, *arguments], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, env=env,
        )
    except (OSError, subprocess.SubprocessError):
        _phases.own_io_end(token)
        return None
    try:
        output = _read_output(process)
    finally:
        if process.stdout is not None:
            process.stdout.close()
        _phases.own_io_end(token)
        try:
            status, _counted = _phases.reap_own_child(process.pid)
            process.returncode = os.waitstatus_to_exitcode(status)
        except OSError:  # reaped by the program itself (an os.wait() of its own): no answer
            process.returncode = -1
    if output is None or process.returncode != 0:
        return None
    return output.decode("utf-8", "replace")


def describe_source(root: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"commit", "dirty_files", "diff_sha", "root", "unavailable_reason"}`` for the project at
    ``root``: ``dirty_files`` counts tracked files that differ from the commit (0: clean), and
    ``diff_sha`` tells two dirty trees of one commit apart."""
    import hashlib

    folder = os.fspath(root)
    source: dict[str, Any] = {
        "commit": None, "dirty_files": None, "diff_sha": None, "root": folder, "unavailable_reason": None,
    }
    head = _git(folder, "rev-parse", "HEAD")
    if head is None:
        source["unavailable_reason"] = f"{folder} is not in a git repository git can read"
        return source
    source["commit"] = head.strip()
    status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    if status is not None:
        source["dirty_files"] = len(status.splitlines())
    if source["dirty_files"]:
        diff = _git(folder, "diff", "HEAD")
        if diff is not None:
            source["diff_sha"] = hashlib.sha256(diff.encode("utf-8", "replace")).hexdigest()[:DIFF_SHA_CHARS]
    return source


def project_root() -> str:
    """The project a process runs: the git root above its main script, else above the working
    directory (else that folder), as the line layer finds it."""
    from ..config import find_project_root

    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(script, str) and os.path.isfile(script):
        return os.fspath(find_project_root(os.path.dirname(os.path.abspath(script))))
    return os.fspath(find_project_root())


def remember(root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """:func:`describe_source` of ``root`` (None: :func:`project_root`), asked once per process tree."""
    folder = os.fspath(root) if root is not None else project_root()
    known = _KNOWN.get(folder)
    if known is None:
        known = _KNOWN[folder] = describe_source(folder)
    return known


class SourceCommit:
    """A profiler attachment that adds ``document["source"]`` from the first snapshot after the
    start file on (the start file says nothing: asking git is not worth a slower start).
    ``root``: the project folder (None: :func:`project_root`, found then); ``given``: 0.10.0's
    ``Profiler(source=...)``, recorded as given instead of asking git."""

    __slots__ = ("_pid", "_root", "_source")

    def __init__(self, root: str | os.PathLike[str] | None = None, given: dict[str, Any] | None = None) -> None:
        self._root = root
        self._pid = os.getpid()
        self._source: dict[str, Any] | None = None if given is None else {**given, "given": True}

    def contribute(self, document: dict[str, Any]) -> None:
        times = document.get("times")
        if isinstance(times, dict) and times.get("status") == "started":
            return
        if self._source is None:
            self._source = remember(self._root) if os.getpid() == self._pid else self._inherited()
        document["source"] = self._source

    def _inherited(self) -> dict[str, Any]:
        """In a fork child: the parent's answer, never a git of its own. A child forked (from C,
        say) while the parent's thread was starting git could find a lock held by a thread it
        does not have, and hang in its first snapshot."""
        known = _KNOWN.get(os.fspath(self._root)) if self._root is not None else next(iter(_KNOWN.values()), None)
        if known is not None:
            return known
        return {
            "commit": None, "dirty_files": None, "diff_sha": None, "root": None,
            "unavailable_reason": "forked before its parent had asked git; a fork child does not ask",
        }
