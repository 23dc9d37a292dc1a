"""Helpers for the tests: find lines by marker comments, read a function's results."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType


def marks(func) -> dict[str, int]:
    """Marker comments ``# @name`` in func's source -> absolute line numbers."""
    func = inspect.unwrap(func)
    lines, first = inspect.getsourcelines(func)
    out = {}
    for i, text in enumerate(lines):
        if "# @" in text:
            out[text.split("# @", 1)[1].split()[0]] = first + i
    return out


def func_stats(stats, func):
    """The FunctionStats of func, found by its key."""
    code = inspect.unwrap(func).__code__
    return stats[(code.co_filename, code.co_qualname, code.co_firstlineno)]


def hits(stats, func) -> dict[str, int]:
    """marker -> hits for every marked line of func (0 when the line has no entry)."""
    fs = func_stats(stats, func)
    return {name: (fs.lines[ln].hits if ln in fs.lines else 0) for name, ln in marks(func).items()}


def times(stats, func) -> dict[str, int]:
    """marker -> time_ns for every marked line of func."""
    fs = func_stats(stats, func)
    return {name: (fs.lines[ln].time_ns if ln in fs.lines else 0) for name, ln in marks(func).items()}


def load_module(path: Path, name: str) -> ModuleType:
    """Imports the file at path as module name (registered in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def write_module(folder: Path, name: str, source: str) -> ModuleType:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(source)
    return load_module(path, name)
