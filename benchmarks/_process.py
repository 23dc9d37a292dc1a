"""What the benchmarks read about their own process. Import it as ``_process`` from a benchmark
run as a script (its folder is on ``sys.path``)."""

from __future__ import annotations

import os


def rss_bytes() -> int:
    """This process's resident set, from ``/proc/self/statm``."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
