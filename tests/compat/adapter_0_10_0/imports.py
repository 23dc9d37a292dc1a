"""What 0.10.0's test files import, resolved against 0.11.0.

Every 0.10.0 test file imports some of 0.10.0's internals at its top (``lineprofiler.accounting
.snapshot``, ``.tracealign``, ...), so without help none of its tests would even be collected,
including the many that then use only the public API. For an import made by a file of that suite
(and only for those: 0.11.0's own imports see the real modules), a name resolves, in order:

1. to 0.11.0's own object of that name, when it has one: same name, judged by its own behaviour;
2. to 0.11.0's object the migration guide names as its new place (``RENAMED``, each with its row);
3. to an ``Unimportable``: the import succeeds, and the first *use* of the name raises the error
   0.11.0 raised for it (0.11.0's own one-line message where it has one). A test that never uses
   it runs; one that does fails with that error. Nothing is faked: no stand-in ever returns a value.

A missing module becomes a ``ModuleUnimportable``, which takes writes: 0.10.0's
``test_profiler.py`` patches its engine and backend selectors (``lineprofiler.profiler.
_default_engine``) in a fixture of every test, and those land on the stand-in, which nothing of
0.11.0 reads. Each of its tests so runs once per 0.10.0 mode, each time on 0.11.0's one engine.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from typing import Any

#: 0.10.0's name (module, attribute) to 0.11.0's object ("module:attribute"), each as
#: docs/migrating-from-0.10.md says. Only names that 0.11.0 lacks under the old name are looked up here.
RENAMED: dict[tuple[str, str], str] = {
    # "The command line": the `lineprofiler` script (0.10.0's lineprofiler.accounting.cli:main).
    ("lineprofiler.accounting.cli", "main"): "lineprofiler.cli:main",
    # "The package": lineprofiler.__all__ (0.10.0 defined them in lineprofiler.profiler).
    ("lineprofiler.profiler", "LineProfiler"): "lineprofiler:LineProfiler",
    ("lineprofiler.profiler", "FunctionStats"): "lineprofiler:FunctionStats",
    ("lineprofiler.profiler", "LineStats"): "lineprofiler:LineStats",
    ("lineprofiler.profiler", "start_profiling"): "lineprofiler:start_profiling",
    ("lineprofiler.profiler", "stop_profiling"): "lineprofiler:stop_profiling",
    # "Environment variables": LINEPROFILER_PROFILE and LINEPROFILER_RUN_DIR, the same names.
    ("lineprofiler.accounting.profiler", "ENV_ENABLE"): "lineprofiler.accounting.identity:ENV_PROFILE",
    ("lineprofiler.accounting.profiler", "ENV_RUN_DIR"): "lineprofiler.accounting.identity:ENV_RUN_DIR",
    # "Profiler methods": .io_counters() returns 0.10.0's IoSnapshot.
    ("lineprofiler.accounting.sampler", "IoSnapshot"): "lineprofiler.accounting._reads:IoSnapshot",
}

_ADAPTED_PACKAGES = ("lineprofiler", "with_line_profiler")
#: 0.10.0's modules (its sdist's lineprofiler/): only these may resolve to a ModuleUnimportable,
#: so that a missing *name* of a package is never mistaken for a module.
MODULES_0_10_0 = frozenset(
    ["lineprofiler." + name for name in ("config", "engine_lp", "html_source", "htmldoc", "profiler")]
    + [
        "lineprofiler.accounting." + name
        for name in (
            "analysis", "autotrace", "backend", "capabilities", "cli", "compare", "findings", "hardware",
            "histogram", "htmlreport", "htmltrace", "identity", "phasetree", "profiler", "provenance",
            "report", "sampler", "selfio", "snapshot", "trace", "tracealign",
        )
    ]
)


class Unimportable:
    """A name 0.11.0 could not give: any use raises the error its import raised."""

    __slots__ = ("_error_type", "_error_args", "_where")

    def __init__(self, where: str, error: BaseException) -> None:
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_error_type", type(error))
        object.__setattr__(self, "_error_args", error.args)

    def _raise(self, *_: Any, **__: Any) -> Any:
        raise object.__getattribute__(self, "_error_type")(*object.__getattribute__(self, "_error_args"))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):  # introspection (pytest, inspect) asks freely
            raise AttributeError(name)
        self._raise()

    def __repr__(self) -> str:
        return f"<0.10.0's {object.__getattribute__(self, '_where')}: not importable from 0.11.0>"

    __hash__ = object.__hash__
    __setattr__ = __call__ = __iter__ = __len__ = __bool__ = __int__ = __index__ = __float__ = _raise
    __getitem__ = __contains__ = __enter__ = __mro_entries__ = __eq__ = __lt__ = __le__ = _raise
    __gt__ = __ge__ = __add__ = __sub__ = __mul__ = __truediv__ = __or__ = __and__ = _raise


class ModuleUnimportable(types.ModuleType):
    """A module 0.11.0 does not have: its names are 0.11.0's renamed ones, or ``Unimportable``."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(name)
        self.__dict__["_error"] = error

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return renamed_or_unimportable(self.__name__, name, self.__dict__["_error"])


def renamed_or_unimportable(module: str, name: str, error: BaseException) -> Any:
    target = RENAMED.get((module, name))
    if target is None:
        return Unimportable(f"{module}.{name}", error)
    target_module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(target_module), attribute)


class ModuleView:
    """What ``from MODULE import ...`` in a 0.10.0 test sees: MODULE itself, with a missing name
    resolved as the module docstring says. Writes go to the real module (``monkeypatch``)."""

    __slots__ = ("_module",)

    def __init__(self, module: types.ModuleType) -> None:
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name: str) -> Any:
        module = object.__getattribute__(self, "_module")
        try:
            return getattr(module, name)
        except (AttributeError, ImportError) as missing:
            error: BaseException = missing
        try:  # a submodule 0.11.0 has but has not imported yet, or one of 0.10.0's
            return importlib.import_module(f"{module.__name__}.{name}")
        except ImportError:
            pass
        return renamed_or_unimportable(module.__name__, name, error)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_module"), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, "_module"), name)


def _adapted(name: str) -> bool:
    return name.split(".", 1)[0] in _ADAPTED_PACKAGES


class _MissingModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: a ``lineprofiler`` module no finder found, asked for by a 0.10.0
    test, becomes a ``ModuleUnimportable`` carrying the ``ModuleNotFoundError`` it would have raised."""

    def __init__(self, suite_dir: str) -> None:
        self.suite_dir = suite_dir

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in MODULES_0_10_0 or not _asked_by_suite(self.suite_dir):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return ModuleUnimportable(spec.name, ModuleNotFoundError(f"No module named {spec.name!r}", name=spec.name))

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _asked_by_suite(suite_dir: str) -> bool:
    """Whether the nearest caller outside the import system is a file of the 0.10.0 suite."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith("<frozen importlib") or filename in _IMPORT_SYSTEM_FILES):
            return filename.startswith(suite_dir)
        frame = frame.f_back  # type: ignore[assignment]
    return False


_IMPORT_SYSTEM_FILES = {importlib.__file__, __file__}


def install(suite_dir: str) -> None:
    """Resolve the imports of the test files under ``suite_dir`` as the module docstring says."""
    suite_dir = os.path.join(os.path.realpath(suite_dir), "")
    sys.meta_path.append(_MissingModuleFinder(suite_dir))
    real_import = builtins.__import__

    def adapted_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        module = real_import(name, globals, locals, fromlist, level)
        asker = (globals or {}).get("__file__") or ""
        if fromlist and level == 0 and _adapted(name) and os.path.realpath(asker).startswith(suite_dir):
            return ModuleView(module)
        return module

    builtins.__import__ = adapted_import
