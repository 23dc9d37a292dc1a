"""Run a function right after ``import torch`` has finished, for a profiler made before it.

A finder first on ``sys.meta_path`` answers only for ``torch``: it asks the finders after it
for the spec and wraps the loader, whose ``exec_module`` runs torch's ``__init__`` and then the
callback with the module. It takes itself off ``sys.meta_path`` when it has fired or is disarmed.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any


class _CallbackLoader:
    """torch's own loader, with the callback after ``exec_module``; anything else it is asked
    (``get_resource_reader``, ``is_package``) goes to that loader."""

    def __init__(self, loader: Any, done: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._done = done

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        try:
            self._done(module)
        except Exception:  # noqa: BLE001 - the program's import of torch never fails because of us
            pass


class TorchImportWatch:
    """``arm()`` puts the finder in place; ``callback(torch)`` runs once torch is imported."""

    def __init__(self, callback: Callable[[ModuleType], None]) -> None:
        self._callback = callback
        self._busy = False

    def arm(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def disarm(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch" or self._busy:
            return None
        self._busy = True
        try:
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy = False
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        self.disarm()
        spec.loader = _CallbackLoader(spec.loader, self._callback)
        return spec
