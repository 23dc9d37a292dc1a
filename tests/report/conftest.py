"""The report's tests share ``builders.py``; load it under a name no other test folder uses."""

import importlib.util
import sys
from pathlib import Path

_NAME = "lp_report_builders"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("builders.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
