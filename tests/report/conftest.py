"""Fixtures of the report's tests (the document builders are ``lp_report_builders``, loaded by
tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from lp_report_builders import real_worker_document


@pytest.fixture(scope="session")
def real_document(tmp_path_factory, nvml_stub) -> dict[str, Any]:
    """A worker file written by a real ``Profiler`` in a fresh interpreter, parsed."""
    return real_worker_document(tmp_path_factory.mktemp("real-document"), nvml_stub)
