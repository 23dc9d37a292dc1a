"""auto="torch"'s reading of torch's flight recorder (``accounting._torch_flight_recorder``), on
rings written here in the recorder's JSON (the real one, from a two-rank DDP run, is read in
tests/integration/test_record_collectives.py): what is counted, once, what is the wrappers' own,
what is dropped, and the worker file's check of the section. No torch needed."""

from __future__ import annotations

import json
import sys
import threading
import types
from pathlib import Path

import pytest
from lp_report_builders import MS, SimWorker, actor_loop

from lineprofiler.accounting import _torch_flight_recorder as fr
from lineprofiler.runfiles.workerfile import WorkerFileError, parse_worker_bytes


class Ring:
    """A stand-in for ``torch._C._distributed_c10d``: its CPU ring as torch dumps it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entries: list[dict[str, object]] | None = []
        self.next_id = 0
        module = types.ModuleType("torch._C._distributed_c10d")
        module._dump_fr_trace_json = self.dump  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "torch._C._distributed_c10d", module)

    def dump(self, include_collectives: bool, only_active: bool) -> bytes:
        assert (include_collectives, only_active) == (True, False)  # every entry, not the active ones
        data: dict[str, object] = {"version": "2.10", "pg_status": {}}
        if self.entries is not None:
            data["entries"] = self.entries
        return json.dumps(data).encode()

    def add(self, op: str, sizes: list[list[int]], dtype: str = "Float", *, thread: int | None = None,
            at_ns: int = 0, duration_ms: float | None = None) -> None:
        assert self.entries is not None
        self.entries.append({
            "record_id": self.next_id, "profiling_name": f"gloo:{op}", "input_sizes": sizes,
            "input_dtypes": [dtype] * len(sizes), "thread_id": str(thread or threading.get_ident()),
            "time_created_ns": at_ns or fr.time.time_ns(), "duration_ms": duration_ms, "state": "scheduled",
        })
        self.next_id += 1


@pytest.fixture
def ring(monkeypatch: pytest.MonkeyPatch) -> Ring:
    return Ring(monkeypatch)


def test_the_buffer_size_is_set_only_where_the_program_chose_none() -> None:
    chosen = ({"TORCH_FR_BUFFER_SIZE": "0"}, {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}, {"TORCH_FR_BUFFER_SIZE": "9"})
    for given in ({}, *chosen):
        environ = dict(given)
        fr.ask_torch_to_record(environ)
        assert environ == (given or {"TORCH_FR_BUFFER_SIZE": str(fr.BUFFER_SIZE)})


def test_entries_past_the_wrappers_are_counted_once_per_op_and_the_wrappers_own_apart(ring: Ring) -> None:
    own = fr.OwnCalls()
    reader = fr.ProcessGroupCollectives(own)
    ring.add("all_reduce", [[1000]])  # DDP's bucket, from C++
    span = own.begin()
    ring.add("all_reduce", [[16]])  # made inside a wrapped call on this thread: timed already
    ring.add("broadcast", [[3]], "Long", thread=threading.get_ident() + 1)  # another thread meanwhile
    own.end(span)
    ring.add("all_reduce", [[1000], [10]], "Half", duration_ms=1.5)  # NCCL, timed by torch
    ring.add("all_gather", [[2]], "Float4_e2m1fn_x2")
    reader.read()
    ring.add("all_reduce", [[1000]])
    reader.read()  # the first four again, and one new
    section = reader.section()
    assert section["ops"] == {
        "all_reduce": {"calls": 3, "bytes": 4000 + 2020 + 4000, "unsized_calls": 0, "duration_ns": 1_500_000,
                       "timed_calls": 1},
        "broadcast": {"calls": 1, "bytes": 24, "unsized_calls": 0, "duration_ns": None, "timed_calls": 0},
        "all_gather": {"calls": 1, "bytes": 0, "unsized_calls": 1, "duration_ns": None, "timed_calls": 0},
    }
    assert (section["in_phases"], section["dropped"], section["unavailable_reason"]) == (1, 0, None)
    assert not own.spans  # ended before the ring was read: let go


def test_what_the_ring_overwrote_and_what_cannot_be_told_apart_is_dropped(ring: Ring,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    reader = fr.ProcessGroupCollectives(fr.OwnCalls())
    ring.add("all_reduce", [[4]])
    reader.read()
    for _ in range(5):
        ring.add("all_reduce", [[4]])
    assert ring.entries is not None
    del ring.entries[:3]  # a ring of three: the first two since the last read are gone
    reader.read()
    assert reader.section()["ops"]["all_reduce"]["calls"] == 4 and reader.section()["dropped"] == 2

    monkeypatch.setattr(fr, "MAX_OWN_CALLS", 2)
    own = fr.OwnCalls()
    reader = fr.ProcessGroupCollectives(own)
    ring.entries, ring.next_id = [], 0
    for _ in range(3):  # three wrapped calls, two spans kept: the first one's entry is unsure
        span = own.begin()
        ring.add("all_reduce", [[4]])
        own.end(span)
    reader.read()
    assert (reader.section()["ops"], reader.section()["in_phases"], reader.section()["dropped"]) == ({}, 2, 1)


def test_a_ring_the_program_turned_off_says_so(ring: Ring, monkeypatch: pytest.MonkeyPatch) -> None:
    ring.entries = None  # what torch dumps with no entry: the ring is empty, or there is none
    reader = fr.ProcessGroupCollectives(fr.OwnCalls())
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "2000")
    reader.read()
    assert reader.section()["unavailable_reason"] is None  # no collective yet
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "0")
    reader.read()
    assert reader.section()["unavailable_reason"] == "torch's flight recorder is off (TORCH_FR_BUFFER_SIZE=0)"
    ring.entries = []
    ring.add("all_reduce", [[4]])
    reader.read()
    assert reader.section()["ops"]["all_reduce"]["calls"] == 1
    reader.after_fork_child()  # the child's ring is its parent's, its lock perhaps held for good
    ring.add("all_reduce", [[4]])
    reader.read()
    section = reader.section()
    assert section["ops"] == {} and section["unavailable_reason"].startswith("a fork child")


PATH = Path("/run/workers/node07/w_run_1_0000abcd.json")


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"dropped": -1}, "'auto_torch.process_group.dropped' is out of range"),
        ({"ops": []}, "'auto_torch.process_group.ops' has the wrong type"),
        ({"ops": {"all_reduce": {"calls": 1}}}, "'auto_torch.process_group.ops['all_reduce'].bytes' is missing"),
        ({"ops": {"": {"calls": 1, "bytes": 1}}}, "'auto_torch.process_group.ops' is not valid text"),
    ],
)
def test_the_worker_file_checks_the_section_and_reads_files_without_it(change: dict[str, object], reason: str) -> None:
    worker = SimWorker("trainer")
    actor_loop(worker, 2, mcts_ns=2 * MS, env_ns=1 * MS)
    document = worker.document()
    assert "auto_torch" not in parse_worker_bytes(json.dumps(document).encode(), PATH)  # an older file
    reader = fr.ProcessGroupCollectives(fr.OwnCalls())
    document["auto_torch"] = {"hooks": [], "process_group": reader.section()}
    assert parse_worker_bytes(json.dumps(document).encode(), PATH)["auto_torch"]["process_group"]["dropped"] == 0
    document["auto_torch"]["process_group"].update(change)
    with pytest.raises(WorkerFileError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        parse_worker_bytes(json.dumps(document).encode(), PATH)
