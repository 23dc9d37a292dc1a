"""The report as data: one typed model per block, computed once from a merged run.

Every renderer reads these and nothing else: ``report/render/text.py`` prints them, ``report/render/json.py``
serialises them (the field names here are the JSON keys), ``report/html/`` draws them. So a
number has one computation and appears the same wherever it is shown.

Conventions, which the JSON schema inherits: durations and instants are integer or float
nanoseconds (``_ns``; instants are unix time), sizes are bytes (``_bytes``), rates are per
second (``_per_s``), shares and fractions are 0..1, GPU utilisation is a percentage 0..100
(as NVML reports it). ``None`` is "could not measure", never zero. Names (roles, hosts,
phases) are the raw strings from the worker files: each renderer makes them safe for its
medium.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model_sampled_lines import SampledLinesBlock
from .model_source import Source, Split
from .model_steps import LoaderWorkers, StepPart, StepParts, UnphasedCollectives, UnphasedOp
from .model_windows import BackendWindow

#: What ``report --json`` calls its document, and the version of its schema.
KIND = "lineprofiler-report"
VERSION = 1


# -- shared pieces -------------------------------------------------------------------------------


@dataclass
class Series:
    """A quantity over the run's wall clock, reduced to columns of equal width: the lowest and
    highest value seen in each column (``None`` where none was), so a one-sample spike
    survives any downsampling. ``start_ns`` is the first column's left edge (unix ns)."""

    start_ns: int
    column_ns: float
    low: list[float | None]
    high: list[float | None]


@dataclass
class Bucket:
    """One histogram bucket: ``low_ns <= duration < high_ns`` (``high_ns`` None: overflow)."""

    index: int
    low_ns: int
    high_ns: int | None
    count: int


@dataclass
class Reason:
    """Why some processes have no measurement of a block, and how many."""

    reason: str
    processes: int


# -- header and attempts -------------------------------------------------------------------------


@dataclass
class Attempt:
    """An attempt of the run directory that the report names but does not merge (superseded,
    concurrent, or the newest when another was chosen), or a group of generated run ids merged
    into the attempt shown (``Header.merged``)."""

    #: ``run_id``, with ``#attempt`` appended past 0 (as the header prints it).
    name: str
    run_id: str
    attempt: int
    #: Worker files, and per role how many.
    files: int
    roles: dict[str, int]
    start_ns: int
    end_ns: int
    #: How long it ran: from its earliest start to its newest flush or exit.
    span_ns: int
    #: ``newest``, ``concurrent`` (another job overlapping the newest attempt), ``superseded``
    #: (ended before the newest began) or ``restarted`` (a launcher restarted the job since).
    status: str
    #: The names of the other generated run ids merged into it by time.
    merged: list[str]


@dataclass
class Header:
    run_dir: str
    #: The display name of the attempt reported (``run_id``, ``#attempt`` appended past 0).
    run: str
    run_id: str
    attempt: int
    runtime_ns: int
    start_ns: int
    end_ns: int
    processes: int
    #: role -> worker files, busiest role first.
    roles: dict[str, int]
    hosts: list[str]
    ranks: list[int]
    job_ids: list[str]
    launchers: list[str]
    #: Earlier attempts (and restarted ones), newest first: named, never merged.
    superseded: list[Attempt]
    #: Other jobs (explicit run ids) overlapping this attempt in time: named, never merged.
    concurrent: list[Attempt]
    #: The groups of generated run ids merged into this attempt because they overlap it in time.
    merged: list[Attempt]
    #: What the attempt reported is: ``newest``, or, chosen with ``--attempt``, ``concurrent``,
    #: ``superseded`` or ``restarted``.
    status: str
    #: The newest attempt, when another one is reported.
    newest: Attempt | None
    #: Per role, its fork children that never profiled anything ("forked, not profiled"): not
    #: counted in ``roles``.
    unprofiled: dict[str, int] = field(default_factory=dict)
    #: The code the processes ran: each distinct ``(commit, dirty files, diff sha)`` the worker
    #: files recorded, with the roles that ran it; empty where none could say.
    sources: list[Source] = field(default_factory=list)


# -- roles ----------------------------------------------------------------------------------------

#: A process is a straggler past this multiple of the others' median time per unit of work (an
#: entry of its role's loop, or a unit counted in it); below it is noise (1.04: 40 ms in a second).
STRAGGLER_FROM = 1.10


@dataclass
class Process:
    """One worker file of the attempt, as the charts and the JSON name it."""

    label: str
    role: str
    host: str
    pid: int
    rank: int | None
    #: Wall time of its top-level phases (open entries' time so far included).
    busy_ns: int
    lifetime_ns: int
    has_data: bool
    #: Units of work it did (``Role.unit``); its median loop entry over its units per entry.
    work: int | None = None
    per_unit_ns: float | None = None


@dataclass
class UnevenWork:
    """The most and the fewest units of work (``Role.unit``) one process of a role did."""

    most: int
    fewest: int
    most_label: str
    fewest_label: str


@dataclass
class PhaseShare:
    path: str
    #: The path's shortest suffix unique within the role.
    name: str
    #: Self time summed over the role's processes, entries still open included.
    self_ns: int
    #: ``self_ns`` over the role's phase time.
    share: float
    open_entries: int


@dataclass
class Role:
    name: str
    #: Its processes, less the fork children that never profiled anything (``unprofiled``).
    processes: int
    without_data: int
    imbalance: float | None
    #: The sum of the role's self times (what ``share`` is a share of).
    phase_time_ns: int
    busy_ns: int
    lifetime_ns: int
    mean_busy_ns: float | None
    #: busy over lifetime; None when no lifetime was recorded.
    busy_fraction: float | None
    #: Every phase with self time, most first.
    phases: list[PhaseShare]
    #: The busiest process (None: no process recorded data).
    busiest: Process | None
    members: list[Process]
    #: Fork children of its processes that inherited the profiler and recorded nothing: they
    #: ran, unprofiled, and are in none of its numbers.
    unprofiled: int = 0
    straggler_from: float = STRAGGLER_FROM
    #: Work counted in ``"entry"`` (of ``unit_phase``, its loop), ``"counter"`` (of ``unit_counter``).
    unit: str | None = None
    unit_phase: str | None = None
    unit_counter: str | None = None
    #: ``straggler_from`` raised to the histograms' own error: ``(1 + RELATIVE_ERROR) ** 2``.
    straggler_bar: float = STRAGGLER_FROM
    #: The process slower per unit of work past the bar; its time per unit over the others' median.
    straggler: Process | None = None
    straggler_ratio: float | None = None
    uneven_work: UnevenWork | None = None
    #: Where the role's work first divides (:class:`Split`); None: its top level already does.
    split: Split | None = None
    #: A training loop's step and its parts (:class:`.model_steps.StepParts`); None: no ``step``.
    step_parts: StepParts | None = None
    #: Collectives no phase names, from torch's flight recorder; None: none were recorded.
    collectives: UnphasedCollectives | None = None

    def rest(self, shown: int) -> tuple[int, int, float]:
        """``(phases, self_ns, share)`` of the phases past the first ``shown``."""
        rest = self.phases[shown:]
        self_ns = sum(p.self_ns for p in rest)
        return len(rest), self_ns, self_ns / self.phase_time_ns if self.phase_time_ns > 0 else 0.0


# -- phases, counters, iterations -----------------------------------------------------------------


@dataclass
class Counter:
    name: str
    #: The phase open when it was counted; "" for none.
    phase: str
    total: int
    #: Per second of the phase's wall time over the role's processes; with no phase, per
    #: second of the role's summed process lifetime.
    per_s: float | None
    #: The phase's wall time over the total; None with no phase.
    each_ns: float | None
    #: What ``per_s`` is per second of: ``"phase"`` (its wall time) or ``"lifetime"`` (the
    #: role's process lifetime, for counters counted with no phase open).
    per: str
    #: The least and the most one ``count()`` added, over the role's processes; None: not
    #: recorded (files written before it was kept).
    spread: tuple[int, int] | None = None


@dataclass
class DominantPhase:
    role: str
    path: str
    entries: int
    self_ns: int
    wall_ns: int
    #: Share of the wall time its thread was off-CPU; None: CPU time not measured.
    wait: float | None
    mean_ns: float | None
    min_ns: int | None
    max_ns: int | None
    p50_ns: float | None
    p95_ns: float | None
    p99_ns: float | None
    histogram: list[Bucket]
    counters: list[Counter]
    #: Why its threads were not running (:class:`.model_cpu.OffCpuSplit`); None: ``off_cpu_reason`` says why.
    off_cpu: Any = None
    off_cpu_reason: str | None = None
    #: GPU time of its gpu=True entries (:mod:`.model_gpu`); None: ``gpu_reason`` says why.
    gpu_ns: int | None = None
    gpu: Any = None  # a model_gpu.PhaseGpuCounts where gpu_ns is known
    gpu_reason: str | None = None


@dataclass
class Dominant:
    several_roles: bool
    phases: list[DominantPhase]
    #: Per role with GPU time and a ``step`` phase: a model_gpu.StepGpuIdle.
    gpu_idle: list[Any] = field(default_factory=list)
    #: Why the gpu=True phases asked for have no GPU time (no CUDA device...); None: not asked, or measured.
    gpu_note: str | None = None


@dataclass
class CounterGroup:
    role: str
    phase: str
    counters: list[Counter]


@dataclass
class Counters:
    """Counters whose phase is not a row of DOMINANT PHASES."""

    several_roles: bool
    groups: list[CounterGroup]


@dataclass
class IterationRole:
    role: str
    #: The role's own loop: the phase its iterations are entries of.
    phase: str
    #: Why this phase: ``window_phase``, or how it was picked.
    why: str
    entries: int
    mean_ns: float | None
    p50_ns: float | None
    p95_ns: float | None
    p99_ns: float | None
    histogram: list[Bucket]


@dataclass
class Iterations:
    #: The first role's phase and why (each role has its own: ``roles[i].phase``).
    phase: str
    why: str
    roles: list[IterationRole]

    @property
    def one_phase(self) -> bool:
        """Every role's iterations are entries of the same phase, picked the same way."""
        return len({(r.phase, r.why) for r in self.roles}) <= 1


# -- resources --------------------------------------------------------------------------------------


@dataclass
class IoPhase:
    role: str
    path: str
    read_bytes: int
    write_bytes: int
    cache_read_bytes: int
    #: Entries whose boundary read failed: nothing recorded for them.
    failed: int
    entries: int
    #: (read + write) over the measured entries' wall time; None: no time passed.
    bytes_per_s: float | None


@dataclass
class IoByPhase:
    several_roles: bool
    phases: list[IoPhase]


@dataclass
class IoTimeline:
    """When the sampled bytes moved: a grid of slots over the run (one per sampling interval,
    coarser on long runs)."""

    slot_ns: int
    #: The coarsest sampling interval of the workers.
    interval_ns: int
    #: Mean bytes per slot written, in the text's sparkline bins.
    write_bins: list[float]
    peak_write_per_s: float
    #: Rates per layer (``disk_read``, ``cache_read``, ``write``), bytes per second per slot.
    rates: dict[str, Series]


@dataclass
class SampledIo:
    #: Processes with a samples object, and of them those with I/O rows.
    processes: int
    measured_processes: int
    #: Why processes lack I/O samples.
    reasons: list[Reason]
    #: Sample files that could not be used, one line each.
    problems: list[str]
    disk_read_bytes: int
    cache_read_bytes: int
    write_bytes: int
    #: Whether rates are known at all (a timeline exists); a rate is None when no slot moved.
    rates_known: bool
    disk_read_per_s: float | None
    write_per_s: float | None
    timeline: IoTimeline | None
    #: False: the samples carry no phase, so the share under no phase is unknown.
    phase_tracked: bool
    #: Share of the bytes that moved with no phase open (None: no bytes moved).
    no_phase_share: float | None
    valid_intervals: int
    dropped_intervals: int
    dropped_failed: int
    dropped_reaped: int
    dropped_unknown: int
    own_write_bytes: int
    own_write_chars: int
    own_read_chars: int


@dataclass
class ProcessMemory:
    label: str
    role: str
    peak_bytes: int
    #: When the peak was reached, from the run's start (None: the run has no length).
    peak_at_ns: int | None
    slope_bytes_per_s: float | None
    rss: Series | None


@dataclass
class MemoryRole:
    role: str
    processes: int
    peak_bytes: int
    #: The steepest per-process RSS slope past its warm-up (None: none ran long enough past it).
    trend_bytes_per_s: float | None


@dataclass
class Memory:
    processes: int
    reasons: list[Reason]
    roles: list[MemoryRole]
    #: Summed RSS of all processes in the text's sparkline bins (None: not computable).
    total_bins: list[float] | None
    largest: ProcessMemory | None
    members: list[ProcessMemory]
    #: A trend leaves out the first ``trend_warmup_share`` of each process's samples (warm-up)
    #: and needs ``trend_min_ns`` after it.
    trend_warmup_share: float = 0.0
    trend_min_ns: int = 0


@dataclass
class DeviceUse:
    """One GPU: a (host, NVML index) pair. Percentages are 0..100."""

    host: str
    index: int
    name: str | None
    #: Mean busy percent (None: never measured).
    busy: float | None
    #: Mean summed share of this run's pids (None: n/a, nothing attributed).
    this_run: float | None
    buckets: int
    pids_attributed: int
    busy_series: Series | None = None
    this_run_series: Series | None = None

    @property
    def idle(self) -> float | None:
        return None if self.busy is None else max(0.0, 100.0 - self.busy)


@dataclass
class GpuSummary:
    devices: list[DeviceUse]
    nvml_available: bool
    #: Why NVML was unavailable (the most common reason).
    nvml_reason: str | None
    #: Workers whose NVML was unavailable while others' was not.
    nvml_missing_workers: int
    workers: int
    vram_allocated_peak: int | None
    vram_reserved_peak: int | None
    vram_allocated_sum: int | None
    vram_reserved_sum: int | None
    vram_processes: int
    vram_reason: str | None


# -- a timeline of phases (per process) -------------------------------------------------------------


@dataclass
class Span:
    """One stretch of time a process spent inside a phase (unix ns)."""

    path: str
    start_ns: int
    end_ns: int


@dataclass
class Lane:
    """A process's phase occupancy over the run: what was open when."""

    process: Process
    spans: list[Span]


@dataclass
class Stall:
    """A stretch when every sampled process of a role was outside all phases or in a phase
    that mostly waits (its wait share over the run above ``Timeline.wait_threshold``)."""

    #: From the run's start.
    start_ns: int
    length_ns: int
    #: The phases open during it, ``""`` standing for "outside all phases".
    phases: list[str]


@dataclass
class TimelineRole:
    """A role's phase occupancy cut into ``len(columns)`` equal columns of the run."""

    role: str
    processes: int
    #: Per column the symbol of the phase most of the role's processes were in
    #: (``Timeline.OUTSIDE``: outside all phases; ``" "``: no process sampled).
    columns: str
    #: Symbol -> phase path, most occupied first.
    legend: dict[str, str]
    #: Share of the role's samples per phase path (``""``: outside all phases).
    occupancy: dict[str, float]
    #: Every stall found, longest first.
    stalls: list[Stall]
    skipped_ticks: int
    ticks: int
    #: Phases that took at least ``Timeline.UNSEEN_SHARE`` of the role's lifetime by the exact
    #: phase totals but that the samples all but missed (they ran between samples): path ->
    #: exact share. Drawn columns cannot show them; the legend names them.
    unseen: dict[str, float] = field(default_factory=dict)


@dataclass
class Timeline:
    OUTSIDE = "."
    UNSEEN_SHARE = 0.10

    start_ns: int
    column_ns: float
    hz: float
    roles: list[TimelineRole]
    #: A phase counts as waiting when its wait share (1 - CPU / wall) over the whole run, in
    #: the role, exceeds this: per-span CPU is not sampled, so the run's share stands for it.
    wait_threshold: float = 0.9
    #: Stalls shorter than this are not named.
    min_stall_ns: int = 0
    #: Processes without a timeline, by reason.
    reasons: list[Reason] = field(default_factory=list)


# -- line profiles (report --lines) ------------------------------------------------------------------


@dataclass
class LineRow:
    """One line of a role's code, summed over the role's processes that left line stats."""

    rank: int
    #: The file as the processes recorded it, and as shown (relative to the project folder).
    file: str
    path: str
    line: int
    function: str
    source: str | None
    #: The first 8 hex digits of the source hash when this is not the version most processes
    #: ran (the versions are kept apart, never summed); None otherwise.
    variant: str | None
    hits: int
    time_ns: int
    per_hit_ns: float | None
    #: The line's time over the role's summed window time (lines include their callees, so
    #: shares overlap and may add up past 1).
    window_share: float | None
    #: How many of the role's processes ran the line.
    processes: int
    #: The least and the most time one process spent on it (0 for one that did not run it);
    #: None when the role left one file.
    min_ns: int | None
    max_ns: int | None


@dataclass
class LinesRole:
    """The top lines of one role, from its processes' ``backend="lines"`` windows."""

    role: str
    #: Worker files of the role that ran a lines window (or left a file), and the files read.
    processes: int
    files: int
    #: Files of windows cut short (the process ended or was signalled while it was open).
    partial: int
    #: The window: entries ``start .. stop - 1`` of ``phase``.
    phase: str | None
    start: int | None
    stop: int | None
    #: Entries profiled, summed over the files (None when no file says).
    entries: int | None
    #: The windows' time, summed over the files.
    wall_ns: int
    #: The project folder every file profiled (None when they differ).
    project: str | None
    #: Distinct lines recorded; ``rows`` holds the top ones by time.
    lines: int
    rows: list[LineRow]
    #: Processes that left no file, and why.
    missing: list[Reason]
    #: Files whose source differed between the role's processes.
    conflicts: list[str]


@dataclass
class LinesBlock:
    top: int
    roles: list[LinesRole]
    #: Files of this attempt's processes that could not be used (one line each).
    unreadable: list[str]
    #: Line-stats files of other attempts under ``lines/``: not shown.
    other_attempts: int
    #: The lines of ``Profiler(line_sampling=...)`` by role and phase; None: no worker sampled.
    sampled: SampledLinesBlock | None = None


# -- the whole report -------------------------------------------------------------------------------


@dataclass
class Report:
    #: None only when the header itself failed (CAVEATS says why).
    header: Header | None = None
    roles: list[Role] = field(default_factory=list)
    dominant: Dominant | None = None
    counters: Counters | None = None
    iterations: Iterations | None = None
    io_by_phase: IoByPhase | None = None
    io: SampledIo | None = None
    memory: Memory | None = None
    #: CPU: cores used against the CPUs there were, per host (:class:`.model_cpu.CpuBlock`).
    cpu: Any = None
    gpu: GpuSummary | None = None
    #: ``--lines``: the top lines of each role from its ``backend="lines"`` windows.
    lines: LinesBlock | None = None
    #: Each process's backend window and the file it wrote.
    windows: list[BackendWindow] = field(default_factory=list)
    #: Per-process phase lanes, when the run recorded a timeline.
    lanes: list[Lane] = field(default_factory=list)
    #: The TIMELINE block: per role, which phase when, and the stalls.
    timeline: Timeline | None = None
    #: STORY: a traced run's critical path and findings (:class:`.story.model.Story`); None
    #: where no worker recorded a trace.
    story: Any = None
    #: Every CAVEATS line: merge's first, then the blocks'.
    caveats: list[str] = field(default_factory=list)
    #: ``origin block`` of each block that failed (its caveat says why).
    failed: list[str] = field(default_factory=list)


__all__ = [
    "KIND", "STRAGGLER_FROM", "VERSION", "Attempt", "BackendWindow", "Bucket", "Counter", "CounterGroup",
    "Counters", "DeviceUse", "Dominant", "DominantPhase", "GpuSummary", "Header", "IoByPhase", "IoPhase",
    "IoTimeline", "IterationRole", "Iterations", "Lane", "LineRow", "LinesBlock", "LinesRole", "LoaderWorkers",
    "Memory", "MemoryRole", "Process", "PhaseShare", "Reason", "Report", "Role", "SampledIo", "Series", "Source",
    "Span", "Split", "Stall", "StepPart", "StepParts", "Timeline", "TimelineRole", "UnevenWork", "UnphasedCollectives",
    "UnphasedOp",
]
