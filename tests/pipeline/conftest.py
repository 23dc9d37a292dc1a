"""The pipeline tests share ``helpers.py``; load it under a name no other test folder uses."""

import importlib.util
import sys
from pathlib import Path

import pytest

_NAME = "lp_pipeline_helpers"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("helpers.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """The profiler's run directory for one test."""
    return tmp_path / "profile"
