"""Where every file of a run directory goes, and how it is written: decided here and nowhere else.

A run directory holds::

    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.json      one worker file per process
    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.samples   its resource samples (the sidecar)
    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.live      its live numbers (a shared mapping)
    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.timeline  its phase occupancy (same format)
    <run_dir>/workers/<host>/w_<run>_<pid>_<uuid8>.sampled_lines  its line_sampling section so far
    <run_dir>/metadata/<host>/m_<run>_<pid>_<uuid8>.json     what that process had available
    <run_dir>/metadata.json                                  the same, for the run
    <run_dir>/backend/<tool>_<host>_<pid>.json               a heavy profiler window's artifact
    <run_dir>/lines/<host>/l_<run>_<pid>_<uuid8>.json         a ``backend="lines"`` window's line stats

``<run>`` is the run id, made safe as one path component (:func:`sanitize_component`), and
``<host>`` the host name, escaped so that different hosts never share a folder
(:func:`escape_component`); ``<uuid8>`` is 8 hex digits, new for every process (a fork child
gets its own). Every file is written whole to a temporary name and renamed into place
(:func:`write_atomic`), so a reader sees a previous complete file or the new one, never half of
one; the sidecar is the exception, appended to in place by its writer (:func:`open_owned`).
Nothing below the run directory is ever followed: see "Writing inside a run directory" below.

This module imports nothing of the profilers: the report reads with the same names.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import NoReturn

WORKERS_DIR = "workers"
METADATA_DIR = "metadata"
METADATA_FILE = "metadata.json"
BACKEND_DIR = "backend"
LINES_DIR = "lines"
WORKER_PREFIX = "w_"
METADATA_PREFIX = "m_"
LINES_PREFIX = "l_"
JSON_SUFFIX = ".json"
SAMPLES_SUFFIX = ".samples"
LIVE_SUFFIX = ".live"
TIMELINE_SUFFIX = ".timeline"
SAMPLED_LINES_SUFFIX = ".sampled_lines"
#: A temporary file of an atomic write in progress; readers skip these names.
TEMP_PREFIX = ".tmp_"

#: What a sanitized component keeps; every run of anything else becomes one ``_``. A character
#: loop rather than a regular expression: every process sanitizes its role while it starts, and
#: importing ``re`` costs milliseconds there.
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def sanitize_component(text: str, fallback: str = "unknown") -> str:
    """Make ``text`` safe as one path component: no separators, no dots-only, bounded length.

    Lossy (every run of other characters becomes one ``_``): used for run ids, whose file-name
    form only has to be stable.
    """
    kept: list[str] = []
    in_run = False  # inside a run of unsafe characters, already written as one "_"
    for char in str(text):
        if char in _SAFE:
            kept.append(char)
            in_run = False
        elif not in_run:
            kept.append("_")
            in_run = True
    cleaned = "".join(kept).strip("._")[:64]
    return cleaned or fallback


#: Longest component :func:`escape_component` makes, in UTF-8 bytes (file systems allow 255).
_MAX_COMPONENT_BYTES = 128


def _escaped(char: str, first: bool) -> str:
    if (char.isalnum() and char.isprintable()) or char in "-_" or (char == "." and not first):
        return char
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def escape_component(text: str, fallback: str = "unknown") -> str:
    """``text`` as one path component that no other text maps to.

    Every Unicode letter and digit is kept, and ``-``, ``_`` and ``.`` (but a leading one);
    anything else (a separator, a space, ``%``, a control or an unpaired surrogate) is written
    as ``%XX`` per UTF-8 byte, so two different texts never share a folder: ``gpu:0`` is
    ``gpu%3A0`` and ``gpu/0`` is ``gpu%2F0``. A result longer than 128 bytes keeps its start and
    ends in ``~`` and 16 hex digits of the text's SHA-256 (``~`` is escaped everywhere else).
    ``""`` is ``fallback``.
    """
    if not text:
        return fallback
    name = "".join(_escaped(char, i == 0) for i, char in enumerate(text))
    if len(name.encode("utf-8")) <= _MAX_COMPONENT_BYTES:
        return name
    import hashlib  # here: only a name of over 128 bytes needs it

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    kept, size = [], 0
    for i, char in enumerate(text):
        part = _escaped(char, i == 0)
        size += len(part.encode("utf-8"))
        if size > _MAX_COMPONENT_BYTES - 17:
            break
        kept.append(part)
    return "".join(kept) + "~" + digest


def host_component(host: str) -> str:
    """The folder name of ``host`` under ``workers/`` and ``metadata/`` (:func:`escape_component`)."""
    return escape_component(host, "unknown-host")


def worker_file_name(run_id: str, pid: int, uuid8: str) -> str:
    """``w_<run>_<pid>_<uuid8>.json``."""
    return f"{WORKER_PREFIX}{sanitize_component(run_id)}_{int(pid)}_{uuid8}{JSON_SUFFIX}"


def _path(text: str | os.PathLike[str]) -> Path:
    """``Path(text)``, importing pathlib only here: it costs a process milliseconds to import,
    so a profiler builds the paths it needs while it starts as text (:func:`worker_file`,
    :func:`beside`) and pathlib is loaded when a Path is first asked for."""
    from pathlib import Path

    return Path(text)


def worker_dir(run_dir: str | os.PathLike[str], host: str) -> Path:
    """``<run_dir>/workers/<host>``."""
    return _path(run_dir) / WORKERS_DIR / host_component(host)


def worker_file(run_dir: str | os.PathLike[str], host: str, run_id: str, pid: int, uuid8: str) -> str:
    """The worker file of one process, as text (:func:`worker_path` is the same as a Path)."""
    return os.path.join(os.fspath(run_dir), WORKERS_DIR, host_component(host), worker_file_name(run_id, pid, uuid8))


def worker_path(run_dir: str | os.PathLike[str], host: str, run_id: str, pid: int, uuid8: str) -> Path:
    """The worker file of one process."""
    return _path(worker_file(run_dir, host, run_id, pid, uuid8))


def beside(worker_file: str, suffix: str) -> str:
    """The file beside a worker file (text) whose name ends in ``suffix`` instead of ``.json``:
    :data:`LIVE_SUFFIX` gives :func:`live_path` as text."""
    return worker_file.removesuffix(JSON_SUFFIX) + suffix


def sidecar_name(worker_file_name: str) -> str:
    """``w_run_12_abcd1234.json`` -> ``w_run_12_abcd1234.samples``."""
    stem = worker_file_name.removesuffix(JSON_SUFFIX)
    return stem + SAMPLES_SUFFIX


def timeline_path(worker_file: str | os.PathLike[str]) -> Path:
    """The phase-occupancy file beside a worker file: ``w_run_12_abcd1234.timeline``."""
    worker_file = _path(worker_file)
    return worker_file.with_name(worker_file.name.removesuffix(JSON_SUFFIX) + TIMELINE_SUFFIX)


def sampled_lines_path(worker_file: str | os.PathLike[str]) -> Path:
    """The live copy of a worker file's ``line_sampling`` section: ``w_run_12_abcd1234.sampled_lines``."""
    worker_file = _path(worker_file)
    return worker_file.with_name(worker_file.name.removesuffix(JSON_SUFFIX) + SAMPLED_LINES_SUFFIX)


def sidecar_path(worker_file: str | os.PathLike[str]) -> Path:
    """The sample file beside a worker file."""
    worker_file = _path(worker_file)
    return worker_file.with_name(sidecar_name(worker_file.name))


def live_path(worker_file: str | os.PathLike[str]) -> Path:
    """The live file beside a worker file: ``w_run_12_abcd1234.live``."""
    worker_file = _path(worker_file)
    return worker_file.with_name(worker_file.name.removesuffix(JSON_SUFFIX) + LIVE_SUFFIX)


def create_live(path: str | os.PathLike[str], *, root: str | os.PathLike[str]) -> int:
    """A new file at ``path`` opened for reading and writing (a shared mapping needs both),
    made with ``O_EXCL | O_NOFOLLOW`` below ``root`` as :func:`open_owned` makes files; anything
    already at the name is refused (removed, UnsafePathError)."""
    root_path, parts, make_root = _locate(path, root)
    dir_fd = _open_dir(root_path, parts[:-1], create=True, make_root=make_root)
    try:
        try:
            return os.open(parts[-1], (_NEW_FILE_FLAGS & ~os.O_WRONLY) | os.O_RDWR, FILE_MODE, dir_fd=dir_fd)
        except FileExistsError:
            _refuse(dir_fd, parts[-1], _shown(root_path, parts))
    finally:
        os.close(dir_fd)


def metadata_path(run_dir: str | os.PathLike[str], worker_file: str | os.PathLike[str]) -> Path:
    """``<run_dir>/metadata/<host>/m_<run>_<pid>_<uuid8>.json``, named after the worker file."""
    worker_file = _path(worker_file)
    name = METADATA_PREFIX + worker_file.name.removeprefix(WORKER_PREFIX)
    return _path(run_dir) / METADATA_DIR / worker_file.parent.name / name


def run_metadata_path(run_dir: str | os.PathLike[str]) -> Path:
    """``<run_dir>/metadata.json``."""
    return _path(run_dir) / METADATA_FILE


def lines_path(run_dir: str | os.PathLike[str], worker_file: str | os.PathLike[str]) -> Path:
    """``<run_dir>/lines/<host>/l_<run>_<pid>_<uuid8>.json``: the line stats of a
    ``backend="lines"`` window, named after the worker file of the same process (same run,
    pid and uuid), so the report pairs the two by name."""
    worker_file = _path(worker_file)
    name = LINES_PREFIX + worker_file.name.removeprefix(WORKER_PREFIX)
    return _path(run_dir) / LINES_DIR / worker_file.parent.name / name


def artifact_name(tool: str, host: str, pid: int) -> str:
    """``<tool>_<host>_<pid>.json``: one artifact per process, so processes never collide."""
    return f"{tool}_{host_component(host)}_{int(pid)}{JSON_SUFFIX}"


def artifact_path(run_dir: str | os.PathLike[str], tool: str, host: str, pid: int) -> Path:
    """``<run_dir>/backend/<tool>_<host>_<pid>.json``."""
    return _path(run_dir) / BACKEND_DIR / artifact_name(tool, host, pid)


class RunPaths:
    """One run directory, and the name of every file a process writes in it: a profiler makes
    one and hands it to each of its parts (snapshots, sampler, windows, metadata), which ask it
    for their paths rather than join their own. Text where a profiler starts (pathlib is loaded
    when a Path is first asked for); the names are this module's functions'."""

    __slots__ = ("root",)

    root: str

    def __init__(self, root: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "root", os.fspath(root))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("RunPaths is read-only")

    def __repr__(self) -> str:
        return f"RunPaths({self.root!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunPaths) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    @classmethod
    def of(cls, run_dir: RunPaths | str | os.PathLike[str]) -> RunPaths:
        """``run_dir`` itself when it is one, else the run directory it names (as given)."""
        return run_dir if isinstance(run_dir, RunPaths) else cls(run_dir)

    @property
    def path(self) -> Path:
        return _path(self.root)

    def worker_file(self, host: str, run_id: str, pid: int, uuid8: str) -> str:
        return worker_file(self.root, host, run_id, pid, uuid8)

    def live(self, worker_file: str) -> str:
        return beside(worker_file, LIVE_SUFFIX)

    def sidecar(self, worker_file: str | os.PathLike[str]) -> Path:
        return sidecar_path(worker_file)

    def began_beside(self, worker_file: str | os.PathLike[str]) -> tuple[Path, ...]:
        """The files a process begins beside its worker file: samples, live, timeline, sampled lines."""
        worker = _path(worker_file)
        return sidecar_path(worker), live_path(worker), timeline_path(worker), sampled_lines_path(worker)

    def metadata(self, worker_file: str | os.PathLike[str]) -> Path:
        return metadata_path(self.root, worker_file)

    def run_metadata(self) -> Path:
        return run_metadata_path(self.root)

    def lines(self, worker_file: str | os.PathLike[str]) -> Path:
        return lines_path(self.root, worker_file)

    def artifact(self, tool: str, host: str, pid: int) -> Path:
        return artifact_path(self.root, tool, host, pid)


# ---------------------------------------------------------------------------------------------
# Telling one file from another, across the processes of a machine
# ---------------------------------------------------------------------------------------------

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def machine_id() -> str | None:
    """This machine's boot id: processes that read the same one run on one kernel, where a
    file's ``(st_dev, st_ino)`` names the same file for all of them (containers included: a
    folder bind-mounted into two keeps its device and inode). None where it cannot be read."""
    try:
        with open(_BOOT_ID, "rb") as handle:
            text = handle.read(64).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text or None


def file_identity(path: str | os.PathLike[str]) -> tuple[str, int, int] | None:
    """``(machine_id, st_dev, st_ino)`` of ``path``: equal for two paths, read by processes
    anywhere, only when they name one file (or folder) on one machine. A link at ``path`` is
    followed (a run directory may be a link to scratch storage). None where it cannot be said."""
    machine = machine_id()
    if machine is None:
        return None
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return machine, info.st_dev, info.st_ino


# ---------------------------------------------------------------------------------------------
# Writing inside a run directory without ever leaving it
# ---------------------------------------------------------------------------------------------
#
# Every file is reached from a descriptor of its root (the run directory): each folder below it
# is opened with O_NOFOLLOW | O_DIRECTORY (and made with mkdirat where missing), and files are
# created with O_NOFOLLOW | O_EXCL or written to a new temporary name and renamed over, so a
# symbolic link planted anywhere under the root is never followed, whoever planted it. The
# root's own path is the caller's and is taken as given (a run_dir that is itself a link to
# scratch storage is fine).

#: New files: readable by the colleagues who share a run directory, writable by their owner
#: (the process's umask applies). New folders get 0o777 minus the umask.
FILE_MODE = 0o644
_DIR_MODE = 0o777
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePathError(OSError):
    """A path under the run directory that the profiler refuses to write through: a symbolic
    link, or a file that is not the one it created. ``strerror`` says which and what was done."""


def _locate(path: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> tuple[str, tuple[str, ...], bool]:
    """(root, the path's components below it, whether the root may be created). String work
    only: this runs at every snapshot."""
    path_text = os.path.normpath(os.fspath(path))
    if root is None:
        folder, name = os.path.split(path_text)
        return folder or ".", (name,), False
    root_text = os.path.normpath(os.fspath(root))
    prefix = root_text if root_text.endswith(os.sep) else root_text + os.sep
    if not path_text.startswith(prefix):
        raise ValueError(f"{path_text} is not inside {root_text}")
    parts = tuple(path_text[len(prefix) :].split(os.sep))
    if not parts or any(part in ("", ".", "..") or "\0" in part for part in parts):
        raise ValueError(f"{path_text} is not a file inside {root_text}")
    return root_text, parts, True


def _random_hex(n_bytes: int) -> str:
    """``2 * n_bytes`` random hex digits from the OS (what ``secrets.token_hex`` returns, without
    importing :mod:`secrets` and :mod:`random` with it)."""
    return os.urandom(n_bytes).hex()


def _shown(root: str, parts: Sequence[str]) -> str:
    return os.path.join(root, *parts)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_root(root: str, create: bool) -> int:
    if create:
        os.makedirs(root, exist_ok=True)
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _open_dir(root: str, parts: Sequence[str], *, create: bool, make_root: bool) -> int:
    """A descriptor of ``root/parts...``, each part opened without following a link."""
    fd = _open_root(root, make_root and create)
    try:
        for depth, name in enumerate(parts):
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, _DIR_MODE, dir_fd=fd)
                except FileExistsError:
                    pass  # made by another process meanwhile: open what is there, as above
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                    where = _shown(root, parts[: depth + 1])
                    raise UnsafePathError(errno.ELOOP, f"{where} is a symbolic link: refused, never followed") from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def ensure_dir(folder: str | os.PathLike[str], *, root: str | os.PathLike[str]) -> None:
    """Make ``folder`` (inside ``root``) and the folders between, refusing symbolic links."""
    root_path, parts, _ = _locate(os.path.join(folder, "_"), root)
    os.close(_open_dir(root_path, parts[:-1], create=True, make_root=True))


def _refuse(dir_fd: int, name: str, where: str, what: str | None = None) -> NoReturn:
    """Refuse what is at a file's own name (a symbolic link, or ``what``): remove that name (a
    link's target, or the file behind another hard link, is untouched), so the next write of
    the file begins a new one, and raise UnsafePathError."""
    if what is None:
        what = "was a symbolic link" if _is_link(dir_fd, name) else "was not a file this process wrote"
    try:
        os.unlink(name, dir_fd=dir_fd)
        done = "removed"
    except FileNotFoundError:
        done = "gone"
    except OSError as error:
        done = f"could not be removed ({error.strerror or error})"
    raise UnsafePathError(errno.ELOOP, f"{where} {what}: {done}, never written through")


def _note_link(dir_fd: int, root: str, parts: Sequence[str], notes: list[str] | None) -> None:
    if notes is not None and _is_link(dir_fd, parts[-1]):
        notes.append(f"{_shown(root, parts)} was a symbolic link: replaced, never followed")


class Replacement:
    """A file written whole under a new temporary name in the folder ``dir_fd`` and then renamed
    over ``name`` (:meth:`commit`), or removed (:meth:`discard`): a reader of ``name`` sees the
    old file or the new one, never half of one. The temporary name starts with
    :data:`TEMP_PREFIX`, which readers skip, and keeps ``name``'s extension; the file is created
    with ``mode`` less the umask, never through a link (``O_EXCL | O_NOFOLLOW``)."""

    __slots__ = ("dir_fd", "name", "tmp", "fd")

    def __init__(self, dir_fd: int, name: str, *, mode: int = FILE_MODE) -> None:
        self.dir_fd = dir_fd
        self.name = name
        self.tmp = f"{TEMP_PREFIX}{_random_hex(6)}{os.path.splitext(name)[1]}"
        self.fd = os.open(self.tmp, _NEW_FILE_FLAGS, mode, dir_fd=dir_fd)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def close(self, *, fsync: bool = False) -> None:
        """Close the temporary file (synced to the disk first with ``fsync``); again is nothing."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def commit(self) -> None:
        """Close the file and rename it to ``name``: rename() replaces whatever is at the name,
        a symbolic link included, without following it."""
        self.close()
        os.rename(self.tmp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)

    def discard(self) -> None:
        """Close and remove the temporary file. Raises OSError when it cannot be removed."""
        self.close()
        os.unlink(self.tmp, dir_fd=self.dir_fd)


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | Iterable[bytes],
    *,
    root: str | os.PathLike[str] | None = None,
    fsync: bool = False,
    notes: list[str] | None = None,
    mode: int = FILE_MODE,
) -> None:
    """Write ``data`` to ``path`` through a new temporary file in the same folder and a rename
    (a :class:`Replacement`), so a reader sees the old file or the new one, never half of one.
    ``data`` may come in parts (an iterable of bytes), each written as it comes.

    ``root``: the folder nothing below which is followed (the run directory; made if missing,
    and the folders between too). Without it, ``path``'s own folder, which must exist. A link
    at ``path`` itself is replaced by the rename, never followed, and said in ``notes``. The
    file is created with ``mode`` (:data:`FILE_MODE`) less the umask. Raises OSError
    (UnsafePathError for a link among the folders).
    """
    root_path, parts, make_root = _locate(path, root)
    dir_fd = _open_dir(root_path, parts[:-1], create=True, make_root=make_root)
    try:
        _note_link(dir_fd, root_path, parts, notes)
        replacement = Replacement(dir_fd, parts[-1], mode=mode)
        try:
            for part in (data,) if isinstance(data, bytes) else data:
                replacement.write(part)
            replacement.close(fsync=fsync)
            replacement.commit()
        except BaseException:
            try:
                replacement.discard()
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)


def open_owned(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, inode: tuple[int, int] | None = None
) -> tuple[int, tuple[int, int]]:
    """Open for writing the file this process made at ``path`` (its ``(st_dev, st_ino)`` is
    ``inode``), or make it (``O_EXCL``) when ``inode`` is None or the file is gone.

    Returns ``(fd, inode)``: an inode other than the one passed is a new, empty file. Anything
    else at the name (a symbolic link, a FIFO, a file this process did not make: a hard link
    to a file outside the run directory, say) is never written to: the name is removed, so the
    next call begins a new file, and UnsafePathError raised. ``root`` as for :func:`write_atomic`.
    """
    root_path, parts, make_root = _locate(path, root)
    dir_fd = _open_dir(root_path, parts[:-1], create=True, make_root=make_root)
    try:
        name = parts[-1]
        if inode is not None:
            try:
                fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            except FileNotFoundError:
                fd = -1
            except OSError as error:  # ELOOP: a link; ENXIO: a FIFO nobody reads; EISDIR
                if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR) or _is_link(dir_fd, name):
                    _refuse(dir_fd, name, _shown(root_path, parts))
                raise
            if fd >= 0:
                info = os.fstat(fd)
                if stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) == inode:
                    return fd, inode
                os.close(fd)
                _refuse(dir_fd, name, _shown(root_path, parts), "was replaced by a file this process did not write")
        try:
            fd = os.open(name, _NEW_FILE_FLAGS, FILE_MODE, dir_fd=dir_fd)
        except FileExistsError:
            _refuse(dir_fd, name, _shown(root_path, parts))
        info = os.fstat(fd)
        return fd, (info.st_dev, info.st_ino)
    finally:
        os.close(dir_fd)


def remove(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> None:
    """Remove the file at ``path`` (a link itself, never its target); folders are not made."""
    root_path, parts, make_root = _locate(path, root)
    dir_fd = _open_dir(root_path, parts[:-1], create=False, make_root=False)
    try:
        os.unlink(parts[-1], dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def read_small(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, opened without following a link
    or blocking on a FIFO. Raises OSError (UnsafePathError for a link or a special file, or
    one larger than ``limit``)."""
    root_path, parts, _ = _locate(path, root)
    where = _shown(root_path, parts)
    dir_fd = _open_dir(root_path, parts[:-1], create=False, make_root=False)
    try:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UnsafePathError(errno.ELOOP, f"{where} is a symbolic link: not read") from None
            raise
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise UnsafePathError(errno.EINVAL, f"{where} is not a regular file of at most {limit} bytes: not read")
        return handle.read(limit + 1)[:limit]


def staged(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, notes: list[str] | None = None
) -> AbstractContextManager[str]:
    """A path to hand a writer that only takes a file name (torch's and VizTracer's exports).

    The name lies in a fresh private folder (mode 0o700) beside ``path``, reached through that
    folder's descriptor, so nothing swapped in under the run directory meanwhile can redirect
    the writer; when the block ends without an exception, the file it wrote there is renamed to
    ``path``. The folder is removed either way. ``root`` and ``notes`` as for :func:`write_atomic`.
    """
    import contextlib  # here: only a backend window's export needs it

    return contextlib.contextmanager(_staged)(path, root=root, notes=notes)


def _staged(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, notes: list[str] | None = None
) -> Iterator[str]:
    root_path, parts, make_root = _locate(path, root)
    dir_fd = _open_dir(root_path, parts[:-1], create=True, make_root=make_root)
    name = parts[-1]
    stage = f"{TEMP_PREFIX}{_random_hex(6)}"
    stage_fd = -1
    try:
        os.mkdir(stage, 0o700, dir_fd=dir_fd)
        stage_fd = os.open(stage, _DIR_FLAGS, dir_fd=dir_fd)
        via_fd = f"/proc/self/fd/{stage_fd}"
        folder = via_fd if os.path.isdir(via_fd) else _shown(root_path, (*parts[:-1], stage))
        yield os.path.join(folder, name)
        info = os.stat(name, dir_fd=stage_fd, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(errno.EINVAL, f"{_shown(root_path, parts)}: the writer left no regular file")
        _note_link(dir_fd, root_path, parts, notes)
        os.rename(name, name, src_dir_fd=stage_fd, dst_dir_fd=dir_fd)
    finally:
        if stage_fd >= 0:
            for entry in os.listdir(stage_fd):
                try:
                    os.unlink(entry, dir_fd=stage_fd)
                except OSError:
                    pass
            os.close(stage_fd)
        try:
            os.rmdir(stage, dir_fd=dir_fd)
        except OSError:
            pass
        os.close(dir_fd)
