"""Helpers of the integration tests (loaded by conftest.py as ``lp_integration_helpers``).

Integration tests: the public ``Profiler`` wired to capabilities, CUDA hooks, backend windows.

Everything goes through ``lineprofiler.accounting.Profiler`` and the ``lineprofiler report`` CLI,
on the real packages: VizTracer everywhere, the CPU build of torch on Python 3.11 (elsewhere the
torch tests skip with the reason), the ``nvtx`` package seen through a real NVTX tool library.
What needs a clean interpreter (an import order, a blocked package) runs in a subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path


def worker_documents(run_dir: Path) -> list[dict]:
    from lineprofiler.runfiles import workerfile

    return [workerfile.read_worker_file(p) for p in workerfile.find_worker_files(run_dir)]


def phases_by_path(document: dict) -> dict[str, dict]:
    return {p["path"]: p for p in document["phases"]}


def trace_events(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    return data["traceEvents"] if isinstance(data, dict) else data
