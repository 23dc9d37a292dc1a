"""The one walker of a folder of run files (runfiles/tree.py): what it lists, what it leaves out."""

from __future__ import annotations

import os

import pytest

from lineprofiler.runfiles import tree


def _listed(root, max_depth, **kwargs):
    return [(rel, depth) for rel, _, depth in tree.walk(root, max_depth, **kwargs)]


def test_names_in_order_without_dot_names_or_links_to_folders(tmp_path):
    for rel in ("b/2.json", "b/1.json", "a.json", "b/.tmp_x.json", ".hidden/x.json", "c/d/e/deep.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    os.symlink(tmp_path / "b", tmp_path / "link")
    listed = _listed(tmp_path, 2)
    assert listed == [("a.json", 0), ("b/1.json", 1), ("b/2.json", 1), ("link", 0)]  # c/d/e is 3 deep
    assert ("c/d/e/deep.json", 3) in _listed(tmp_path, 3)
    assert _listed(tmp_path, 2, enter=lambda rel, depth: rel != "b") == [("a.json", 0), ("link", 0)]


def test_the_root_must_be_listable_and_a_folder_below_it_need_not(tmp_path):
    with pytest.raises(OSError):
        list(tree.walk(tmp_path / "missing", 2))
    (tmp_path / "shut").mkdir()
    (tmp_path / "shut" / "x.json").write_text("{}")
    (tmp_path / "shut").chmod(0)
    try:
        if os.access(tmp_path / "shut", os.R_OK):
            pytest.skip("running as root: no folder is unreadable")
        assert _listed(tmp_path, 2) == []
    finally:
        (tmp_path / "shut").chmod(0o755)
