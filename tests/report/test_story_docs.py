"""Traced worker documents for the story's tests, and the checks of the ``trace`` section.

:class:`TracedWorker` is a :class:`~.builders.SimWorker` that also records what
``Profiler(trace=True)`` writes: one exact span per closed phase entry (on the host's monotonic
clock), the entries still open, and the ``signal`` / ``wait_on`` links, each with the innermost
open phase. Time is one truth clock for the whole simulated run (``now``, ns since the run
began); a host's monotonic clock reads ``truth + host.mono_base`` and its wall clock
``T0 + truth + host.wall_error``, so a test knows every offset exactly.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lp_report_builders import MS, T0, US, SimWorker

from lineprofiler.runfiles import tracesection, workerfile


@dataclass(frozen=True)
class Host:
    name: str
    #: Its monotonic clock at the run's truth time 0 (hosts boot at different times).
    mono_base: int = 1_000_000 * MS
    #: How far its wall clock is ahead of the truth (NTP's error).
    wall_error: int = 0
    #: How long reading the two clocks back to back took.
    pair_uncertainty: int = 1 * US


class TracedWorker:
    def __init__(
        self,
        role: str,
        host: Host,
        *,
        start: int = 0,
        rank: int | None = None,
        pid: int | None = None,
        measure_cpu: bool = True,
    ) -> None:
        self.host = host
        self.start = start
        self.sim = SimWorker(
            role,
            host=host.name,
            rank=rank,
            pid=pid,
            start_unix_ns=T0 + start + host.wall_error,
            measure_cpu=measure_cpu,
        )
        self.spans: list[list[int]] = []
        self.links: list[list[Any]] = []
        self.stack: list[tuple[str, int, int]] = []
        self.opened: list[list[int]] = []
        self.pairs = [self.pair()]
        self.dropped = 0

    @property
    def pid(self) -> int:
        return self.sim.pid

    @property
    def now(self) -> int:
        """The truth time."""
        return self.start + self.sim.clock_ns

    def mono(self, truth: int | None = None) -> int:
        return self.host.mono_base + (self.now if truth is None else truth)

    def pair(self) -> list[int]:
        return [self.mono(), T0 + self.now + self.host.wall_error, self.host.pair_uncertainty]

    def work(self, ns: int, cpu_ns: int | None = None) -> None:
        self.sim.work(ns, cpu_ns)

    def wait(self, ns: int) -> None:
        self.sim.wait(ns)

    def wait_until(self, truth: int) -> None:
        if truth > self.now:
            self.sim.wait(truth - self.now)

    def _id(self, name: str) -> int:
        path = f"{self.stack[-1][0]}/{name}" if self.stack else name
        self.sim._ids.setdefault(path, len(self.sim._ids) + 2)
        return self.sim._ids[path]

    @contextlib.contextmanager
    def phase(self, name: str, *, sync: bool = False) -> Iterator[None]:
        phase_id = self._id(name)
        path = f"{self.stack[-1][0]}/{name}" if self.stack else name
        start, cpu = self.mono(), self.sim.cpu_clock_ns
        self.stack.append((path, phase_id, start))
        with self.sim.phase(name, sync=sync):
            yield
        self.stack.pop()
        self.spans.append([start, self.mono(), phase_id, 0, self.sim.cpu_clock_ns - cpu])

    def open(self, name: str) -> None:
        phase_id = self._id(name)
        path = f"{self.stack[-1][0]}/{name}" if self.stack else name
        self.stack.append((path, phase_id, self.mono()))
        self.sim.open(name)
        self.opened.append([self.mono(), phase_id, 0])

    def _inner(self) -> int:
        return self.stack[-1][1] if self.stack else -1

    def signal(self, channel: str, key: object) -> None:
        self.links.append(["signal", channel, str(key), self.mono(), 0, self._inner()])

    def wait_on(self, channel: str, key: object) -> None:
        self.links.append(["wait", channel, str(key), self.mono(), 0, self._inner()])

    def drop_oldest(self, n: int) -> None:
        """The ring overwrote the oldest ``n`` spans."""
        self.spans.sort(key=lambda s: s[0])
        del self.spans[:n]
        self.dropped += n

    def trace(self) -> dict[str, Any]:
        spans = sorted(self.spans, key=lambda s: s[0])
        return {
            "clock": "monotonic",
            "clock_pairs": self.pairs + [self.pair()],
            "capacity": 200_000,
            "recorded": len(spans) + self.dropped,
            "dropped": self.dropped,
            "threads": [{"ident": 140_000_000 + self.pid, "native_id": self.pid, "name": "MainThread"}],
            "spans": spans,
            "open": self.opened,
            "links_capacity": 50_000,
            "links_recorded": len(self.links),
            "links_dropped": 0,
            "links": self.links,
        }

    def document(self, **kwargs: Any) -> dict[str, Any]:
        document = self.sim.document(**kwargs)
        document["trace"] = self.trace()
        return document

    def write(self, run_dir: Path, **kwargs: Any) -> Path:
        path = self.sim.path_in(run_dir)
        workerfile.write_worker_file(path, self.document(**kwargs))
        return path


def write_all(run_dir: Path, workers: list[TracedWorker], **kwargs: Any) -> Path:
    for worker in workers:
        worker.write(run_dir, **kwargs)
    return run_dir


# -- the trace section as the files hold it ------------------------------------------------


def _one(tmp_path: Path) -> tuple[TracedWorker, Path]:
    worker = TracedWorker("actor", Host("node07"))
    with worker.phase("act"):
        worker.work(5 * MS)
        worker.signal("batches", 1)
    return worker, worker.write(tmp_path)


def test_a_trace_round_trips_and_is_skipped_by_the_merge_reader(tmp_path):
    worker, path = _one(tmp_path)
    assert workerfile.read_worker_file(path)["trace"] == worker.trace()
    skipped = workerfile.read_worker_file(path, skip_samples=True)
    assert skipped["trace"] is workerfile.TRACE_SKIPPED
    assert skipped["phases"] == workerfile.read_worker_file(path)["phases"]
    columns = tracesection.read_trace(path)
    assert columns is not None and list(columns.spans[0]) == [s[0] for s in worker.trace()["spans"]]
    assert columns.links == [tuple(link) for link in worker.trace()["links"]]


def test_a_file_without_trace_is_written_as_before(tmp_path):
    sim = SimWorker("actor")
    with sim.phase("act"):
        sim.work(MS)
    document = sim.document()
    path = sim.path_in(tmp_path)
    workerfile.write_worker_file(path, document)
    assert b'"layout":"samples-last"' in path.read_bytes() and b'"trace"' not in path.read_bytes()
    assert tracesection.read_trace(path) is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.update(clock="realtime"), "'trace.clock' is 'realtime'"),
        (lambda t: t["spans"].append([1, 2, 3]), "'trace.spans' is not a list of"),
        (lambda t: t["spans"].append([1.5, 2, 3, 0, -1]), "'trace.spans' is not a list of"),
        (lambda t: t["spans"].append([2**63, 2, 3, 0, -1]), "'trace.spans' is not a list of"),
        (lambda t: t.update(dropped=-1), "'trace.dropped' is not a count"),
        (lambda t: t.update(threads={}), "'trace.threads' is not a list"),
    ],
)
def test_a_malformed_trace_is_refused_in_one_line(tmp_path, change, message):
    worker, path = _one(tmp_path)
    document = worker.document()
    change(document["trace"])
    path.write_text(json.dumps(document))
    with pytest.raises(workerfile.WorkerFileError) as caught:
        tracesection.read_trace(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    # The worker itself is still read: a bad trace costs the story only.
    assert workerfile.read_worker_file(path)["identity"]["pid"] == worker.pid
