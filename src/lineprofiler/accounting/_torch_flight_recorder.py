"""The collectives ``auto="torch"``'s Python wrappers do not see, from torch's flight recorder.

DistributedDataParallel's gradient all-reduce (and its start-up broadcasts) go from C++ straight
to the process group, past the wrapped ``torch.distributed`` functions
(:mod:`._torch_collectives`). torch's flight recorder, a ring of the last collectives of every
process group of the process kept by c10d, lists them all: op, input sizes and dtypes, the
thread that issued it and when (``time_created_ns``, ``CLOCK_REALTIME``, as :func:`time.time_ns`).

* Switching it on: the ring's size is read from ``TORCH_FR_BUFFER_SIZE`` when torch makes it,
  so :func:`ask_torch_to_record` sets it in ``os.environ`` at ``auto="torch"``'s start, where the
  program set neither it nor its older name (its own value, 0 = off included, stands). Child
  processes inherit it.
* Telling ours apart: each wrapped call notes its thread and the clock at its start and end
  (:class:`OwnCalls`); an entry issued on that thread inside that span was made through our
  wrapper, and is timed already as ``collective/<op>``. Matching by thread and time, not by
  counting calls per op: one wrapped call may make several entries, or name its op otherwise
  (``all_gather_into_tensor`` is ``_allgather_base``), and a call in flight while the ring is
  read would leave a count off by one.
* Reading: at each snapshot (:meth:`ProcessGroupCollectives.read`), the whole ring as JSON,
  every process group's entries since the last read, per op: calls, bytes (the inputs' elements
  times their element size) and, where torch timed them (NCCL with timing on), their duration.
  An entry is counted once (the last ``record_id`` read is kept); entries the ring overwrote
  before they were read, or made while more wrapped calls ran than :data:`MAX_OWN_CALLS` keeps,
  are counted as ``dropped``, never guessed.

The time of these collectives is inside the phase that issued them (DDP's: ``step/backward``).
Nothing here raises into the program: a failure is ``unavailable_reason``.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import json
import os
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import MutableMapping
    from typing import Any

BUFFER_ENV = "TORCH_FR_BUFFER_SIZE"
#: The name torch read before ``TORCH_FR_BUFFER_SIZE``: a program that sets it keeps its value.
OLD_BUFFER_ENV = "TORCH_NCCL_TRACE_BUFFER_SIZE"
#: Entries the ring holds: torch 2.13's own default (older torch keeps none unless asked). Reading
#: a full ring of 2000 takes about 25 ms (the JSON dump and its parse) once per snapshot, every 5 s
#: by default; ten times the size costs ten times that, with the GIL held. 2000 holds 400
#: collectives a second between two snapshots: past that, the overwritten ones are ``dropped``.
BUFFER_SIZE = 2000
#: Wrapped calls whose spans are kept between two reads (see :class:`OwnCalls`).
MAX_OWN_CALLS = 4096
SOURCE = "torch flight recorder"

#: Bytes per element of c10's scalar types, as the recorder names them.
ELEMENT_BYTES = {
    "Bool": 1, "Byte": 1, "Char": 1, "Short": 2, "Int": 4, "Long": 8, "UInt16": 2, "UInt32": 4, "UInt64": 8,
    "Half": 2, "BFloat16": 2, "Float": 4, "Double": 8, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16,
    "QInt8": 1, "QUInt8": 1, "QInt32": 4, "Float8_e5m2": 1, "Float8_e4m3fn": 1, "Float8_e5m2fnuz": 1,
    "Float8_e4m3fnuz": 1, "Float8_e8m0fnu": 1,
}
#: The recorder's two rings: the CPU one (gloo and others) and, in a CUDA build, NCCL's.
_DUMPS = (("cpu", "_dump_fr_trace_json"), ("nccl", "_dump_nccl_trace_json"))


def ask_torch_to_record(environ: MutableMapping[str, str] = os.environ) -> None:
    """Turn the flight recorder on for process groups made from now on, unless the program
    chose its size itself."""
    if BUFFER_ENV not in environ and OLD_BUFFER_ENV not in environ:
        environ[BUFFER_ENV] = str(BUFFER_SIZE)


class OwnCalls:
    """The spans of the wrapped collectives not read past yet: ``[number, thread, start_ns,
    end_ns]``, end 0 while the call runs. Appended by the calling thread, dropped from the left by
    the reader (a deque does both safely across threads); bounded, the oldest go first."""

    def __init__(self) -> None:
        self.spans: collections.deque[list[int]] = collections.deque(maxlen=MAX_OWN_CALLS)
        self._numbers = itertools.count()

    def begin(self) -> list[int]:
        span = [next(self._numbers), threading.get_ident(), time.time_ns(), 0]
        self.spans.append(span)
        return span

    @staticmethod
    def end(span: list[int]) -> None:
        span[3] = time.time_ns()


class _Spans:
    """One read's spans, per thread, to ask whether an entry was made inside one."""

    def __init__(self, spans: list[list[int]]) -> None:
        by_thread: dict[str, list[list[int]]] = {}
        for span in spans:
            # The recorder writes the thread's id as C++ prints it: the number on Linux, hex elsewhere.
            for name in (str(span[1]), hex(span[1])):
                by_thread.setdefault(name, []).append(span)
        self._starts = {name: [s[2] for s in rows] for name, rows in by_thread.items()}
        self._rows = by_thread
        #: Entries made before this may belong to spans no longer kept (0: none were lost).
        self.unsure_before = 0

    def own(self, thread: str, created_ns: int) -> bool:
        starts = self._starts.get(thread)
        if not starts:
            return False
        i = bisect.bisect_right(starts, created_ns) - 1
        if i < 0:
            return False
        end = self._rows[thread][i][3]
        return end == 0 or created_ns <= end


def _entry_bytes(entry: dict[str, Any]) -> int | None:
    """The entry's input bytes; None where a dtype is one this table does not know."""
    total = 0
    for sizes, dtype in zip(entry.get("input_sizes") or [], entry.get("input_dtypes") or [], strict=False):
        size = ELEMENT_BYTES.get(dtype)
        if size is None:
            return None
        numel = 1
        for n in sizes:
            numel *= int(n)
        total += numel * size
    return total


def _turned_off(size: str | None) -> bool:
    """Whether the size torch reads keeps no ring (``0``, as the program may set it)."""
    try:
        return size is not None and int(size) <= 0
    except ValueError:
        return False  # torch warns and keeps its default


def _op_name(entry: dict[str, Any]) -> str:
    """``gloo:all_reduce`` -> ``all_reduce`` (the backend's prefix off)."""
    return str(entry.get("profiling_name") or "unknown").rsplit(":", 1)[-1] or "unknown"


class ProcessGroupCollectives:
    """What the flight recorder adds: ``document["auto_torch"]["process_group"]``."""

    def __init__(self, own: OwnCalls) -> None:
        self._own = own
        self._lock = threading.Lock()
        self.ops: dict[str, dict[str, Any]] = {}
        self.dropped = 0
        self.in_phases = 0  # entries our wrappers made: timed as collective/<op> already
        self.unavailable_reason: str | None = None
        #: Per ring, the next record_id to count; None: not known (entries before are not ours).
        self._next: dict[str, int | None] = {"cpu": 0, "nccl": 0}
        self._next_span = 0
        self._since_ns = 0  # entries made before this are not this process's to count
        self._off = False  # a fork child, a DataLoader worker: no ring to read

    def started_late(self) -> None:
        """The profiler came after torch.distributed was in use: count from now."""
        self._next = dict.fromkeys(self._next)
        self._since_ns = time.time_ns()

    def after_fork_child(self) -> None:
        """A fork child reads no ring: the one it inherited holds its parent's entries, and its
        lock may be held by a thread the fork did not copy (gloo's threads take it to retire an
        entry), where a read would hang forever. Its worker file is its own: nothing counted."""
        self._lock = threading.Lock()
        self.ops, self.dropped, self.in_phases = {}, 0, 0
        self._own.spans.clear()
        self.turn_off("a fork child: the flight recorder it inherited is its parent's")

    def turn_off(self, reason: str) -> None:
        self._off = True
        self.unavailable_reason = reason

    def section(self) -> dict[str, Any]:
        return {
            "source": SOURCE,
            "ops": {op: dict(row) for op, row in sorted(self.ops.items())},
            "in_phases": self.in_phases,
            "dropped": self.dropped,
            "unavailable_reason": self.unavailable_reason,
        }

    def read(self) -> None:
        """Count what the rings hold since the last read. Never raises."""
        if self._off or not self._lock.acquire(blocking=False):
            return  # a read is under way (a signal's snapshot during the thread's): it counts them
        try:
            self._read()
        except Exception as error:  # noqa: BLE001 - a guest never raises into its host
            self.unavailable_reason = f"reading it failed: {type(error).__name__}: {error}"
        finally:
            self._lock.release()

    def _read(self) -> None:
        c10d = sys.modules.get("torch._C._distributed_c10d")
        if c10d is None:
            self.unavailable_reason = "torch.distributed is not in use"
            return
        read_at = time.time_ns()
        dumps, failed = [], []
        for ring, name in _DUMPS:
            dump = getattr(c10d, name, None)
            if dump is None:
                continue
            try:
                dumps.append((ring, json.loads(dump(True, False))))  # every entry, not only active ones
            except Exception as error:  # noqa: BLE001 - one ring that fails leaves the other readable
                failed.append(f"reading the {ring} ring failed: {type(error).__name__}: {error}")
        if not dumps:
            self.unavailable_reason = "; ".join(failed) or "this torch has no flight recorder"
            return
        # Read after the rings: a wrapped call whose entry they hold has its span here already.
        spans = _Spans(list(self._own.spans))
        own = self._own.spans
        if own and own[0][0] > self._next_span:
            spans.unsure_before = own[0][2]  # spans were lost: an entry before the oldest kept is unsure
            self._next_span = own[0][0]  # counted as dropped once, here
        size = os.environ.get(BUFFER_ENV, os.environ.get(OLD_BUFFER_ENV))
        if not any(data.get("entries") for _, data in dumps) and _turned_off(size):
            self.unavailable_reason = f"torch's flight recorder is off ({BUFFER_ENV}={size})"
        else:  # an empty ring with a size: no collective yet (torch then writes no "entries")
            self.unavailable_reason = "; ".join(failed) or None
        for ring, data in dumps:
            self._count(ring, data.get("entries") or [], spans)
        while own and own[0][3] and own[0][3] < read_at:  # ended before the rings were read: done with
            self._next_span = own.popleft()[0] + 1

    def _count(self, ring: str, entries: list[dict[str, Any]], spans: _Spans) -> None:
        start = self._next[ring]
        fresh = [e for e in entries if start is None or int(e["record_id"]) >= start]
        if not fresh:
            return
        first = min(int(e["record_id"]) for e in fresh)
        if start is not None and first > start:
            self.dropped += first - start  # overwritten before this read
        self._next[ring] = max(int(e["record_id"]) for e in fresh) + 1
        for entry in fresh:
            created = int(entry.get("time_created_ns") or 0)
            if created < self._since_ns:
                continue
            if spans.own(str(entry.get("thread_id")), created):
                self.in_phases += 1
                continue
            if created < spans.unsure_before:
                self.dropped += 1
                continue
            row = self.ops.setdefault(
                _op_name(entry), {"calls": 0, "bytes": 0, "unsized_calls": 0, "duration_ns": None, "timed_calls": 0}
            )
            row["calls"] += 1
            size = _entry_bytes(entry)
            if size is None:
                row["unsized_calls"] += 1
            else:
                row["bytes"] += size
            duration_ms = entry.get("duration_ms")
            if isinstance(duration_ms, (int, float)) and duration_ms >= 0:
                row["duration_ns"] = (row["duration_ns"] or 0) + round(duration_ms * 1e6)
                row["timed_calls"] += 1
