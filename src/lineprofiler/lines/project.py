"""Which code belongs to the project: the folder, its default exclusions, and include/exclude globs.

The C tracer asks once per code object (``ProjectFilter.__call__``); the answer depends on the
code's ``co_filename`` alone and is cached here per filename, so a file is resolved and matched
once per profiler.
"""

from __future__ import annotations

import fnmatch
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from types import CodeType

from ..config import ProfilerConfig, git_root
from .sourcefile import SourceStamps

__all__ = ["DEFAULT_EXCLUDES", "ProjectFilter", "find_project_root"]

#: Path components never profiled unless ``include=`` names them: version control, virtual
#: environments, installed packages, build output and tool caches. Any directory holding a
#: ``pyvenv.cfg`` (a virtual environment of any name) is excluded as well.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    "site-packages",
    "dist-packages",
    "__pypackages__",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    "node_modules",
)

# The profiler never profiles itself, wherever the project folder is.
_OWN_PACKAGE = str(Path(__file__).resolve().parent.parent)


def find_project_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The root of the git work tree holding ``start`` (default: the cwd), else ``start`` itself.

    A ``.git`` directory or file (worktrees and submodules have a file) marks the root; no
    ``git`` process is run.
    """
    here = Path(start if start is not None else os.getcwd()).resolve()
    return git_root(here) or here


def _as_patterns(value: str | Iterable[str] | None, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    try:
        patterns = tuple(value)
    except TypeError:
        raise TypeError(f"{name}= must be a glob string or an iterable of them, not {type(value).__name__}") from None
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"{name}= globs must be str, not {type(p).__name__}: {p!r}")
        if not p:
            raise ValueError(f"{name}= contains an empty glob")
    return patterns


def _matches(patterns: Iterable[str], rel: str, parts: tuple[str, ...]) -> bool:
    for pat in patterns:
        if "/" in pat:
            if fnmatch.fnmatchcase(rel, pat.rstrip("/")):
                return True
        elif any(fnmatch.fnmatchcase(part, pat) for part in parts):
            return True
    return False


class ProjectFilter:
    """Decides whether a code object's file is part of the project.

    A file is profiled when it lies inside ``folder`` (after resolving symlinks) and no exclusion
    matches it, or when an ``include`` glob matches it (include beats exclude). Globs follow
    ``fnmatch``: one without a ``/`` matches any single path component (``"build"`` excludes every
    ``build/`` folder, ``"test_*.py"`` every such file); one with a ``/`` is matched against the
    whole path relative to the folder, where ``*`` also crosses ``/`` (``"src/gen/*"``). Files
    outside the folder, and pseudo-files such as ``<string>`` or ``<stdin>``, are profiled only if
    an ``include`` glob matches their name as CPython reports it.

    ``config`` (a project's ``[tool.lineprofiler]`` table, :mod:`lineprofiler.config`) narrows
    that further: a file of the folder must also pass its include/exclude globs, and a code
    object its ``functions`` globs on the qualified name.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        include: str | Iterable[str] | None = None,
        exclude: str | Iterable[str] | None = None,
        config: ProfilerConfig | None = None,
    ) -> None:
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"project_folder must be a str or a path, not {type(folder).__name__}")
        path = Path(folder).expanduser()
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ValueError(f"project_folder does not exist: {os.fspath(folder)!r}") from None
        if not resolved.is_dir():
            raise ValueError(f"project_folder is not a folder: {os.fspath(folder)!r}")
        self.folder: Path = resolved
        self.include: tuple[str, ...] = _as_patterns(include, "include")
        self.exclude: tuple[str, ...] = _as_patterns(exclude, "exclude")
        if config is not None and not isinstance(config, ProfilerConfig):
            raise TypeError(f"config must be a lineprofiler.config.ProfilerConfig, not {type(config).__name__}")
        self.config = config if config is not None and config.narrows else None
        self._prefix = str(resolved).rstrip(os.sep) + os.sep
        self._by_filename: dict[str, bool] = {}
        #: Code objects profiled wherever their file is (``add_code``: kernprof's ``@profile``), by
        #: identity: equal code objects compile from the same text in any file. Kept alive, so
        #: an id is not reused.
        self._codes: dict[int, CodeType] = {}
        self._venv_dirs: dict[str, bool] = {}
        #: What each profiled file was when its code first ran: whether it changed since.
        self.stamps = SourceStamps()

    @property
    def _absolute_includes(self) -> tuple[str, ...]:
        # An absolute glob ("/tmp/ipykernel_*/*") names files by their full path, also inside
        # the folder.
        return tuple(g for g in self.include if g.startswith("/"))

    def __repr__(self) -> str:
        return f"ProjectFilter({str(self.folder)!r}, include={self.include!r}, exclude={self.exclude!r})"

    def __call__(self, code: CodeType) -> bool:
        """Called by the C tracer once per code object. Raises only an exception that is not
        the filter's: one a signal handler raised while the filter ran (the tracer hands it to
        the user's code); an odd filename that makes the filter itself fail is just not ours."""
        if self._codes.get(id(code)) is code:
            return True
        try:
            if self.config is not None and not self.config.allows_function(code.co_qualname):
                return False
            return self.is_project_file(code.co_filename)
        except Exception as first:
            try:
                self.is_project_file(code.co_filename)
            except Exception:
                return False  # the filter's own failure: it repeats
            raise first  # noqa: B904  (a signal handler's exception: the user's, as it was)

    def add_code(self, code: CodeType) -> None:
        """Profile ``code``, and the code nested in it (its comprehensions, lambdas, inner
        functions), whatever file it is in. Asked before the code first runs, as a decorator
        is: the tracer asks about each code object once."""
        pending = [code]
        while pending:
            current = pending.pop()
            if id(current) not in self._codes:
                self._codes[id(current)] = current
                self.stamps.note(current.co_filename)
                pending.extend(c for c in current.co_consts if isinstance(c, CodeType))

    def is_project_file(self, filename: str) -> bool:
        hit = self._by_filename.get(filename)
        if hit is None:
            hit = self._by_filename[filename] = self._decide(filename)
            if hit:
                self.stamps.note(filename)
        return hit

    def _decide(self, filename: str) -> bool:
        if not filename or (filename.startswith("<") and filename.endswith(">")):
            return _matches(self.include, filename, (filename,))
        real = os.path.realpath(filename)
        if real == _OWN_PACKAGE or real.startswith(_OWN_PACKAGE + os.sep):
            return False
        if not real.startswith(self._prefix):
            return _matches(self.include, filename, tuple(Path(filename).parts)) or _matches(
                self.include, real, tuple(Path(real).parts)
            )
        rel = real[len(self._prefix) :].replace(os.sep, "/")
        parts = tuple(rel.split("/"))
        if self.include and (_matches(self.include, rel, parts) or _matches(self._absolute_includes, real, ())):
            return True
        if _matches(DEFAULT_EXCLUDES, rel, parts[:-1]) or _matches(self.exclude, rel, parts):
            return False
        if self.config is not None and not self.config.allows_path(rel):
            return False
        return not self._in_venv(parts[:-1])

    def outside_files(self) -> list[str]:
        """The files decided "not ours" so far that are neither the standard library nor an
        installed package: where the user's own code ran if it was not in the folder."""
        skip = _library_prefixes()
        out = []
        for filename, ours in self._by_filename.items():
            if ours or filename.startswith("<frozen "):
                continue
            if not (filename.startswith("<") and filename.endswith(">")):
                real = os.path.realpath(filename)
                if real == _OWN_PACKAGE or real.startswith(_OWN_PACKAGE + os.sep):
                    continue
                if any(real.startswith(prefix) for prefix in skip):
                    continue
            out.append(filename)
        return sorted(out)

    def _in_venv(self, dirs: tuple[str, ...]) -> bool:
        """True when a folder between the project root and the file holds a ``pyvenv.cfg``."""
        current = self._prefix
        for part in dirs:
            current = current + part + os.sep
            known = self._venv_dirs.get(current)
            if known is None:
                known = self._venv_dirs[current] = os.path.isfile(current + "pyvenv.cfg")
            if known:
                return True
        return False


def _library_prefixes() -> tuple[str, ...]:
    """Folders of the standard library and installed packages, each ending in a separator."""
    found: set[str] = set()
    for scheme_key in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(scheme_key)
        if value:
            found.add(os.path.realpath(value))
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        found.add(os.path.realpath(os.path.join(prefix, "lib")))
    return tuple(p.rstrip(os.sep) + os.sep for p in found)
