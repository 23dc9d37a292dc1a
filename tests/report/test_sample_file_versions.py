"""The report reads a run's version-1 sample files (uncompressed, as 0.10 wrote them) exactly as
the same rows in version 2, and names a sample file of a newer version in one CAVEATS line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.benchmarks import benchmark_module
from lineprofiler.runfiles import samplefile


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    bench = benchmark_module("bench_report")
    run_dir = tmp_path_factory.mktemp("versions") / "profile"
    for index in range(4):
        bench.write_worker(run_dir, index, 4, hours=0.5, samples="sidecar", nodes=20)
    return run_dir


def report(run_dir: Path, *flags: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    command = [sys.executable, "-m", "lineprofiler", "report", str(run_dir), *flags]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def as_version_1(path: Path) -> None:
    """Rewrite a sample file as version 1: the same header, version 1, then the raw rows."""
    table = samplefile.read_samples(path)
    header = bytearray(samplefile._header(
        table.columns, table.interval_ns, table.monotonic_ref_ns, table.unix_ref_ns, table.pid
    ))
    header[8:12] = (1).to_bytes(4, "little")
    path.write_bytes(bytes(header) + table.data.tobytes())


def test_version_1_files_give_the_same_report(run_dir):
    sidecars = sorted(run_dir.glob("workers/*/*.samples"))
    assert sidecars and all(samplefile.read_header(p) for p in sidecars)
    compressed = sum(p.stat().st_size for p in sidecars)
    text, json_text = report(run_dir), report(run_dir, "--json")
    assert "I/O" in text and "MEMORY" in text
    for path in sidecars:
        as_version_1(path)
    assert sum(p.stat().st_size for p in sidecars) > 3 * compressed
    assert report(run_dir) == text
    assert report(run_dir, "--json") == json_text


def test_a_newer_sample_file_is_one_caveat_line(run_dir):
    path = sorted(run_dir.glob("workers/*/*.samples"))[1]
    raw = bytearray(path.read_bytes())
    raw[8:12] = (samplefile.VERSION + 1).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    lines = [line for line in report(run_dir).splitlines() if path.name in line]
    assert len(lines) == 1
    assert f"written with sample file version {samplefile.VERSION + 1}" in lines[0]
    assert "upgrade lineprofiler to read it" in lines[0] and "left out of I/O and MEMORY" in lines[0]
