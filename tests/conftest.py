"""Shared pytest set-up: every test runs with a clean lineprofiler environment.

The report's worker-file builders (``tests/report/builders.py``) are loaded here, once, as
``lp_report_builders``, so that any test folder can build real run directories with them.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_BUILDERS = "lp_report_builders"
if _BUILDERS not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_BUILDERS, Path(__file__).parent / "report" / "builders.py")
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_BUILDERS] = _module
    _spec.loader.exec_module(_module)


@pytest.fixture(autouse=True)
def _clean_lineprofiler_env(monkeypatch):
    # A profiler enabled by one test exports LINEPROFILER_* for its children; do not let it
    # leak into the next test.
    for key in list(os.environ):
        if key.startswith("LINEPROFILER_"):
            monkeypatch.delenv(key, raising=False)
    yield
