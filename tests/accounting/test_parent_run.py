"""The run a multiprocessing child derives from its parent: from the parent's worker file, else
from the parent process itself (pid, start time in /proc, boot id)."""

from __future__ import annotations

import multiprocessing as mp
import os
import re

import pytest

from lineprofiler.accounting import identity

BOOT_ID = "0c7f8a8e-1d2b-4c3d-9e4f-5a6b7c8d9e0f\n"


def fake_proc(root, pid, *, comm="python3", ticks=123456, boot_id=BOOT_ID, btime="1786600000"):
    (root / str(pid)).mkdir(parents=True)
    rest = " ".join(["S"] + ["0"] * 18 + [str(ticks)] + ["0"] * 30)
    (root / str(pid) / "stat").write_text(f"{pid} ({comm}) {rest}\n")
    if boot_id is not None:
        (root / "sys" / "kernel" / "random").mkdir(parents=True)
        (root / "sys" / "kernel" / "random" / "boot_id").write_text(boot_id)
    if btime is not None:
        (root / "stat").write_text(f"cpu  1 2 3 4\nbtime {btime}\nprocesses 99\n")
    return str(root)


def test_this_machines_proc_gives_a_start_that_tells_processes_apart():
    mine = identity.process_start(os.getpid())
    assert mine is not None and mine.pid == os.getpid() and mine.start_ticks > 0 and mine.boot
    assert mine == identity.process_start(os.getpid())  # read twice, the same
    assert identity.process_run_id(mine) == identity.process_run_id(identity.process_start(os.getpid()))
    assert re.fullmatch(rf"mp{os.getpid()}-[0-9a-f]{{6}}", identity.process_run_id(mine))
    parent = identity.process_start(os.getppid())
    assert parent is not None and identity.process_run_id(parent) != identity.process_run_id(mine)


def test_the_start_is_read_past_a_command_name_with_spaces_and_parentheses(tmp_path):
    proc = fake_proc(tmp_path, 4242, comm="my (odd) name) x", ticks=987654)
    start = identity.process_start(4242, proc)
    assert start is not None
    assert (start.pid, start.start_ticks, start.boot) == (4242, 987654, BOOT_ID.strip())
    hz = os.sysconf("SC_CLK_TCK")
    assert start.start_unix_ns == 1786600000 * 10**9 + 987654 * 10**9 // hz


def test_the_same_pid_started_later_or_on_another_boot_is_another_run(tmp_path):
    ids = set()
    for n, (ticks, boot) in enumerate([(100, BOOT_ID), (101, BOOT_ID), (100, "another-boot\n")]):
        start = identity.process_start(7, fake_proc(tmp_path / str(n), 7, ticks=ticks, boot_id=boot))
        ids.add(identity.process_run_id(start))
    assert len(ids) == 3


def test_without_a_boot_id_btime_stands_in_and_without_either_nothing_is_derived(tmp_path):
    start = identity.process_start(7, fake_proc(tmp_path / "a", 7, boot_id=None))
    assert start is not None and start.boot == "btime-1786600000"
    assert identity.process_start(7, fake_proc(tmp_path / "b", 7, boot_id=None, btime=None)) is None
    start = identity.process_start(7, fake_proc(tmp_path / "c", 7, btime=None))
    assert start is not None and start.start_unix_ns is None
    assert identity.process_start(8, str(tmp_path / "a")) is None  # no such process
    (tmp_path / "a" / "9").mkdir()
    (tmp_path / "a" / "9" / "stat").write_text("9 (x) S 1 2")  # truncated
    assert identity.process_start(9, str(tmp_path / "a")) is None


def test_a_process_started_by_no_multiprocessing_parent_derives_nothing(tmp_path):
    assert mp.parent_process() is None
    assert identity.multiprocessing_parent_pid() is None
    assert identity.parent_run_id(tmp_path, "node07") is None


def _child(queue, run_dir, proc):
    queue.put((identity.multiprocessing_parent_pid(), identity.parent_run_id(run_dir, "node07", proc=proc)))


@pytest.mark.parametrize("readable_proc", [True, False])
def test_a_multiprocessing_child_derives_the_run_from_its_parent(tmp_path, readable_proc):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = None if readable_proc else str(tmp_path / "no-proc")
    children = [ctx.Process(target=_child, args=(queue, tmp_path, proc)) for _ in range(2)]
    for child in children:
        child.start()
    results = [queue.get(timeout=60) for _ in children]
    for child in children:
        child.join()
    assert [pid for pid, _ in results] == [os.getpid()] * 2
    if readable_proc:
        expected = identity.RunId(identity.process_run_id(identity.process_start(os.getpid())), 0, "parent-process")
        assert [run for _, run in results] == [expected, expected]
    else:
        assert [run for _, run in results] == [None, None]  # the profiler then generates an id
