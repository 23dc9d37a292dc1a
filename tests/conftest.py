"""Shared pytest set-up: every test runs with a clean lineprofiler environment."""

import os

import pytest


@pytest.fixture(autouse=True)
def _clean_lineprofiler_env(monkeypatch):
    # A profiler enabled by one test exports LINEPROFILER_* for its children; do not let it
    # leak into the next test.
    for key in list(os.environ):
        if key.startswith("LINEPROFILER_"):
            monkeypatch.delenv(key, raising=False)
    yield
