"""MEMORY's "all processes" sums PSS: fork children that only read their parent's pages share
them, and RSS would count them once per process."""

from __future__ import annotations

import os
import time

import pytest

from lineprofiler.accounting import Profiler
from lineprofiler.report import format as fmt
from lineprofiler.report.compute.blocks import RenderOptions, resources
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import text_blocks

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="needs smaps_rollup")

MB = 10**6
SIZE = 200 * MB
CHILDREN = 4


def _read_all(block: bytearray) -> int:
    """Touch every page for reading only (no copy-on-write)."""
    return sum(block[i] for i in range(0, len(block), 4096))


def test_forked_readers_are_not_counted_once_each(tmp_path):
    run_dir = tmp_path / "run"
    with Profiler(run_dir, role="trainer", enabled=True, sample_interval_s=0.2, snapshot_interval_s=0.5):
        block = bytearray(b"\x01" * SIZE)  # written: resident and private to the parent
        time.sleep(0.5)
        pids = []
        for _ in range(CHILDREN):
            pid = os.fork()
            if pid == 0:  # the child: never returns into pytest
                code = 1
                try:
                    deadline = time.monotonic() + 3.0
                    while time.monotonic() < deadline:
                        _read_all(block)
                        time.sleep(0.1)
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        for pid in pids:
            assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    run = load_run(run_dir)
    mem = resources.memory(run, RenderOptions())
    assert mem is not None and len(mem.members) == 1 + CHILDREN
    # Each process maps all 200 MB: its RSS says so.
    assert all(m.peak_bytes >= SIZE for m in mem.members), [m.peak_bytes for m in mem.members]
    # Summed, the pages count once: 200 MB plus five interpreters, not five times 200 MB.
    # (How close to 200 MB depends on when each process's PSS was read, which its read budget
    # spaces out on a loaded machine: the bound is RSS's sum, which counts the pages five times.)
    assert mem.total_bins is not None
    total = max(mem.total_bins)
    rss_sum = sum(m.peak_bytes for m in mem.members)
    assert SIZE * 0.9 < total < 0.6 * rss_sum, (total, rss_sum)
    line = next(x for x in text_blocks.render_memory(run, RenderOptions()) if x.startswith("all processes"))
    assert fmt.size(total) in line  # "1.1 GB" once the sum passes 1000 MB, as on a loaded machine


def _rows(sampler) -> list[dict[str, int]]:
    from array import array

    data = array("q", sampler.drain())
    n = len(sampler.columns)
    return [dict(zip(sampler.columns, data[i : i + n], strict=True)) for i in range(0, len(data), n)]


def test_pss_column_is_read_and_not_measured_without_smaps_rollup(tmp_path):
    from lineprofiler.accounting import _sampler

    with_pss = _sampler.Sampler(interval_s=0.02, nvml=False)
    without = _sampler.Sampler(interval_s=0.02, nvml=False, smaps_path=tmp_path / "no_smaps_rollup")
    for s in (with_pss, without):
        s.start()
    time.sleep(0.3)
    for s in (with_pss, without):
        s.stop()
    rows = _rows(with_pss)
    assert rows[0]["pss_bytes"] > 0  # the first row reads it
    assert all(r["pss_bytes"] <= r["rss_bytes"] for r in rows if r["pss_bytes"] >= 0)
    assert with_pss.stats()["pss_reads"] >= 1 and with_pss.stats()["pss_reason"] is None
    rows = _rows(without)
    assert rows and all(r["pss_bytes"] == -1 and r["rss_bytes"] > 0 for r in rows)
    stats = without.stats()
    assert stats["failed_pss"] == len(rows) and "no_smaps_rollup" in stats["pss_reason"]
    with_pss.close()
    without.close()
