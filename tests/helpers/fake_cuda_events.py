"""A deterministic stand-in for ``torch.cuda.Event``: the GPU clock moves only when a test says.

There is no NVIDIA GPU on the machines that run this suite; the event pool of
``accounting/gpu_events.py`` is written against a four-call interface (make an event, record it,
query it, elapsed time) so that this fake drives it. An event records the fake clock's time and
answers ``query()`` False for its first ``ready_after`` queries after each record.
"""

from __future__ import annotations


class FakeEvent:
    def __init__(self, source: FakeEvents) -> None:
        self._source = source
        self.recorded_ns: int | None = None
        self._queries_left = 0

    def record(self) -> None:
        if self._source.record_error is not None:
            raise self._source.record_error
        self.recorded_ns = self._source.clock_ns
        self._queries_left = self._source.ready_after

    def query(self) -> bool:
        self._source.queries += 1
        if self.recorded_ns is None or self._queries_left > 0:
            self._queries_left -= 1
            return False
        return True

    def elapsed_time(self, end: FakeEvent) -> float:
        # torch refuses incomplete events: so does the fake, so a read before query() is caught.
        assert self.query() and end.query(), "elapsed_time on an event not yet complete"
        assert self.recorded_ns is not None and end.recorded_ns is not None
        return (end.recorded_ns - self.recorded_ns) / 1e6  # milliseconds, as torch gives


class FakeEvents:
    """The event source: ``gpu_work(ns)`` advances the fake GPU clock."""

    name = "fake"

    def __init__(self, ready_after: int = 0) -> None:
        self.clock_ns = 0
        self.ready_after = ready_after
        self.created = 0
        self.queries = 0
        self.record_error: Exception | None = None

    def new_event(self) -> FakeEvent:
        self.created += 1
        return FakeEvent(self)

    def gpu_work(self, ns: int) -> None:
        self.clock_ns += ns
