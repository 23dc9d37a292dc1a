"""Moving a node's run-directory files to the driver, in pieces: both ends, without Ray.

The node end (:func:`stream_files`) lists the regular files under the run directory's folders and
yields those that changed since the driver's last copy, cut into pieces of bounded size. The
driver end (:func:`receive`) writes each file to a temporary name beside its destination and
renames it when its last piece arrived, so a reader (the report, during the job) sees the old copy
or the new one, never half of one. Paths are checked piece by piece: a path from a node names a
file inside the run directory's folders or nothing, and no step follows a symbolic link.
``lineprofiler.integrations.ray`` carries the pieces through Ray's object store.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runfiles.layout import LIVE_SUFFIX
from ..runfiles.raycollect import RAY_DIR as RAY_DIR

#: How deep a run directory is walked (it holds workers/<host>/, metadata/<host>/, backend/).
MAX_DEPTH = 6
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
#: What a piece costs beside its data, counted against ``chunk_bytes`` (so that thousands of
#: small files do not make one huge object either).
_PIECE_OVERHEAD = 128
#: A piece's fourth field when its file could not be read to the end: drop what came of it.
ABORT = "abort"


def walk(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """``(relative path, lstat)`` of every regular file under ``root``'s folders: no symbolic
    links, no names starting with a dot (temporary files), nothing at the top level (each run
    directory's own ``metadata.json``) and nothing under ``ray/``."""
    stack: list[tuple[str, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in listed:
            if entry.name.startswith("."):
                continue
            rel = f"{prefix}{entry.name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if depth < MAX_DEPTH and not (depth == 0 and entry.name == RAY_DIR):
                    stack.append((entry.path, rel + "/", depth + 1))
            elif stat.S_ISREG(info.st_mode) and depth > 0:
                yield rel, info


def signature(info: os.stat_result, path: str | None = None) -> list[Any]:
    """What says a file changed: size, modification time and inode (a rename is a new inode).

    A live file (``.live``) is written through a shared mapping, whose stores the kernel does
    not stamp into the modification time: its signature adds a digest of its bytes.
    """
    mark: list[Any] = [info.st_size, info.st_mtime_ns, info.st_ino]
    if path is not None and path.endswith(LIVE_SUFFIX):
        mark.append(_digest(path))
    return mark


def _digest(path: str) -> str:
    digest = hashlib.blake2b(digest_size=16)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
    except OSError:
        return ""
    try:
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return digest.hexdigest()


def stream_files(root: str, known: Mapping[str, Any], chunk_bytes: int) -> Iterator[dict[str, Any]]:
    """The node end: ``{"kind": "pieces", "pieces": [[path, signature, offset, data, last], ...]}``
    holding at most ``chunk_bytes`` of data each, then ``{"kind": "done", "present": [every path],
    "errors": [...]}``. Files whose signature equals ``known[path]`` are not sent.

    A file is read from one open descriptor up to the size it had when opened: a sample file
    appended meanwhile arrives as a consistent prefix, and its new rows come with the next collect.
    """
    present: list[str] = []
    errors: list[str] = []
    pieces: list[list[Any]] = []
    pending = 0
    # Worker files before the sample files they describe: a copied sample file then holds at
    # least the rows its worker file counts.
    files = sorted(walk(root), key=lambda item: (not item[0].endswith(".json"), item[0]))
    for rel, info in files:
        present.append(rel)
        full = os.path.join(root, rel)
        if list(known.get(rel) or ()) == signature(info, full):
            continue
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC)
        except OSError as error:
            errors.append(f"{rel}: {error.strerror or error}")
            continue
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                continue
            mark, size, offset = signature(opened, full), opened.st_size, 0
            while True:
                if pending >= chunk_bytes:
                    yield {"kind": "pieces", "pieces": pieces}
                    pieces, pending = [], 0
                data = os.read(fd, min(chunk_bytes - pending, size - offset)) if offset < size else b""
                last = len(data) == 0 or offset + len(data) >= size
                pieces.append([rel, mark, offset, data, last])
                offset += len(data)
                pending += len(data) + _PIECE_OVERHEAD
                if last:
                    break
        except OSError as error:
            errors.append(f"{rel}: {error.strerror or error}")
            pieces.append([rel, [], 0, b"", ABORT])
        finally:
            os.close(fd)
    if pieces:
        yield {"kind": "pieces", "pieces": pieces}
    yield {"kind": "done", "present": present, "errors": errors}


class UnsafePath(Exception):
    """A path from a node that does not name a file inside the run directory's folders."""


def path_parts(rel: object) -> list[str]:
    """``rel``'s components, or UnsafePath: at least a folder and a name, no ``..``, no names
    starting with a dot, nothing absolute, nothing under ``ray/``."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel:
        raise UnsafePath(f"not a relative path: {rel!r}")
    parts = rel.split("/")
    if len(parts) < 2 or len(parts) > MAX_DEPTH + 1:
        raise UnsafePath(f"not inside a folder of the run directory: {rel!r}")
    for part in parts:
        if not part or part in (".", "..") or part.startswith("."):
            raise UnsafePath(f"not a safe path: {rel!r}")
    if parts[0] == RAY_DIR:
        raise UnsafePath(f"reserved for collect itself: {rel!r}")
    return parts


def open_folder(root_fd: int, parts: list[str], *, create: bool) -> int:
    """A descriptor of ``root/parts...``, made where missing when ``create``; each step refuses a
    symbolic link (ELOOP or ENOTDIR) instead of following it."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


class _Incoming:
    """One file arriving in pieces: a temporary file beside its destination, renamed at the end
    (a rename replaces a symbolic link at the destination rather than writing through it)."""

    def __init__(self, root_fd: int, rel: str, mark: list[int]) -> None:
        parts = path_parts(rel)
        self.rel, self.mark, self.name, self.written, self.fd = rel, mark, parts[-1], 0, -1
        self.dir_fd = open_folder(root_fd, parts[:-1], create=True)
        self.tmp = f".tmp_ray_{secrets.token_hex(6)}"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
            self.fd = os.open(self.tmp, flags, 0o644, dir_fd=self.dir_fd)
        except BaseException:
            os.close(self.dir_fd)
            raise

    def write(self, offset: int, data: bytes) -> None:
        if offset != self.written:
            raise UnsafePath(f"{self.rel}: a piece at byte {offset}, expected {self.written}")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.written += len(data)

    def finish(self) -> None:
        os.close(self.fd)
        self.fd = -1
        try:
            os.replace(self.tmp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        finally:
            os.close(self.dir_fd)

    def abort(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            os.unlink(self.tmp, dir_fd=self.dir_fd)
        except OSError:
            pass
        os.close(self.dir_fd)


def remove_copy(root_fd: int, rel: str) -> bool:
    """Remove a copy whose original is gone: a regular file only, reached without a link."""
    try:
        parts = path_parts(rel)
        fd = open_folder(root_fd, parts[:-1], create=False)
    except (UnsafePath, OSError):
        return False
    try:
        if not stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            return False
        os.unlink(parts[-1], dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@dataclass
class Received:
    """What :func:`receive` did."""

    files: int = 0
    bytes: int = 0
    removed: int = 0
    done: bool = False
    errors: list[str] = field(default_factory=list)


def receive(
    root: str | os.PathLike[str], items: Iterable[dict[str, Any]], copied: dict[str, list[int]]
) -> Received:
    """The driver end: write a node's stream (see :func:`stream_files`) under ``root``.

    ``copied`` maps each path copied from this node before to its signature; it is updated in
    place (new copies added, removed files dropped). A bad path or a broken piece costs its own
    file only, named in ``errors``; an exception from ``items`` (the node died) propagates, with
    every file finished before it in place and in ``copied``.
    """
    result = Received()
    root_fd = os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    current: _Incoming | None = None
    try:
        for item in items:
            kind = item.get("kind")
            if kind == "pieces":
                for rel, mark, offset, data, last in item["pieces"]:
                    try:
                        if current is not None and current.rel != rel:
                            current.abort()  # a file whose last piece never came
                            current = None
                        if last == ABORT:
                            if current is not None:
                                current.abort()
                                current = None
                            continue
                        if current is None:
                            if offset != 0:
                                continue  # the rest of a file whose start was refused
                            current = _Incoming(root_fd, rel, list(mark))
                        current.write(offset, data)
                        if last:
                            finished, current = current, None
                            finished.finish()
                            copied[rel] = finished.mark
                            result.files += 1
                            result.bytes += finished.written
                    except (UnsafePath, OSError) as error:
                        if current is not None:
                            current.abort()
                            current = None
                        result.errors.append(str(error) if isinstance(error, UnsafePath) else f"{rel}: {error}")
            elif kind == "done":
                result.errors.extend(str(e) for e in item.get("errors") or [])
                present = item.get("present")
                if present is not None:
                    keep = set(present)
                    for rel in [r for r in copied if r not in keep]:
                        if remove_copy(root_fd, rel):
                            result.removed += 1
                        del copied[rel]
                result.done = True
    finally:
        if current is not None:
            current.abort()
        os.close(root_fd)
    return result


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``{}`` where there is none (missing, unreadable, not an object)."""
    try:
        with open(path, "rb") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def write_json(folder: Path, name: str, document: dict[str, Any]) -> None:
    """``folder/name`` by temporary file and rename; ``folder`` is made, never written through a link."""
    from ..runfiles.workerfile import write_atomic

    if folder.is_symlink():
        raise OSError(f"{folder} is a symbolic link: not written through")
    folder.mkdir(exist_ok=True)
    write_atomic(folder / name, json.dumps(document, indent=1, sort_keys=True).encode("utf-8"))
