"""Temporary home of the LINES block's model (moves into model.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Reason:
    reason: str
    processes: int


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
