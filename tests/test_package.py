"""The package imports and its C modules load."""

import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    ["lineprofiler", "lineprofiler.lines._tracer", "lineprofiler.accounting._phases",
     "lineprofiler.accounting._sampler", "lineprofiler._signal_relay"],
)
def test_module_imports(name):
    assert importlib.import_module(name) is not None


def test_histogram_error_bound():
    from lineprofiler.runfiles import histogram

    assert 0.0526 < histogram.RELATIVE_ERROR < 0.0528  # 4.45 % from 1 us up; whole-ns edges below
    assert histogram.bucket_index(histogram.EDGES[0] - 1) == 0
    assert histogram.bucket_index(histogram.EDGES[-1]) == histogram.N_BUCKETS - 1


def test_the_line_benchmark_runs_against_the_installed_package(tmp_path):
    """benchmarks/bench_lines.py imports lineprofiler as installed, never from a src/ folder
    beside it: a non-editable install has no C modules in src/. Here the folder beside the copy
    holds a src/lineprofiler that fails on import."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    copy = tmp_path / "benchmarks"
    copy.mkdir()
    for name in ("bench_lines.py", "_lines_workloads.py"):
        shutil.copy(bench / name, copy / name)
    decoy = tmp_path / "src" / "lineprofiler"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the checkout-relative src/ was imported')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_") and k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, str(copy / "bench_lines.py"), "--quick", "--only", "loop"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("bench_lines: CPython ")
