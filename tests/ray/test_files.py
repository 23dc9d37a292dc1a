"""Both ends of collect's file transfer, without Ray: a node's run directory streamed in pieces and
written under the driver's, incrementally, atomically and never outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lineprofiler.integrations import _ray_files as files


def _tree(root: Path, content: dict[str, bytes]) -> None:
    for rel, data in content.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _copy(source: Path, dest: Path, copied: dict, chunk: int = 1 << 20) -> files.Received:
    dest.mkdir(exist_ok=True)
    return files.receive(dest, files.stream_files(str(source), copied, chunk), copied)


def _contents(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


CONTENT = {
    "workers/nodeA/w_run_1_00000001.json": b'{"a": 1}',
    "workers/nodeA/w_run_1_00000001.samples": bytes(range(256)) * 40,  # 10 KiB
    "metadata/nodeA/m_run_1_00000001.json": b"{}",
    "backend/torch_trace_nodeA_1.json": b"[]",
}


def test_a_node_directory_arrives_whole_in_small_pieces(tmp_path):
    source, dest = tmp_path / "node", tmp_path / "driver"
    _tree(source, CONTENT)
    pieces = list(files.stream_files(str(source), {}, 1000))
    # bounded objects: no object carries more than one chunk of data
    assert max(sum(len(p[3]) for p in item["pieces"]) for item in pieces if item["kind"] == "pieces") <= 1000
    assert sum(1 for item in pieces if item["kind"] == "pieces") > 10
    copied: dict = {}
    result = _copy(source, dest, copied, chunk=1000)
    assert result.done and result.errors == [] and result.files == 4
    assert result.bytes == sum(len(v) for v in CONTENT.values())
    assert _contents(dest) == CONTENT
    assert set(copied) == set(CONTENT)


def test_worker_files_travel_before_the_sample_files_they_describe(tmp_path):
    _tree(tmp_path, CONTENT)
    order = [p[0] for item in files.stream_files(str(tmp_path), {}, 1 << 20) if item["kind"] == "pieces"
             for p in item["pieces"]]
    assert order.index("workers/nodeA/w_run_1_00000001.json") < order.index("workers/nodeA/w_run_1_00000001.samples")


def test_only_what_changed_travels_again_and_removed_files_are_removed(tmp_path):
    source, dest = tmp_path / "node", tmp_path / "driver"
    _tree(source, CONTENT)
    copied: dict = {}
    _copy(source, dest, copied)
    again = _copy(source, dest, copied)
    assert (again.files, again.bytes, again.removed) == (0, 0, 0)
    # a snapshot replaces the worker file (new inode); the sample file grows; a start file goes
    worker = source / "workers/nodeA/w_run_1_00000001.json"
    replacement = worker.with_name(".tmp_x")
    replacement.write_bytes(b'{"a": 2}')
    os.replace(replacement, worker)
    with open(source / "workers/nodeA/w_run_1_00000001.samples", "ab") as handle:
        handle.write(b"more")
    (source / "metadata/nodeA/m_run_1_00000001.json").unlink()
    third = _copy(source, dest, copied)
    assert (third.files, third.removed) == (2, 1)
    assert _contents(dest) == _contents(source)
    assert "metadata/nodeA/m_run_1_00000001.json" not in copied


def test_links_dot_files_top_level_files_and_ray_folder_stay_home(tmp_path):
    source, dest, outside = tmp_path / "node", tmp_path / "driver", tmp_path / "secret"
    _tree(source, {**CONTENT, "metadata.json": b"{}", "ray/state.json": b"{}", "workers/nodeA/.tmp_1.json": b"x"})
    outside.mkdir()
    (outside / "key").write_bytes(b"do not copy")
    os.symlink(outside, source / "workers" / "linked")
    os.symlink(outside / "key", source / "workers" / "nodeA" / "w_link_1_00000001.json")
    copied: dict = {}
    _copy(source, dest, copied)
    assert _contents(dest) == CONTENT


@pytest.mark.parametrize(
    "rel",
    ["../escape/x.json", "/abs/x.json", "workers/../../x.json", "top.json", "workers/.hidden", "ray/collect.json",
     "workers\\x.json", "workers//x.json", 42],
)
def test_a_path_that_leaves_the_run_dir_is_refused(tmp_path, rel):
    dest = tmp_path / "driver"
    dest.mkdir()
    stream = [{"kind": "pieces", "pieces": [[rel, [1, 1, 1], 0, b"x", True]]}, {"kind": "done", "present": [],
                                                                             "errors": []}]
    result = files.receive(dest, iter(stream), {})
    assert result.files == 0 and len(result.errors) == 1
    assert list(tmp_path.rglob("x.json")) == [] and list(dest.iterdir()) == []


def test_a_link_planted_in_the_driver_run_dir_is_not_followed(tmp_path):
    source, dest, outside = tmp_path / "node", tmp_path / "driver", tmp_path / "elsewhere"
    _tree(source, CONTENT)
    outside.mkdir()
    dest.mkdir()
    os.symlink(outside, dest / "workers")  # a folder on the way is a link
    (dest / "metadata" / "nodeA").mkdir(parents=True)
    os.symlink(outside / "target", dest / "metadata" / "nodeA" / "m_run_1_00000001.json")  # the file itself
    result = _copy(source, dest, {})
    assert list(outside.iterdir()) == []  # nothing written through either link
    assert any("workers/nodeA/w_run_1_00000001.json" in e for e in result.errors)
    # a link at the destination name is replaced by the file, not written through
    meta = dest / "metadata" / "nodeA" / "m_run_1_00000001.json"
    assert not meta.is_symlink() and meta.read_bytes() == b"{}"
    assert (dest / "backend/torch_trace_nodeA_1.json").read_bytes() == b"[]"


def test_a_stream_cut_short_leaves_no_partial_file(tmp_path):
    source, dest = tmp_path / "node", tmp_path / "driver"
    _tree(source, CONTENT)
    dest.mkdir()

    def dying():
        for item in files.stream_files(str(source), {}, 1000):
            yield item
            if item["kind"] == "pieces" and any(p[0].endswith(".samples") for p in item["pieces"]):
                raise ConnectionError("the node died")

    copied: dict = {}
    with pytest.raises(ConnectionError):
        files.receive(dest, dying(), copied)
    assert not (dest / "workers/nodeA/w_run_1_00000001.samples").exists()
    assert (dest / "workers/nodeA/w_run_1_00000001.json").read_bytes() == CONTENT["workers/nodeA/w_run_1_00000001.json"]
    assert list(dest.rglob(".tmp*")) == []
    # the files finished before the node died are kept, and known to the next collect
    assert set(copied) == {rel for rel in CONTENT if rel.endswith(".json")}


def test_an_unreadable_file_costs_itself_only(tmp_path, monkeypatch):
    source, dest = tmp_path / "node", tmp_path / "driver"
    _tree(source, CONTENT)
    real_open = os.open

    def refusing(path, *args, **kwargs):  # as a file of another user would (the tests run as root)
        if str(path).endswith("m_run_1_00000001.json"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", refusing)
    result = _copy(source, dest, {})
    assert result.files == 3 and result.errors == ["metadata/nodeA/m_run_1_00000001.json: Permission denied"]
