"""The report's model of the sampled lines (``Profiler(line_sampling=...)``): kept apart from
:mod:`.model`, whose LINES block holds it, so each file holds one part of the report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SampledLineRow:
    """One line of a phase, summed over the role's processes, inside the sampled windows."""

    rank: int
    file: str
    #: The file as shown (relative to the project folder).
    path: str
    line: int
    function: str
    source: str | None
    hits: int
    #: Its time (callees included) and self time inside the windows.
    time_ns: int
    self_ns: int
    #: Its self time over the phase's: the estimate of its share of the phase's time, and the
    #: half-width of that estimate's 95 % interval from the number of windows (see
    #: ``compute.blocks.sampled_lines``).
    share: float
    error: float


@dataclass
class SampledPhase:
    #: The phase path; ``(no phase)`` for lines run outside every phase, ``(other phases)`` for
    #: the phases past the profiler's cap, together.
    path: str
    #: Windows in which the phase ran a line, summed over the role's processes.
    windows: int
    #: The self time of all its lines inside the windows, and its share of the role's.
    time_ns: int
    share: float
    #: Distinct lines recorded (each process keeps its top 200 per phase).
    lines: int
    rows: list[SampledLineRow]


@dataclass
class SampledRole:
    role: str
    #: Processes of the role whose worker file has a line_sampling section.
    processes: int
    fraction: float
    #: Windows opened, and skipped because the program's own line profiler recorded.
    windows: int
    skipped: int
    #: The windows' time and the processes' sampled wall time, summed.
    sampled_ns: int
    wall_ns: int
    project: str | None
    phases: list[SampledPhase]
    #: Phases not shown (past the most sampled ones).
    hidden_phases: int
    #: Why some processes' sampling stopped (one line each).
    errors: list[str]
    #: Processes whose lines come from their live copy, newer than their last snapshot (killed
    #: between snapshots, or still running).
    live_copies: int = 0


@dataclass
class SampledLinesBlock:
    roles: list[SampledRole]
    #: Worker files whose section could not be used (one line each, also under CAVEATS).
    unreadable: list[str]
