"""What importing the accounting layer and constructing a profiler load, in a fresh interpreter.

Every process of a run pays both, so what they may load is held here by module name rather
than by a timing (``benchmarks/bench_startup.py`` measures the time): a change that makes the
import pull in ``typing`` or ``json``, or the construction probe the installed packages, fails
here on any machine, loaded or not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

# Modules `import lineprofiler.accounting` must not load: heavy standard modules (typing alone
# costs milliseconds), what only a running profiler needs, and the other layers.
NOT_AT_IMPORT = (
    "typing", "json", "dataclasses", "inspect", "re", "pathlib", "socket", "secrets", "random", "hashlib",
    "ctypes", "traceback", "signal", "importlib.metadata", "importlib.util", "multiprocessing",
    "lineprofiler.lines", "lineprofiler.report", "lineprofiler.runfiles", "lineprofiler.integrations",
    "lineprofiler.accounting.identity", "lineprofiler.accounting._process", "lineprofiler.accounting._snapshots",
    "lineprofiler.accounting._wiring", "lineprofiler.accounting._sampler", "lineprofiler.accounting.sampling",
    "lineprofiler.accounting.sampling.psutil_sampler",
    "lineprofiler.accounting.capabilities", "lineprofiler.accounting.metadata", "lineprofiler.accounting.gpu",
    "lineprofiler.accounting.windows", "lineprofiler.accounting.windows.trace_window",
)
# Modules a default `Profiler(run_dir=...)` must not load while it is constructed: the
# capability probes and the metadata files wait for the first snapshot, value classes are not
# dataclasses, the profiler's own paths are text until a Path is asked for, and its first files
# are written without json.
NOT_AT_CONSTRUCTION = (
    "typing", "dataclasses", "inspect", "pathlib", "urllib", "socket", "secrets", "random", "ctypes", "traceback",
    "importlib.metadata", "importlib.util", "contextlib", "lineprofiler.lines", "lineprofiler.report",
    "lineprofiler.integrations", "lineprofiler.accounting.metadata", "lineprofiler.accounting.windows",
    "lineprofiler.accounting.windows.trace_window", "lineprofiler.accounting.sampling.psutil_sampler",
    # json imports re, and re and signal import enum: the start file is written without json.
    "json", "re", "enum", "signal", "warnings",
)

PROBE = r"""
import json, sys
root = sys.argv[1]
seen = set(sys.modules)
steps = {}

def step(name):
    global seen
    steps[name] = sorted(set(sys.modules) - seen)
    seen = set(sys.modules)

import lineprofiler.accounting
step("import")
profiler = lineprofiler.accounting.Profiler(run_dir=root + "/enabled", snapshot_interval_s=None)
step("construct")
import os
steps["files_after_construct"] = sorted(
    os.path.relpath(os.path.join(d, f), root + "/enabled") for d, _, fs in os.walk(root + "/enabled") for f in fs
)
profiler.flush()
step("first_snapshot")
profiler.close()
print(json.dumps(steps))
"""


def probe(tmp_path, code: str = PROBE) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    steps: dict[str, list[str]] = json.loads(result.stdout.splitlines()[-1])
    return steps


def loaded(names: list[str], forbidden: tuple[str, ...]) -> list[str]:
    """The forbidden modules among ``names``, packages counting with their submodules."""
    return sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in forbidden))


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    return probe(tmp_path_factory.mktemp("startup"))


def test_the_import_loads_the_c_module_and_little_else(steps):
    assert loaded(steps["import"], NOT_AT_IMPORT) == []
    assert "lineprofiler.accounting._phases" in steps["import"]


def test_construction_defers_probes_and_metadata_to_the_first_snapshot(steps):
    assert loaded(steps["construct"], NOT_AT_CONSTRUCTION) == []
    # The promise of construction is kept: the start file is there, and the sampler runs.
    files = steps["files_after_construct"]
    assert any(f.startswith("workers/") and f.endswith(".json") for f in files), files
    assert "lineprofiler.accounting._sampler" in steps["construct"]
    assert not any(f.startswith("metadata") for f in files), files
    # The first snapshot writes the metadata files, probing what is installed.
    assert "lineprofiler.accounting.metadata" in steps["first_snapshot"]


def test_a_disabled_profiler_loads_no_recording_module(tmp_path):
    code = r"""
import json, sys
seen = set(sys.modules)
import lineprofiler.accounting
profiler = lineprofiler.accounting.Profiler(run_dir=sys.argv[1], enabled=False)
with profiler.phase("x"):
    profiler.count("n")
profiler.close()
print(json.dumps({"disabled": sorted(set(sys.modules) - seen)}))
"""
    names = probe(tmp_path, code)["disabled"]
    never = ("lineprofiler.accounting._wiring", "lineprofiler.accounting.sampling", "lineprofiler.accounting._sampler",
             "lineprofiler.accounting._snapshots", "lineprofiler.accounting._process", "lineprofiler.accounting.gpu",
             "lineprofiler.runfiles.workerfile", "typing", "dataclasses", "signal")
    assert loaded(names, never) == []
    assert os.listdir(tmp_path) == []  # and writes nothing


def test_the_periodic_snapshot_writes_the_metadata_files(tmp_path):
    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=tmp_path, snapshot_interval_s=0.05, sample_interval_s=None)
    try:
        own = profiler.metadata_path()
        assert own is not None
        # The first periodic snapshot writes them; a loaded machine may take a while to run it.
        for _ in range(2000):
            if own.exists() and (tmp_path / "metadata.json").exists():
                break
            time.sleep(0.005)
        document = json.loads(own.read_text())
        assert document["final"] is False and document["run_id"] == profiler.run_id
    finally:
        profiler.close()
    assert json.loads(own.read_text())["final"] is True
