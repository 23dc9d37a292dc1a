"""The worker-file reader: what it refuses, and the samples-last layout that lets it skip samples."""

import json
import os
import re
import socket
from pathlib import Path

import pytest
from lp_report_builders import MS, SimWorker, actor_loop

from lineprofiler.runfiles import histogram, reading, samplefile, workerfile
from lineprofiler.runfiles.workerfile import WorkerFileError, parse_worker_bytes

PATH = Path("/run/workers/node07/w_run_1_0000abcd.json")


def good_document(**kwargs):
    worker = SimWorker("actor")
    actor_loop(worker, 5, mcts_ns=2 * MS, env_ns=1 * MS)
    return worker.document(**kwargs)


def parse(document):
    return parse_worker_bytes(json.dumps(document).encode(), PATH)


def with_change(where, key, value):
    document = good_document()
    target = document
    for step in where:
        target = target[step]
    target[key] = value
    return document


def test_a_document_the_builder_makes_is_valid_and_round_trips(tmp_path):
    document = good_document()
    assert parse(document) == document
    path = tmp_path / "w_run_1_0000abcd.json"
    workerfile.write_worker_file(path, document)
    assert b'"layout":"samples-last"' in path.read_bytes()
    assert workerfile.read_worker_file(path) == document
    assert workerfile.read_worker_file(path, skip_samples=True) == document  # samples were None


@pytest.mark.parametrize(
    "where, key, value, reason",
    [
        ((), "kind", "other", "not a worker file"),
        ((), "schema_version", True, "invalid schema_version"),
        ((), "schema_version", 0, "invalid schema_version"),
        (("identity",), "pid", True, "'identity.pid' has the wrong type"),
        (("identity",), "pid", -5, "'identity.pid' is out of range"),
        (("identity",), "role", "\ud800", "'identity.role' is not valid text"),
        (("identity",), "rank", 2**63, "'identity.rank' is out of range"),
        (("times",), "start_unix_ns", -1, "out of range"),
        (("times",), "status", None, "'times.status' has the wrong type"),
        (("snapshot",), "interval_s", -1.0, "'snapshot.interval_s' is out of range"),
        (("snapshot",), "failures", "3", "wrong type"),
        (("histogram",), "scheme", "log10", "unknown histogram scheme"),
        (("config",), "window_phase", 3, "'config.window_phase' has the wrong type"),
        (("caps",), "paths_overflowed", -1, "out of range"),
        (("repairs",), "mismatched_exits", 1.5, "wrong type"),
        ((), "samples", [1, 2], "'samples' is neither an object nor null"),
        ((), "gpu", "yes", "'gpu' is neither an object nor null"),
        ((), "errors", [1], "'errors' is not a list of text"),
        ((), "phases", {}, "'phases' is not a list"),
        (("phases", 0), "path", "", "'phases[0].path' is empty"),
        (("phases", 0), "entries", -1, "out of range"),
        (("phases", 0), "hist", [[histogram.N_BUCKETS, 1]], "malformed bucket"),
        (("phases", 0), "hist", [[-1, 1]], "malformed bucket"),
        (("phases", 0), "hist", [[3, -1]], "malformed bucket"),
        (("phases", 0), "hist", [[3, True]], "malformed bucket"),
        (("phases", 0), "io_bytes", [], "wrong type"),
        (("counters", 0), "total", 2**64, "out of range"),
    ],
)
def test_what_the_reader_refuses(where, key, value, reason):
    with pytest.raises(WorkerFileError, match=reason.replace("[", r"\[").replace("]", r"\]")) as caught:
        parse(with_change(where, key, value))
    assert str(caught.value).startswith(str(PATH)) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "raw, reason",
    [
        (b"", "empty file"),
        (b'{"kind": NaN}', "corrupt or truncated JSON"),
        (b'{"a": Infinity}', "corrupt or truncated JSON"),
        (b"[" * 100_000, "corrupt or truncated JSON"),
        (b"\xff\xfe", "corrupt or truncated JSON"),
        (b"1" * 5000, "corrupt or truncated JSON"),
        (b"[]", "top level is not an object"),
    ],
)
def test_what_the_parser_refuses(raw, reason):
    with pytest.raises(WorkerFileError, match=reason):
        parse_worker_bytes(raw, PATH)


def test_a_newer_schema_says_to_upgrade():
    with pytest.raises(workerfile.NewerSchemaError, match="upgrade lineprofiler"):
        parse(with_change((), "schema_version", workerfile.SCHEMA_VERSION + 1))


def test_the_writer_puts_samples_last_so_a_reader_can_skip_them(tmp_path):
    # Inline rows past SMALL_SAMPLES_BYTES: the skipping reader leaves them unparsed.
    samples = {"rows": 30_000, "rss": list(range(30_000)), "samples": {"nested": True}}
    document = good_document(samples=samples, gpu={"samples": [1]})
    document["config"]["samples"] = 5  # nested "samples" keys the skipping reader must step over
    path = tmp_path / "w.json"
    workerfile.write_worker_file(path, document)
    raw = path.read_bytes()
    assert raw.rindex(b',"samples":') > raw.index(b'"layout":"samples-last"')
    assert json.loads(raw)["samples"] == samples

    skipped = workerfile.read_worker_file(path, skip_samples=True)
    assert skipped["samples"] is workerfile.SAMPLES_SKIPPED
    assert skipped["gpu"] == {"samples": [1]} and skipped["config"]["samples"] == 5
    assert skipped["phases"] == document["phases"]
    # The bytes of the samples are not even looked at.
    path.write_bytes(raw[: raw.rindex(b',"samples":') + 11] + b"garbage")
    assert workerfile.read_worker_file(path, skip_samples=True)["samples"] is workerfile.SAMPLES_SKIPPED
    with pytest.raises(WorkerFileError):
        workerfile.read_worker_file(path)

    workerfile.write_worker_file(path, good_document(samples=None))
    assert workerfile.read_worker_file(path, skip_samples=True)["samples"] is None


def test_small_samples_are_read_by_the_skipping_reader(tmp_path):
    # The object the profiler writes names the sample file: small, so it is parsed at once and
    # the report need not read the worker file again for it.
    samples = {"file": "w_run_1_0000abcd.samples", "rows": 3, "columns": ["t_ns"], "samples": {"nested": True}}
    path = tmp_path / "w.json"
    workerfile.write_worker_file(path, good_document(samples=samples))
    assert workerfile.read_worker_file(path, skip_samples=True)["samples"] == samples
    raw = path.read_bytes()
    # Bytes after the key that do not parse as an object are left for a whole read to judge.
    for tail in (b"garbage}", b"[1, 2]}", b'{"a": 1'):
        damaged = raw[: raw.rindex(b',"samples":') + 11] + tail
        assert parse_worker_bytes(damaged, PATH, skip_samples=True)["samples"] is workerfile.SAMPLES_SKIPPED


def test_skipping_falls_back_to_a_whole_parse_without_the_layout(tmp_path):
    document = good_document(samples={"rss": [1]})
    raw = json.dumps(document, separators=(",", ":")).encode()  # samples not last, no layout
    assert parse_worker_bytes(raw, PATH, skip_samples=True)["samples"] == {"rss": [1]}
    # A head that claims the layout but is not valid on its own is judged as a whole file.
    document["layout"] = workerfile.LAYOUT_SAMPLES_LAST
    ordered = {"samples": None, **{k: v for k, v in document.items() if k != "samples"}}
    ordered["samples"] = {"rss": [1]}
    ordered = {k: ordered[k] for k in ["kind", "schema_version", "layout", "samples"]} | {
        k: v for k, v in ordered.items() if k not in ("kind", "schema_version", "layout", "samples")
    }
    raw = json.dumps(ordered, separators=(",", ":")).encode()
    assert parse_worker_bytes(raw, PATH, skip_samples=True)["samples"] == {"rss": [1]}


def test_scan_skips_temp_files_and_other_names(tmp_path):
    folder = workerfile.worker_dir(tmp_path, "node07")
    folder.mkdir(parents=True)
    (folder / "w_run_1_0000abcd.json").write_text("{}")
    (folder / ".tmp_x.json").write_text("{}")
    (folder / "notes.txt").write_text("")
    files, problems = workerfile.scan_worker_files(tmp_path)
    assert [f.name for f in files] == ["w_run_1_0000abcd.json"] and problems == []
    assert workerfile.scan_worker_files(tmp_path / "absent") == ([], [])
    (tmp_path / "file").write_text("")
    assert workerfile.find_worker_files(tmp_path / "file") == []


# -- opening: regular files only, and never more than the limit ------------------------------------


@pytest.fixture
def specials(tmp_path):
    """One of each thing that can sit where a run file belongs, by name."""
    os.mkfifo(tmp_path / "fifo")
    os.symlink("/dev/zero", tmp_path / "link")
    (tmp_path / "dir").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    yield tmp_path
    sock.close()


@pytest.mark.parametrize(
    "name, reason",
    [
        ("fifo", "not a regular file (a FIFO)"),
        ("link", "a symbolic link (not followed)"),
        ("dir", "not a regular file (a directory)"),
        ("sock", "not a regular file (a socket)"),
    ],
)
def test_only_regular_files_are_opened_and_nothing_blocks(specials, name, reason):
    with pytest.raises(WorkerFileError, match=re.escape(f"cannot read: {reason}")):
        workerfile.read_worker_file(specials / name)
    with pytest.raises(samplefile.SampleFileError, match=re.escape(f"cannot read: {reason}")):
        samplefile.read_samples(specials / name)
    with pytest.raises(samplefile.SampleFileError, match=re.escape(f"cannot read: {reason}")):
        samplefile.read_header(specials / name)


def test_a_worker_file_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "w.json"
    workerfile.write_worker_file(path, good_document())
    size = path.stat().st_size
    monkeypatch.setattr(workerfile, "MAX_FILE_BYTES", size)
    assert workerfile.read_worker_file(path)["kind"] == workerfile.KIND  # at the limit: read
    monkeypatch.setattr(workerfile, "MAX_FILE_BYTES", size - 1)
    expected = f"larger than the {size - 1:,}-byte limit for this file ({size:,} bytes)"
    with pytest.raises(WorkerFileError, match=re.escape(expected)):
        workerfile.read_worker_file(path)


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "grows"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    def fstat_before_growth(fd):
        result = real_fstat(fd)
        path.write_bytes(b"x" * 100)  # it grows between the size check and the read
        return result

    monkeypatch.setattr(reading.os, "fstat", fstat_before_growth)
    with pytest.raises(reading.FileTooLarge, match="it grew while being read"):
        reading.read_limited(path, 50)


def test_a_sample_file_over_the_limit_is_refused_whole(tmp_path, monkeypatch):
    sim = SimWorker("actor")
    samples = sim.write_samples(tmp_path, {"rss_bytes": [1, 2, 3]})
    path = sim.path_in(tmp_path).with_name(samples["file"])
    assert samplefile.read_samples(path).rows == 3
    monkeypatch.setattr(samplefile, "MAX_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(samplefile.SampleFileError, match="-byte limit for this file"):
        samplefile.read_samples(path)
