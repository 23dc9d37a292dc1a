"""The worker file's ``line_sampling`` section: the lines of ``Profiler(line_sampling=...)``.

Written by :mod:`lineprofiler.accounting.line_sampling` at every snapshot; absent from the
files of a profiler that does not sample (and from every file older than this section, which
read as before). Version 1::

    {"version": 1, "fraction": 0.02, "window_s": 0.01,
     "windows": 240, "skipped": 0, "sampled_ns": 2.4e9, "wall_ns": 1.2e11,
     "project_folder": "/src/app", "clock": "tsc", "error": null,
     "phases": [{"path": "episode/mcts" | null (in no phase), "other": false (true: the phases
                 past the cap, together), "windows": 231, "time_ns": ...(self time of all its
                 lines), "lines_total": 57,
                 "lines": [[file, function, line, hits, time_ns, self_ns, source], ...]}]}

``lines`` holds a phase's lines with the most self time, at most 200 (5000 in all, the phases
with the most time first). A section of a newer version, or one that is not what it says, is
refused as a whole (:class:`LineSamplingError`), never read in part.

The same section, as it stood at its last copy (made after a window that recorded a line, as
often as the copies' CPU budget allows), is the live copy beside the worker file
(``w_<run>_<pid>_<uuid8>.sampled_lines``, :func:`write_live_copy`): a process killed between
snapshots (SIGKILL, the OOM killer) leaves its windows there, which the report reads
(:func:`read_live_copy`) when they are more than its last snapshot's.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .._record import Record

VERSION = 1
#: A live copy larger than this is not read: the section's bounds keep one to a few MB.
LIVE_COPY_MAX_BYTES = 64 << 20

__all__ = [
    "LIVE_COPY_MAX_BYTES", "VERSION", "LineSamplingError", "SampledLine", "SampledPhase", "SampledProcess",
    "parse_section", "read_live_copy", "write_live_copy",
]  # fmt: skip


class LineSamplingError(ValueError):
    """A ``line_sampling`` section that cannot be used; the message says why, in one line."""


class SampledLine(Record):
    __slots__ = ("file", "function", "line", "hits", "time_ns", "self_ns", "source")

    def __init__(
        self, file: str, function: str, line: int, hits: int, time_ns: int, self_ns: int, source: str | None
    ) -> None:
        self.file, self.function, self.line = file, function, line
        self.hits, self.time_ns, self.self_ns, self.source = hits, time_ns, self_ns, source


class SampledPhase(Record):
    __slots__ = ("path", "other", "windows", "time_ns", "lines_total", "lines")

    def __init__(
        self, path: str | None, other: bool, windows: int, time_ns: int, lines_total: int, lines: list[SampledLine]
    ) -> None:
        self.path, self.other, self.windows, self.time_ns = path, other, windows, time_ns
        self.lines_total, self.lines = lines_total, lines


class SampledProcess(Record):
    __slots__ = ("fraction", "window_s", "windows", "skipped", "sampled_ns", "wall_ns", "project", "error", "phases")

    def __init__(self, raw: dict[str, Any], phases: list[SampledPhase]) -> None:
        self.fraction: float = raw["fraction"]
        self.window_s: float = raw["window_s"]
        self.windows: int = raw["windows"]
        self.skipped: int = raw["skipped"]
        self.sampled_ns: int = raw["sampled_ns"]
        self.wall_ns: int = raw["wall_ns"]
        self.project: str | None = raw.get("project_folder") if isinstance(raw.get("project_folder"), str) else None
        self.error: str | None = raw.get("error") if isinstance(raw.get("error"), str) else None
        self.phases = phases


def _count(value: object, what: str) -> int:
    if type(value) is not int or value < 0:
        raise LineSamplingError(f"{what} is not a count: {value!r}")
    return value


def _line(row: object) -> SampledLine:
    if not isinstance(row, list) or len(row) != 7:
        raise LineSamplingError(f"a line is not [file, function, line, hits, time_ns, self_ns, source]: {row!r:.80}")
    file, function, line, hits, time_ns, self_ns, source = row
    if not isinstance(file, str) or not isinstance(function, str):
        raise LineSamplingError(f"a line's file or function is not text: {row!r:.80}")
    if source is not None and not isinstance(source, str):
        raise LineSamplingError(f"a line's source is not text: {row!r:.80}")
    return SampledLine(
        file, function, _count(line, "a line number"), _count(hits, "hits"), _count(time_ns, "time_ns"),
        _count(self_ns, "self_ns"), source,
    )  # fmt: skip


def _phase(raw: object) -> SampledPhase:
    if not isinstance(raw, dict):
        raise LineSamplingError("a phase is not an object")
    path = raw.get("path")
    if path is not None and not isinstance(path, str):
        raise LineSamplingError(f"a phase's path is not text: {path!r:.80}")
    lines = raw.get("lines")
    if not isinstance(lines, list):
        raise LineSamplingError("a phase's lines are not a list")
    return SampledPhase(
        path, raw.get("other") is True, _count(raw.get("windows"), "a phase's windows"),
        _count(raw.get("time_ns"), "a phase's time_ns"), _count(raw.get("lines_total"), "lines_total"),
        [_line(row) for row in lines],
    )  # fmt: skip


def parse_section(raw: object) -> SampledProcess:
    """The section of one worker file, checked; LineSamplingError when it cannot be used."""
    if not isinstance(raw, dict):
        raise LineSamplingError("the line_sampling section is not an object")
    version = raw.get("version")
    if version != VERSION:
        raise LineSamplingError(f"line_sampling section version {version!r}, this lineprofiler reads {VERSION}")
    for key in ("fraction", "window_s"):
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise LineSamplingError(f"line_sampling {key} is not a positive number: {value!r}")
    for key in ("windows", "skipped", "sampled_ns", "wall_ns"):
        _count(raw.get(key), f"line_sampling {key}")
    phases = raw.get("phases")
    if not isinstance(phases, list):
        raise LineSamplingError("line_sampling phases are not a list")
    return SampledProcess(raw, [_phase(p) for p in phases])


def write_live_copy(worker_file: str | os.PathLike[str], section: dict[str, Any], *, root: str) -> None:
    """Replace the live copy beside ``worker_file`` by ``section``, atomically (a temporary file
    in the same folder, then a rename), never following a link below ``root``. Raises OSError."""
    from .layout import sampled_lines_path, write_atomic
    from .workerfile import encode_json

    write_atomic(sampled_lines_path(worker_file), encode_json(section), root=root)


def read_live_copy(worker_file: str | os.PathLike[str]) -> tuple[dict[str, Any], SampledProcess] | None:
    """The live copy beside ``worker_file`` (its raw section and what it says), or None when
    there is none; LineSamplingError, in one line, when it cannot be used."""
    import json

    from .layout import read_small, sampled_lines_path

    path = sampled_lines_path(worker_file)
    try:
        data = read_small(path, limit=LIVE_COPY_MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise LineSamplingError(f"unreadable ({error.strerror or error})") from None
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as error:  # cut short by a crash, or damaged
        raise LineSamplingError(f"not JSON ({str(error).splitlines()[0][:120]})") from None
    return raw, parse_section(raw)
