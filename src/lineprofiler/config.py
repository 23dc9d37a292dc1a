"""A project's ``[tool.lineprofiler]`` table: which files and functions the line profiler keeps.

The table lives in the ``pyproject.toml`` at the project's root and narrows what is profiled::

    [tool.lineprofiler]
    include = ["src/*"]          # only files whose path (relative to the root) matches one
    exclude = ["src/generated/*"]  # never these (exclude wins over include)
    functions = ["Model.*", "train_step"]  # only functions whose qualified name matches one

Each key is a list of ``fnmatch`` globs; a missing key narrows nothing. These are the names and
meanings of with-line-profiler 0.10.0, whose users' tables keep working:
:func:`~lineprofiler.accounting.legacy.start_profiling` reads the table, and
``LineProfiler(config=get_config(folder))`` applies it to any profiler. The table only ever
narrows: files outside the project folder, virtual environments and the other default
exclusions stay out whatever it says.

The file is read as a guest in the user's process must read it: a regular file of at most
:data:`MAX_PYPROJECT_BYTES`, never blocking (a ``pyproject.toml`` that is a FIFO, a device or a
link to one is not read). One that cannot be read or parsed (too large, nested too deep for
``tomllib``) is one problem and no table: never a hang or an exception in the program.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ._bounded_read import read_regular
from ._env_switch import env_says_on

__all__ = ["ENV_ENABLED", "ProfilerConfig", "find_project_root", "get_config", "read_tool_table"]

#: Turns :func:`~lineprofiler.start_profiling` on when set to anything but ``0``, ``false``,
#: ``no``, ``off`` (any case) or empty.
ENV_ENABLED = "LINEPROFILER_ENABLED"
_KEYS = ("include", "exclude", "functions")
#: A ``pyproject.toml`` larger than this is not read (the largest real ones are tens of KB).
MAX_PYPROJECT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ProfilerConfig:
    """What a ``[tool.lineprofiler]`` table says, and whether ``LINEPROFILER_ENABLED`` is on."""

    enabled: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    #: The table's problems (a key that is not a list of strings, an unreadable file): each one
    #: is a sentence, and the key it names narrows nothing.
    problems: tuple[str, ...] = ()

    def allows_path(self, relative_path: str) -> bool:
        """Whether a file, by its ``/``-separated path relative to the project root, is kept."""
        if any(fnmatch.fnmatchcase(relative_path, pattern) for pattern in self.exclude):
            return False
        return not self.include or any(fnmatch.fnmatchcase(relative_path, pattern) for pattern in self.include)

    def allows_function(self, qualified_name: str) -> bool:
        """Whether a function, by its ``__qualname__``, is kept."""
        return not self.functions or any(fnmatch.fnmatchcase(qualified_name, pattern) for pattern in self.functions)

    @property
    def narrows(self) -> bool:
        return bool(self.include or self.exclude or self.functions)


def git_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` that holds ``.git`` (a directory, or the file of
    a worktree or submodule), or None; no ``git`` process is run."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def find_project_root(start_path: str | os.PathLike[str] | None = None) -> Path:
    """The nearest folder at or above ``start_path`` (a file or a folder; default: the working
    directory) that holds ``.git``, else the folder of ``start_path`` itself."""
    here = Path(start_path if start_path is not None else os.getcwd()).resolve()
    start = here.parent if here.is_file() else here
    return git_root(start) or start


def read_tool_table(root: str | os.PathLike[str]) -> ProfilerConfig:
    """The ``[tool.lineprofiler]`` table of ``root/pyproject.toml`` (no file, no table: nothing
    narrowed), with ``enabled`` from the environment."""
    enabled = env_says_on(ENV_ENABLED, empty_is_on=False)
    path = Path(root) / "pyproject.toml"
    try:
        document = tomllib.loads(read_regular(path, MAX_PYPROJECT_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return ProfilerConfig(enabled=enabled)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        return ProfilerConfig(enabled=enabled, problems=(f"{path} could not be read: {why}; no table used",))
    except (RecursionError, MemoryError):
        return ProfilerConfig(enabled=enabled, problems=(f"{path} could not be read: nested too deep; no table used",))
    tool = document.get("tool")
    table = tool.get("lineprofiler") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return ProfilerConfig(enabled=enabled)
    values: dict[str, tuple[str, ...]] = {}
    problems = []
    for key in _KEYS:
        value = table.get(key, [])
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            values[key] = tuple(value)
        else:
            problems.append(f"[tool.lineprofiler] {key} in {path} is not a list of strings: it is ignored")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        problems.append(f"[tool.lineprofiler] in {path} has keys this version does not know: {', '.join(unknown)}")
    return ProfilerConfig(enabled=enabled, problems=tuple(problems), **values)


_cache: dict[Path, ProfilerConfig] = {}


def get_config(start_path: str | os.PathLike[str] | None = None) -> ProfilerConfig:
    """The table of the project holding ``start_path`` (see :func:`find_project_root`), read
    once per project root and process."""
    root = find_project_root(start_path)
    config = _cache.get(root)
    if config is None:
        config = _cache[root] = read_tool_table(root)
    return config
