"""The accounting layer's test hooks live in its ``*_testing`` modules only: no production module
imports one, and none reads an environment variable meant for tests."""

from __future__ import annotations

import ast
from pathlib import Path

import lineprofiler.accounting

PACKAGE = Path(lineprofiler.accounting.__file__).resolve().parent
TESTING = "_testing"


def production_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if TESTING not in p.stem]


def imported_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names.update(alias.name for alias in node.names)
    return names


def test_the_testing_modules_exist():
    stems = {p.stem for p in PACKAGE.glob(f"*{TESTING}*.py")}
    assert {"_phases_testing", "_sampling_testing", "_capabilities_testing"} <= stems


def test_no_production_module_imports_a_testing_module():
    offenders = {
        path.name: sorted(name for name in imported_names(path) if TESTING in name)
        for path in production_modules()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_no_production_module_reads_a_test_environment_variable():
    assert [p.name for p in production_modules() if "LINEPROFILER_TEST_" in p.read_text(encoding="utf-8")] == []


def test_no_production_module_calls_the_c_modules_test_seam():
    assert [p.name for p in production_modules() if "_set_io_path" in p.read_text(encoding="utf-8")] == []
