"""The trace's links and request lifecycles: what a traced profiler stamps besides its spans.

``signal``/``wait_on`` mark the two ends of a hand-over between workers; ``trace_begin``,
``trace_mark`` and ``trace_end`` the checkpoints of one request across the processes that own
its steps. Each is one record in the recorder's link ring (in C, mirrored in the live file),
and a no-op at the cost of one check when tracing is off.
"""

from __future__ import annotations

from ._error_text import message

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from . import _phases

#: Between a mark's channel and its name in the link ring's channel text.
_MARK_SEPARATOR = "\x1f"


def lifecycle_admits(key: object, sample: float) -> bool:
    """Whether request ``key`` is among the ``sample`` share whose marks are kept: decided by a
    hash of the key (0.10.0's: BLAKE2b of its text), so every process agrees without sharing
    any state."""
    if sample <= 0.0:
        return False
    import hashlib

    digest = hashlib.blake2b(str(key).encode("utf-8", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 10_000 < sample * 10_000


class TraceLinks:
    """The link calls of :class:`~.profiler.Profiler` (its base: they need its recorder)."""

    _tracing: bool
    recorder: _phases.Recorder | None

    def _record_error(self, text: str) -> None:
        raise NotImplementedError

    def signal(self, channel: str, key: object) -> None:
        """Mark that item ``key`` on ``channel`` is available from now on: call it just before the
        put or send that publishes it (a consumer may return from its get before the line after
        the put runs). Pairs with :meth:`wait_on` in the consumer; ``key`` is compared as
        ``str(key)``. A no-op, at the cost of one check, when tracing is off."""
        if self._tracing:
            self._link(0, channel, key)

    def wait_on(self, channel: str, key: object) -> None:
        """Mark that this worker waited for item ``key`` on ``channel``: call it right after the
        blocking get returns, so its time is when the wait ended. A no-op when tracing is off."""
        if self._tracing:
            self._link(1, channel, key)

    def trace_begin(self, channel: str, key: object) -> None:
        """Mark that request ``key`` on ``channel`` was submitted: the first checkpoint of its
        lifecycle. :meth:`trace_mark` adds named ones and :meth:`trace_end` closes it, each in
        the process that owns that step (the report splits each complete lifecycle into the
        intervals between its checkpoints, ``begin -> admitted -> ... -> end``). A no-op when
        tracing is off."""
        if self._tracing:
            self._link(2, channel, key)

    def trace_mark(self, channel: str, key: object, name: str, sample: float = 1.0) -> None:
        """Mark checkpoint ``name`` of request ``key`` on ``channel``. With ``sample`` below 1,
        only that share of the keys is marked, chosen by a hash of the key: every process keeps
        or drops the same requests, so no kept lifecycle lacks a checkpoint. The channel and
        the name share the 56 bytes a channel is kept to."""
        if self._tracing:
            self._link(3, channel, key, name, sample)

    def trace_end(self, channel: str, key: object) -> None:
        """Mark that the response for request ``key`` on ``channel`` arrived: its lifecycle's
        last checkpoint. A no-op when tracing is off."""
        if self._tracing:
            self._link(4, channel, key)

    def _link(self, kind: int, channel: object, key: object, name: object = None, sample: float = 1.0) -> None:
        # Everything that runs the user's values (str(), a comparison) is inside the try.
        try:
            text = str(channel)
            if name is not None:  # a mark: kept for the sampled keys, its name after the channel's
                if sample < 1.0 and not lifecycle_admits(key, sample):
                    return
                text = f"{text.replace(_MARK_SEPARATOR, ' ')}{_MARK_SEPARATOR}{name}"
            self.recorder.trace_link(kind, text, str(key))  # type: ignore[union-attr]
        except Exception as error:  # noqa: BLE001 - a guest never raises into its host (a key whose str() fails)
            self._record_error(f"trace link: {type(error).__name__}: {message(error)}")
