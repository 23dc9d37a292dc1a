"""The off-CPU bars of DOMINANT PHASES and the CPU section at a laptop's half screen (800 px) and
a wide one (1400 px), in headless Chromium: nothing cut off, as for the rest of the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineprofiler.cli import main

from . import chromium
from .test_narrow_widths import CLIPPED, WIDTHS
from .test_off_cpu import cpu_run, split_run

EXECUTABLE = chromium.find_chromium()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None, reason="no Chromium on this machine (apt-get install chromium; CI installs it)"
)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("off_cpu")
    split_run(root / "run")
    cpu_run(root / "run")
    out = root / "report.html"
    assert main(["report", str(root / "run"), "--html", str(out)]) == 0
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_the_bars_and_the_cpu_section_fit(page, width):
    assert EXECUTABLE is not None
    with chromium.Browser(EXECUTABLE, width=width, height=900) as browser:
        browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        browser.open(page.as_uri())
        assert browser.evaluate("document.querySelectorAll('svg[data-chart=\"off-cpu\"]').length") == 2
        assert browser.evaluate("document.querySelector('section#cpu') !== null")
        clipped = browser.evaluate(CLIPPED)
        assert clipped == [], clipped
        assert browser.errors() == []
