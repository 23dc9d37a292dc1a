"""The tracer's test hooks stay out of production: only tests reach them, through
``lineprofiler.lines._tracer_testing``."""

import ast
from pathlib import Path

import pytest

from lineprofiler.lines import _tracer
from lineprofiler.lines._tracer_testing import advance_clock, fake_clock, set_fake_clock

SRC = Path(__file__).resolve().parents[2] / "src" / "lineprofiler"
TESTING_MODULE = SRC / "lines" / "_tracer_testing.py"
HOOKS = {"_set_test_clock", "_advance_test_clock", "_set_foreign_limit", "_set_presize"}


def _uses(path: Path) -> set[str]:
    """The test hooks and testing modules that ``path`` names in an import or an attribute."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in HOOKS:
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(alias.name for alias in node.names)]
            found.update(n for n in names if "_testing" in n or n in HOOKS)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if "_testing" in alias.name)
    return found


def test_no_production_module_reaches_a_test_hook():
    users = {str(p.relative_to(SRC)): _uses(p) for p in SRC.rglob("*.py") if p != TESTING_MODULE}
    assert {name: uses for name, uses in users.items() if uses} == {}


def test_the_checker_sees_a_use():
    assert _uses(TESTING_MODULE) >= HOOKS


def test_the_fake_clock_moves_only_when_told():
    with fake_clock(callback_cost=5) as advance:
        assert advance is advance_clock
        assert advance(10) == 10
        assert advance(0) == 10
    with pytest.raises(ValueError):
        set_fake_clock(True, now=-1)
    assert _tracer.default_clock() in ("tsc", "monotonic")
