"""Both ends of collect's file transfer, without Ray: a node's run directory streamed in pieces and
written under the driver's, incrementally, atomically and never outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lineprofiler.integrations import _ray_files as files
from lineprofiler.runfiles import layout


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


GOOD_A = {"kind": "pieces", "pieces": [["workers/nodeA/a.json", [2, 1, 1, 1], 0, b"{}", True]]}
GOOD_B = {"kind": "pieces", "pieces": [["workers/nodeA/b.json", [2, 1, 2, 1], 0, b"[]", True]]}
DONE = {"kind": "done", "present": ["workers/nodeA/a.json", "workers/nodeA/b.json"], "errors": []}


@pytest.mark.parametrize(
    "bad",
    [
        "not a message",
        None,
        {"kind": "what"},
        {"kind": "pieces", "pieces": 5},
        {"kind": "pieces", "pieces": [["workers/nodeA/c.json", [1], 0, b"x"]]},
        {"kind": "pieces", "pieces": [["workers/nodeA/c.json", 7, 0, b"x", True]]},
        {"kind": "pieces", "pieces": [["workers/nodeA/c.json", [1], "0", b"x", True]]},
        {"kind": "pieces", "pieces": [["workers/nodeA/c.json", [1], 0, "text", True]]},
        {"kind": "pieces", "pieces": [["workers/nodeA/c.json", [1], 0, b"x", "maybe"]]},
        {"kind": "done", "present": 5},
        {"kind": "done", "present": [["not", "hashable"]]},
        {"kind": "done", "present": [], "errors": 5},
    ],
    ids=repr,
)
def test_a_malformed_message_costs_itself_and_one_error(tmp_path, bad):
    dest = tmp_path / "driver"
    dest.mkdir()
    copied: dict = {}
    result = files.receive(dest, iter([GOOD_A, bad, GOOD_B, DONE]), copied)
    assert len(result.errors) == 1 and "ignored" in result.errors[0], result.errors
    assert result.done and result.files == 2 and result.removed == 0
    assert _contents(dest) == {"workers/nodeA/a.json": b"{}", "workers/nodeA/b.json": b"[]"}
    assert set(copied) == {"workers/nodeA/a.json", "workers/nodeA/b.json"}


def test_a_malformed_message_inside_a_file_drops_that_file_only(tmp_path):
    dest = tmp_path / "driver"
    dest.mkdir()
    first = {"kind": "pieces", "pieces": [["workers/nodeA/c.samples", [4, 1, 3, 1], 0, b"ab", False]]}
    rest = {"kind": "pieces", "pieces": [["workers/nodeA/c.samples", [4, 1, 3, 1], 2, b"cd", True]]}
    result = files.receive(dest, iter([first, {"kind": "pieces", "pieces": None}, rest, GOOD_A]), {})
    assert len(result.errors) == 1
    assert _contents(dest) == {"workers/nodeA/a.json": b"{}"}
    assert list(dest.rglob(".tmp*")) == []


def _inode(path: Path) -> int:
    return os.stat(path).st_ino


def _mapped_inodes(path: Path) -> set[tuple[int, bool]]:
    """(inode, unlinked) of each of this process's mappings of ``path`` (/proc/self/maps)."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip().removesuffix(" (deleted)") == str(path):
                found.add((int(fields[4]), fields[5].strip().endswith("(deleted)")))
    return found


def test_a_run_dir_streamed_onto_itself_is_left_as_it_is(tmp_path):
    """The node's run directory is the driver's, undetected (as by a collect of an older
    lineprofiler on the node): every file, and the live file a process maps, stays in place."""
    import mmap

    root = tmp_path / "run"
    _tree(root, {**CONTENT, "workers/nodeA/w_run_1_00000001.live": bytes(4096)})
    live = root / "workers/nodeA/w_run_1_00000001.live"
    before = {rel: _inode(root / rel) for rel in _contents(root)}
    with open(live, "r+b") as handle, mmap.mmap(handle.fileno(), 4096) as mapping:
        copied: dict = {}
        stream = files.stream_files(str(root), copied, 1000)
        result = files.receive(root, stream, copied, node_machine=layout.machine_id())
        assert result.errors == [] and result.done
        assert (result.files, result.bytes, result.removed, result.in_place) == (0, 0, 0, len(before))
        assert {rel: _inode(root / rel) for rel in before} == before
        assert _mapped_inodes(live) == {(before["workers/nodeA/w_run_1_00000001.live"], False)}
        mapping[:5] = b"still"
        assert live.read_bytes()[:5] == b"still"  # the mapping writes to the file at its name
        # a later stream that no longer lists the files removes none of them: they are not copies
        gone = files.receive(root, iter([{"kind": "done", "present": [], "errors": []}]), copied,
                             node_machine=layout.machine_id())
        assert gone.removed == 0 and {rel: _inode(root / rel) for rel in before} == before
    assert list(root.rglob(".tmp*")) == []


def test_a_node_on_another_machine_gets_copies_even_where_inodes_agree(tmp_path):
    source, dest = tmp_path / "node", tmp_path / "driver"
    _tree(source, CONTENT)
    dest.mkdir()
    copied: dict = {}
    result = files.receive(dest, files.stream_files(str(source), copied, 1000), copied, node_machine="elsewhere")
    assert result.files == len(CONTENT) and result.in_place == 0
    assert _contents(dest) == CONTENT


def test_a_node_tells_the_drivers_run_dir_by_its_identity_or_by_the_marker(tmp_path):
    driver, other = tmp_path / "driver", tmp_path / "other"
    (driver / "ray").mkdir(parents=True)
    other.mkdir()
    token = "0123456789abcdef0123456789abcdef"
    identity = list(layout.file_identity(driver))
    assert files.same_directory(str(driver), {"identity": identity, "token": ""})
    os.symlink(driver, tmp_path / "link")
    assert files.same_directory(str(tmp_path / "link"), {"identity": identity, "token": ""})
    assert not files.same_directory(str(other), {"identity": identity, "token": token})
    # another machine's identity (a shared file system): the marker the driver wrote says it
    elsewhere = {"identity": ["another-boot-id", *identity[1:]], "token": token}
    assert not files.same_directory(str(driver), elsewhere)
    Path(files.marker_path(driver, token)).write_bytes(token.encode())
    assert files.same_directory(str(driver), elsewhere)
    assert not files.same_directory(str(driver), {**elsewhere, "token": token[::-1]})  # another collect's
    assert not files.same_directory(str(driver), {**elsewhere, "token": "../../etc"})
    # a node whose ray/ is a link to the driver's is not the driver's run directory
    os.symlink(driver / "ray", other / "ray")
    assert not files.same_directory(str(other), elsewhere)
