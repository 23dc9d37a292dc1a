"""The story's model: what the text, JSON, HTML and Perfetto outputs of a traced run show.

Times are nanoseconds on the run's one timeline (the reference host's monotonic clock, see
:mod:`.clocks`); ``None`` is "could not measure", never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TracedProcess:
    """One worker with a trace: who it is and how many of its spans the file kept."""

    index: int
    #: Its position among the run's workers (the Perfetto export's process number, less one).
    worker: int
    role: str
    host: str
    pid: int
    rank: int | None
    label: str
    spans_kept: int
    spans_recorded: int
    links: int
    open_entries: int
    #: Its first span's start and its last known moment (last span end, or a killed worker's
    #: last sign of life), on the run's timeline.
    start_ns: int
    end_ns: int
    #: It died with entries open: those are drawn open to ``end_ns``, marked so.
    killed: bool
    #: Its host's clock offset onto the run's timeline (``t_timeline = t_own + offset_ns``).
    offset_ns: int = 0


@dataclass
class HostClock:
    """How one host's monotonic clock maps onto the reference host's: ``t_ref = t + offset_ns``."""

    host: str
    offset_ns: int
    #: The true offset lies within ``[low_ns, high_ns]``; None: unbounded on that side.
    low_ns: int | None
    high_ns: int | None
    #: Where the estimate came from: ``"reference"``, ``"clock pairs"``, ``"clock pairs and links"``,
    #: ``"links"``.
    source: str
    #: Matched links that bound it, and a sentence when the clock pairs and the links disagree.
    links: int = 0
    disagreement: str | None = None

    @property
    def uncertainty_ns(self) -> int | None:
        """Half the width of the bounds; None when one side is unbounded."""
        if self.low_ns is None or self.high_ns is None:
            return None
        return (self.high_ns - self.low_ns) // 2


@dataclass
class Segment:
    """One piece of the critical path: a process's thread running (``kind`` ``"run"``), or
    woken late after the item it waited for was signalled (``"wake"``)."""

    kind: str
    process: int
    thread: str
    start_ns: int
    end_ns: int
    phase: str | None
    #: For a segment that ends at a jump along a link: the channel and key.
    channel: str | None = None
    key: str | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class PathShare:
    """The critical path's time summed per process and phase."""

    process: int
    phase: str | None
    duration_ns: int
    fraction: float


@dataclass
class CriticalPath:
    start_ns: int
    end_ns: int
    segments: list[Segment]
    shares: list[PathShare]
    #: Links followed (jumps from a wait to its signal).
    jumps: int
    #: The process whose ring dropped the spans the path would have gone back into (it begins at
    #: the end of a wait on that process's older signal); None when the path is whole.
    unknown_before: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class Arrow:
    """A matched link, signal to wait, on the run's timeline. ``backwards``: the wait ends
    before its signal even after the clocks' offsets: drawn only with the disagreement said."""

    channel: str
    key: str
    from_process: int
    from_thread: int
    from_ns: int
    to_process: int
    to_thread: int
    to_ns: int
    on_path: bool
    backwards: bool


@dataclass
class SkewPhase:
    """Arrivals at one collective phase (``sync``) across ranks, its n-th entry in each rank
    being one step: the straggler arrives last."""

    phase: str
    steps: int
    ranks: int
    #: Per step, latest arrival minus the median arrival, summed: what the others waited.
    late_ns: int
    straggler_rank: int | None
    straggler_process: int | None
    #: Of the steps, how many the straggler arrived last at.
    straggler_steps: int
    mean_spread_ns: float
    #: Above this the host clocks cannot order the arrivals (cross-host uncertainty).
    uncertainty_ns: int | None


@dataclass
class LifecycleSegment:
    """One interval of a channel's request lifecycles (``begin -> admitted``), over the
    complete requests that had it."""

    name: str
    total_ns: int
    count: int
    mean_ns: float
    p50_ns: int
    p95_ns: int
    max_ns: int


@dataclass
class LifecycleChannel:
    """A channel's request lifecycles (``trace_begin`` ... ``trace_end``, keyed by request)."""

    channel: str
    #: Complete lifecycles: a ``begin``, then the marks, then an ``end``, in order on the timeline.
    requests: int
    #: Keys with no ``begin`` or no ``end`` (in flight when the files were written).
    incomplete: int
    #: Keys whose checkpoints are out of order on the timeline (or doubled): left out.
    out_of_order: int
    total_ns: int
    p50_ns: int | None
    p95_ns: int | None
    max_ns: int | None
    segments: list[LifecycleSegment]
    #: The longest requests: ``(key, ns, process of its begin, process of its end)``.
    slowest: list[tuple[str, int, int, int]]


@dataclass
class Finding:
    """One sentence with the figures it came from, ranked by ``cost_ns`` (None: unknown).

    ``removable_ns`` is the part of the cost that is waiting someone can remove (another process
    waiting for this one on the critical path, a late wake-up, a late arrival at a collective,
    off-CPU time on the critical path); None where the finding only says where the time went
    (a phase that is big is not a cost to remove). ``--fail-over`` gates on it alone.
    """

    kind: str
    text: str
    cost_ns: int | None
    cost_fraction: float | None
    process: int | None = None
    figures: dict[str, float | int | str | None] = field(default_factory=dict)
    removable_ns: int | None = None
    #: ``removable_ns`` over the run's traced length.
    removable_fraction: float | None = None


@dataclass
class LaneSpan:
    start_ns: int
    end_ns: int
    phase: str
    thread: int
    cpu_ns: int | None
    #: Still open when the file was written: drawn to the process's last known moment.
    open: bool = False


@dataclass
class StoryLane:
    """What the HTML draws of one process: the spans kept for drawing (the longest, when there
    are more than the page can hold)."""

    process: int
    threads: list[str]
    spans: list[LaneSpan]
    spans_left_out: int


@dataclass
class Story:
    run_start_ns: int
    run_end_ns: int
    processes: list[TracedProcess]
    hosts: list[HostClock]
    spans_kept: int
    spans_recorded: int
    path: CriticalPath | None
    findings: list[Finding]
    skew: list[SkewPhase]
    arrows: list[Arrow]
    #: Matched links left out of ``arrows`` (beyond what the outputs draw).
    arrows_left_out: int
    notes: list[str]
    #: The wall-clock time (unix ns) of the timeline's 0, from the reference host's clock pairs;
    #: None when it has none.
    timeline_unix_ns: int | None = None
    #: Request lifecycles, per channel (empty where no process called ``trace_begin``).
    lifecycles: list[LifecycleChannel] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lanes: list[StoryLane] | None = None
        self._read_lanes: Callable[[], list[StoryLane]] | None = None

    def lanes_from(self, read: Callable[[], list[StoryLane]]) -> None:
        """Where :attr:`lanes` come from: read on first use (their spans are read again from the
        files), so a text report, which draws none, never reads them."""
        self._lanes, self._read_lanes = None, read

    @property
    def lanes(self) -> list[StoryLane]:
        """What the HTML draws of each process drawn (the critical path's first)."""
        if self._lanes is None:
            self._lanes = self._read_lanes() if self._read_lanes is not None else []
        return self._lanes

    @property
    def duration_ns(self) -> int:
        return self.run_end_ns - self.run_start_ns

    @property
    def kept_line(self) -> str:
        """``N of M spans kept (the oldest dropped)``, or that all were kept."""
        from ... import format as fmt

        if self.spans_kept >= self.spans_recorded:
            return f"{fmt.count(self.spans_kept)} of {fmt.count(self.spans_recorded)} spans kept"
        return f"{fmt.count(self.spans_kept)} of {fmt.count(self.spans_recorded)} spans kept (the oldest dropped)"
