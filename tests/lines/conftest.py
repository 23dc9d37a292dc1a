"""Fixtures for the line profiler's tests.

The workloads live in lp_workloads.py in this folder, which is the project folder most tests
profile; the folder is put on sys.path so tests can import it and lp_helpers by name.
"""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture
def here() -> Path:
    return HERE


@pytest.fixture
def test_clock():
    """The tracer's test-only clock: it moves only through advance(ns), and each callback of the
    tracer costs 1000 ns of it, so any callback time billed to a line shows up exactly."""
    from lineprofiler.lines._tracer_testing import fake_clock

    with fake_clock(callback_cost=1000) as advance:
        yield advance
