"""MEMORY's trend is a real figure for a process that grows for seconds, not only minutes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from lineprofiler.report.compute.blocks import RenderOptions, resources
from lineprofiler.report.read.merge import load_run

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

GROWER = textwrap.dedent(
    """
    import sys, time
    from lineprofiler.accounting import Profiler

    held = []
    with Profiler(sys.argv[1], role="grower", enabled=True, sample_interval_s=0.2, snapshot_interval_s=1.0):
        start = time.monotonic()
        while time.monotonic() - start < 16.0:  # 10 s and more past its warm-up (its first third)
            # 1 MiB made resident page by page, with no temporary: a freed 1 MiB would stay
            # resident under AddressSanitizer's quarantine and double the slope.
            block = bytearray(1 << 20)
            for page in range(0, len(block), 4096):
                block[page] = 1
            held.append(block)
            time.sleep(0.05)
        elapsed = time.monotonic() - start
    print(len(held) * (1 << 20) / elapsed)
    """
)


def test_trend_of_a_steadily_growing_process(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", GROWER, str(run_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    grown_per_s = float(done.stdout.split()[-1])  # what the process allocated, bytes per second
    mem = resources.memory(load_run(run_dir), RenderOptions())
    assert mem is not None and [r.role for r in mem.roles] == ["grower"]
    trend = mem.roles[0].trend_bytes_per_s
    assert trend is not None, "trend n/a"
    assert 0.7 * grown_per_s < trend < 1.3 * grown_per_s, (trend, grown_per_s)
