"""Moving a node's run-directory files to the driver, in pieces: both ends, without Ray.

The node end (:func:`stream_files`) lists the regular files under the run directory's folders and
yields those that changed since the driver's last copy, cut into pieces of bounded size. The
driver end (:func:`receive`) writes each file to a temporary name beside its destination and
renames it when its last piece arrived, so a reader (the report, during the job) sees the old copy
or the new one, never half of one. Paths are checked piece by piece: a path from a node names a
file inside the run directory's folders or nothing, and no step follows a symbolic link.
``lineprofiler.integrations.ray`` carries the pieces through Ray's object store.

A node's run directory may be the driver's own (one host, or a shared file system): the node
end then sends nothing (:func:`same_directory`), and the driver end never renames over, nor
removes, a file that is the node's file itself. A running process maps its live file: a copy
renamed over it would leave its numbers going to an unlinked inode.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runfiles import layout, tree
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


def walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """``(relative path, lstat)`` of every regular file under ``root``'s folders: no symbolic
    links, no names starting with a dot (temporary files), nothing at the top level (each run
    directory's own ``metadata.json``) and nothing under ``ray/``."""
    try:
        for rel, entry, depth in tree.walk(root, MAX_DEPTH, enter=_sent_folder):
            if depth == 0:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                yield rel, info
    except OSError:  # no run directory to send: the node's hello says so
        return


def _sent_folder(rel: str, depth: int) -> bool:
    return not (depth == 0 and rel == RAY_DIR)


def signature(info: os.stat_result, path: Path | None = None) -> list[Any]:
    """What says a file changed: size, modification time and inode (a rename is a new inode),
    and the device, which with the inode says which file it is (:func:`is_source`).

    A live file (``.live``) is written through a shared mapping, whose stores the kernel does
    not stamp into the modification time: its signature adds a digest of its bytes.
    """
    mark: list[Any] = [info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev]
    if path is not None and path.name.endswith(LIVE_SUFFIX):
        mark.append(_digest(path))
    return mark


def _digest(path: Path) -> str:
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


#: The driver's marker for one collect: ``ray/.here-<token>``, holding the token. The token is
#: new each time, so it is a name no node looked up before, which a shared file system cannot
#: answer from a cache.
MARKER_PREFIX = ".here-"
_TOKEN_DIGITS = frozenset("0123456789abcdef")


def marker_path(root: str | os.PathLike[str], token: str) -> Path:
    return Path(root) / RAY_DIR / (MARKER_PREFIX + token)


def same_directory(root: str | os.PathLike[str], probe: Mapping[str, Any]) -> bool:
    """True when ``root`` (a node's run directory) is the driver's: it has the driver's file
    identity (``probe["identity"]``, :func:`layout.file_identity`, which holds on one machine),
    or the driver's marker for this collect (``probe["token"]``), as a shared file system shows
    it to every machine. The marker is read without following a link: a node whose ``ray/`` is a
    link to the driver's is not the driver's run directory."""
    identity = probe.get("identity")
    if isinstance(identity, (list, tuple)) and len(identity) == 3:
        here = layout.file_identity(root)
        if here is not None and list(here) == list(identity):
            return True
    token = probe.get("token")
    if not isinstance(token, str) or not 16 <= len(token) <= 64 or not set(token) <= _TOKEN_DIGITS:
        return False
    try:
        found = layout.read_small(marker_path(root, token), root=root, limit=len(token))
    except (OSError, ValueError):
        return False
    return found == token.encode("ascii")


def stream_files(root: str | os.PathLike[str], known: Mapping[str, Any], chunk_bytes: int) -> Iterator[dict[str, Any]]:
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
    root = Path(root)
    files = sorted(walk(root), key=lambda item: (not item[0].endswith(".json"), item[0]))
    for rel, info in files:
        present.append(rel)
        full = root / rel
        if known.get(rel) == signature(info, full):
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


def is_source(dir_fd: int, name: str, mark: list[Any], same_machine: bool) -> bool:
    """True when the file at ``name`` (in ``dir_fd``) is the node's file itself, not a copy: the
    node runs on this machine, and the device and inode of its signature are this file's."""
    if not same_machine or len(mark) < 4 or type(mark[2]) is not int or type(mark[3]) is not int:
        return False
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == (mark[3], mark[2])


class _LeftInPlace(Exception):
    """The destination is the node's file itself: nothing to copy."""


class _Incoming:
    """One file arriving in pieces: a :class:`layout.Replacement` beside its destination, renamed
    at the end (a rename replaces a symbolic link at the destination rather than writing through
    it). Raises _LeftInPlace where the destination is the node's file itself."""

    def __init__(self, root_fd: int, rel: str, mark: list[Any], same_machine: bool) -> None:
        parts = path_parts(rel)
        self.rel, self.mark, self.name, self.written = rel, mark, parts[-1], 0
        self.same_machine = same_machine
        self.dir_fd = open_folder(root_fd, parts[:-1], create=True)
        if is_source(self.dir_fd, self.name, mark, same_machine):
            os.close(self.dir_fd)
            raise _LeftInPlace(rel)
        try:
            self.file = layout.Replacement(self.dir_fd, self.name)
        except BaseException:
            os.close(self.dir_fd)
            raise

    def write(self, offset: int, data: bytes) -> None:
        if offset != self.written:
            raise UnsafePath(f"{self.rel}: a piece at byte {offset}, expected {self.written}")
        self.file.write(data)
        self.written += len(data)

    def finish(self) -> bool:
        """Rename the copy into place; False (and no copy) where the node's file itself is there."""
        self.file.close()
        try:
            if is_source(self.dir_fd, self.name, self.mark, self.same_machine):
                self.file.discard()
                return False
            self.file.commit()
            return True
        finally:
            os.close(self.dir_fd)

    def abort(self) -> None:
        try:
            self.file.discard()
        except OSError:
            pass
        os.close(self.dir_fd)


def remove_copy(root_fd: int, rel: str, mark: list[Any], same_machine: bool) -> bool:
    """Remove a copy whose original is gone: a regular file only, reached without a link, and
    never the node's file itself (``mark``: the signature it was copied with)."""
    try:
        parts = path_parts(rel)
        fd = open_folder(root_fd, parts[:-1], create=False)
    except (UnsafePath, OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            return False
        if is_source(fd, parts[-1], mark, same_machine):
            return False
        os.unlink(parts[-1], dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class MalformedMessage(Exception):
    """A message from a node that is not one :func:`stream_files` yields."""


#: One piece as :func:`stream_files` makes it: path, signature, offset, data, last (or ABORT).
Piece = tuple[Any, list[Any], int, bytes, Any]


def _pieces(item: dict[str, Any]) -> list[Piece]:
    """A ``pieces`` message's pieces, checked for shape (paths are checked file by file)."""
    raw = item.get("pieces")
    if not isinstance(raw, list):
        raise MalformedMessage("a pieces message without a list of pieces")
    checked: list[Piece] = []
    for index, piece in enumerate(raw):
        if not isinstance(piece, (list, tuple)) or len(piece) != 5:
            raise MalformedMessage(f"piece {index} is not [path, signature, offset, data, last]")
        rel, mark, offset, data, last = piece
        if not isinstance(mark, (list, tuple)) or not all(isinstance(x, (int, str)) for x in mark):
            raise MalformedMessage(f"piece {index}: its signature is not a list of numbers and text")
        if type(offset) is not int or offset < 0:
            raise MalformedMessage(f"piece {index}: its offset is not a byte count")
        if not isinstance(data, (bytes, bytearray)):
            raise MalformedMessage(f"piece {index}: its data is not bytes")
        if not isinstance(last, bool) and last != ABORT:
            raise MalformedMessage(f"piece {index}: its last field is neither true, false nor {ABORT!r}")
        checked.append((rel, list(mark), offset, bytes(data), last))
    return checked


def _done(item: dict[str, Any]) -> tuple[list[str] | None, list[str]]:
    """A ``done`` message's paths present on the node (None: say nothing of removals) and errors."""
    present, errors = item.get("present"), item.get("errors")
    if present is not None and (not isinstance(present, list) or not all(isinstance(r, str) for r in present)):
        raise MalformedMessage("a done message whose present is not a list of paths")
    if errors is None:
        errors = []
    if not isinstance(errors, list) or not all(isinstance(e, str) for e in errors):
        raise MalformedMessage("a done message whose errors are not a list of lines")
    return present, [e[:300] for e in errors]


@dataclass
class Received:
    """What :func:`receive` did."""

    files: int = 0
    bytes: int = 0
    removed: int = 0
    #: Files left where they were: the destination was the node's file itself.
    in_place: int = 0
    done: bool = False
    errors: list[str] = field(default_factory=list)


def receive(
    root: str | os.PathLike[str],
    items: Iterable[Any],
    copied: dict[str, list[Any]],
    *,
    node_machine: str | None = None,
) -> Received:
    """The driver end: write a node's stream (see :func:`stream_files`) under ``root``.

    ``copied`` maps each path copied from this node before to its signature; it is updated in
    place (new copies added, removed files dropped). A bad path or a broken piece costs its own
    file only, and a malformed message itself only, each named in ``errors``; an exception from
    ``items`` (the node died) propagates, with every file finished before it in place and in
    ``copied``. ``node_machine``: the node's :func:`layout.machine_id`; where it is this
    machine's, a destination that is the node's file itself is left as it is, never renamed
    over nor removed (a running process maps its live file).
    """
    result = Received()
    same_machine = node_machine is not None and node_machine == layout.machine_id()
    root_fd = os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    current: _Incoming | None = None
    try:
        for number, item in enumerate(items):
            try:
                if not isinstance(item, dict):
                    raise MalformedMessage(f"a {type(item).__name__}, not a message")
                kind = item.get("kind")
                if kind == "pieces":
                    pieces = _pieces(item)
                elif kind == "done":
                    present, errors = _done(item)
                else:
                    raise MalformedMessage(f"a message of unknown kind {str(kind)[:40]!r}")
            except MalformedMessage as error:
                if current is not None:  # its next pieces may have been in this message
                    current.abort()
                    current = None
                result.errors.append(f"message {number} from the node ignored: {error}")
                continue
            if kind == "pieces":
                for rel, mark, offset, data, last in pieces:
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
                                continue  # the rest of a file whose start was refused or left in place
                            try:
                                current = _Incoming(root_fd, rel, mark, same_machine)
                            except _LeftInPlace:
                                copied[rel] = mark
                                result.in_place += 1
                                continue
                        current.write(offset, data)
                        if last:
                            finished, current = current, None
                            if finished.finish():
                                result.files += 1
                                result.bytes += finished.written
                            else:
                                result.in_place += 1
                            copied[rel] = finished.mark
                    except (UnsafePath, OSError, ValueError) as error:
                        if current is not None:
                            current.abort()
                            current = None
                        result.errors.append(str(error) if isinstance(error, UnsafePath) else f"{rel}: {error}")
            else:
                result.errors.extend(errors)
                if present is not None:
                    keep = set(present)
                    for rel in [r for r in copied if r not in keep]:
                        mark = copied[rel]
                        if remove_copy(root_fd, rel, mark if isinstance(mark, list) else [], same_machine):
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
    if folder.is_symlink():
        raise OSError(f"{folder} is a symbolic link: not written through")
    folder.mkdir(exist_ok=True)
    layout.write_atomic(folder / name, json.dumps(document, indent=1, sort_keys=True).encode("utf-8"))
