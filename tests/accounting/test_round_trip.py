"""Whatever the writer accepts, the reader reads: names and environments, written by the real
Profiler and read back with runfiles.workerfile.read_worker_file.

Property-based (hypothesis): phase and counter names and roles from all of Unicode, lone
surrogates included, and from file names that are not UTF-8 (``os.fsdecode``); host names and
``SLURM_JOB_ID`` as arbitrary bytes in the environment; ranks far beyond 64 bits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lineprofiler.accounting import Profiler
from lineprofiler.runfiles import layout, workerfile

ANY_CHAR = st.characters(exclude_categories=())  # surrogates and controls too
NAMES = st.one_of(
    st.text(ANY_CHAR, max_size=24),
    st.binary(max_size=24).map(os.fsdecode),  # a name made from a file name that is not UTF-8
)
ENV_BYTES = st.binary(min_size=1, max_size=24).filter(lambda b: b"\0" not in b and b"=" not in b)
RANKS = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**100]))
INT64 = range(-(2**63), 2**63)


def _canonical(name: str) -> str:
    """What the recorder makes of a phase or counter name."""
    return name.replace("/", "_") if name else "(empty)"


@contextmanager
def _environment(values: dict[bytes, bytes]):
    saved = dict(os.environb)
    try:
        for key in list(os.environb):
            if key.startswith(b"LINEPROFILER_"):
                del os.environb[key]
        os.environb.update(values)
        yield
    finally:
        os.environb.clear()
        os.environb.update(saved)


def _expected_identity_value(key: str, value: object) -> object:
    if isinstance(value, str):
        return workerfile.escape_text(value)
    if isinstance(value, int) and not isinstance(value, bool) and value not in INT64:
        return 2**63 - 1 if key == "attempt" else None
    return value


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    phases=st.lists(NAMES, min_size=1, max_size=4),
    counters=st.lists(NAMES, max_size=3),
    role=NAMES,
    host=ENV_BYTES,
    job=ENV_BYTES,
    rank=RANKS,
)
def test_what_the_profiler_writes_the_reader_reads(phases, counters, role, host, job, rank):
    env = {b"LINEPROFILER_HOST": host, b"SLURM_JOB_ID": job, b"RANK": str(rank).encode()}
    with tempfile.TemporaryDirectory() as folder, _environment(env):
        profiler = Profiler(folder, role=role, snapshot_interval_s=None, sample_interval_s=None)
        for name in phases:
            with profiler.phase(name):
                for counter in counters:
                    profiler.count(counter, 3)
        profiler.close()
        assert profiler.path is not None and profiler.identity is not None
        assert profiler.path.parent.parent == layout.worker_dir(folder, "x").parent  # inside workers/
        document = workerfile.read_worker_file(profiler.path)  # never refused

    written = profiler.identity.to_json()
    for key, value in written.items():
        if key != "argv":
            assert document["identity"][key] == _expected_identity_value(key, value), key
    assert document["identity"]["role"] == workerfile.escape_text(role if role.strip() else "main")
    out_of_range = [key for key, value in written.items() if isinstance(value, int) and value not in INT64]
    assert len([e for e in document["errors"] if "does not fit 64 bits" in e]) == len(out_of_range)
    paths = {p["path"] for p in document["phases"]}
    assert paths == {workerfile.escape_text(_canonical(name)) for name in phases}
    names = {(c["phase"], c["name"]) for c in document["counters"]}
    assert names == {
        (workerfile.escape_text(_canonical(p)), workerfile.escape_text(_canonical(c))) for p in phases for c in counters
    }


@settings(max_examples=300, deadline=None, database=None)
@given(NAMES, NAMES)
def test_distinct_hosts_never_share_a_folder(a, b):
    folder_a, folder_b = layout.host_component(a), layout.host_component(b)
    assert (folder_a == folder_b) == (a == b) or not (a and b)
    for text, folder in ((a, folder_a), (b, folder_b)):
        assert "/" not in folder and "\0" not in folder and not folder.startswith(".")
        assert len(folder.encode("utf-8")) <= 128
        if text and all(c.isalnum() for c in text):
            assert folder == text  # letters and digits of any script are kept


@pytest.mark.parametrize(
    "a, b", [("学习者", "行动者"), ("学习者", "main"), ("gpu:0", "gpu/0"), ("gpu:0", "gpu_0"), ("a" * 300, "a" * 301)]
)
def test_roles_and_hosts_that_used_to_merge_stay_apart(tmp_path, monkeypatch, a, b):
    documents = []
    for name in (a, b):
        monkeypatch.setenv("LINEPROFILER_HOST", name)
        profiler = Profiler(tmp_path, role=name, snapshot_interval_s=None, sample_interval_s=None)
        profiler.close()
        documents.append(workerfile.read_worker_file(profiler.path))
    assert [d["identity"]["role"] for d in documents] == [a, b]
    assert [d["identity"]["host"] for d in documents] == [a, b]
    assert len({layout.host_component(name) for name in (a, b)}) == 2
    assert {p.name for p in (tmp_path / "workers").iterdir()} == {layout.host_component(a), layout.host_component(b)}


def test_constructing_a_profiler_leaves_no_resource_warning(tmp_path):
    """Every Profiler() used to leave an os.scandir iterator unclosed (under -X dev, a
    ResourceWarning from the version probe of a package that is installed but not imported)."""
    code = (
        "from lineprofiler.accounting import Profiler\n"
        f"p = Profiler({str(tmp_path)!r}, snapshot_interval_s=None)\n"
        "p.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", code],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "ResourceWarning" not in result.stderr, result.stderr
