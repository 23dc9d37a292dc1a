"""The benchmarks' own run builders, for tests that need a run of their shape: ``benchmarks/`` is
not a package, so a module is loaded from it by name."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (its sibling imports resolved from that folder)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
