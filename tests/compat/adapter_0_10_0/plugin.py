"""The pytest plugin that runs 0.10.0's own test files against 0.11.0 (``-p adapter_0_10_0.plugin``).

It does three things, none of which touches what a test asserts:

- resolves the suite's imports of 0.10.0 names (:mod:`adapter_0_10_0.imports`);
- stands in for 0.10.0's ``tests/conftest.py``, which is harness and not a test: it imports
  0.10.0's private modules to undo leaked state, so it cannot load on 0.11.0. Its two per-test
  clean-ups are done here against 0.11.0: stop ambient line profiling (public API), empty
  ``lineprofiler.config``'s per-project cache of ``[tool.lineprofiler]`` (as 0.10.0's did) and close
  every accounting profiler a test left open (0.11.0's own registry of live profilers, as 0.10.0's
  conftest read its own): an open one keeps the process's signal handlers and fork hooks, and
  the failure would land in a later, unrelated test;
- bounds each test (``--compat-test-timeout``) and writes every test's outcome to
  ``--compat-results`` as JSON: ``outcomes``, node id to ``[outcome, first line of the error]``,
  and ``lineprofiler``, the file of the package the tests imported.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapter_0_10_0 import imports


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--compat-results", help="write each test's outcome here (JSON)")
    parser.addoption("--compat-test-timeout", type=float, default=120.0, help="seconds one test may take")


_OUTCOMES = pytest.StashKey[dict[str, list[str]]]()
_config: pytest.Config  # the run's, for the report hooks that are not given it


def pytest_configure(config: pytest.Config) -> None:
    global _config
    imports.install(str(config.rootpath))
    config.stash[_OUTCOMES] = {}
    _config = config


@pytest.fixture(autouse=True)
def _stop_what_a_test_left_running() -> Iterator[None]:
    yield
    from lineprofiler import config, stop_profiling
    from lineprofiler.accounting._process import PROCESS

    stop_profiling(print_stats=False)
    config._cache.clear()
    for profiler in reversed(list(PROCESS.active)):  # newest first: the order they chained in
        profiler.close()


class RanTooLong(Exception):
    """A 0.10.0 test ran past ``--compat-test-timeout`` (0.11.0 waited on something 0.10.0 did not)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    limit = item.config.getoption("--compat-test-timeout")

    def expire(signum: int, frame: Any) -> None:
        raise RanTooLong(f"the test ran past {limit:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _first_line(report: pytest.TestReport | pytest.CollectReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return (text.strip().splitlines() or [""])[0][:300]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test's outcome is its call's; "error" when its setup or teardown failed (a teardown
    failure overrides a pass), "skipped" when its setup skipped it."""
    if report.when != "call" and report.outcome == "passed":
        return
    if report.when == "call":
        outcome = report.outcome
    else:
        outcome = "skipped" if report.outcome == "skipped" else "error"
    outcomes = _config.stash[_OUTCOMES]
    if report.nodeid not in outcomes or outcomes[report.nodeid][0] == "passed":
        outcomes[report.nodeid] = [outcome, "" if outcome == "passed" else _first_line(report)]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _config.stash[_OUTCOMES][report.nodeid] = ["error", _first_line(report)]


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--compat-results")
    if path:
        import lineprofiler

        results = {"lineprofiler": lineprofiler.__file__, "outcomes": session.config.stash[_OUTCOMES]}
        Path(path).write_text(json.dumps(results, indent=1, sort_keys=True))
