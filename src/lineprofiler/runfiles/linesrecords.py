"""What one read line-stats file holds, as values: a process's lines, per function.

:mod:`.linesfile` reads a file into a :class:`LinesFile` (and documents the schema);
:mod:`.linesmerge` adds them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Distinct region names a profiler keeps per process, and a merge keeps over processes; the
#: others record into (are added to) the region REGIONS_OVERFLOW.
MAX_REGIONS = 1000
REGIONS_OVERFLOW = "(overflow)"


@dataclass(frozen=True)
class LineRecord:
    lineno: int
    hits: int
    time_ns: int
    source: str | None
    #: None in a file that did not measure it (schema version 1).
    self_ns: int | None = None


@dataclass(frozen=True)
class FunctionRecord:
    file: str
    first_line: int
    qualname: str
    lines: tuple[LineRecord, ...]
    #: None in a file that did not count them (schema version 1).
    calls: int | None = None

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.file, self.first_line, self.qualname)


@dataclass(frozen=True)
class RegionRecord:
    """The lines that ran while one named region (``LineProfiler.region(name)``) was the
    innermost open one on their thread."""

    name: str
    functions: tuple[FunctionRecord, ...]
    #: How many times it was entered while recording; None when not known.
    entries: int | None = None


@dataclass(frozen=True)
class LinesFile:
    """One read file: the document's parts, checked."""

    path: Path | None
    process: dict[str, Any]
    profile: dict[str, Any]
    files: dict[str, str | None]
    functions: tuple[FunctionRecord, ...]
    errors: tuple[str, ...] = ()
    regions: tuple[RegionRecord, ...] = ()
    #: The files that changed after the process first ran code from them (their lines carry
    #: no text): ``files[name]["changed"]``.
    changed: frozenset[str] = frozenset()

    @property
    def pid(self) -> int:
        return int(self.process["pid"])

    @property
    def status(self) -> str:
        return str(self.process["status"])

    @property
    def role(self) -> str | None:
        return self.process.get("role")

    @property
    def group(self) -> str:
        """What ``--by-role`` groups by: the role, else the label, else ``"(no role)"``."""
        return self.process.get("role") or self.process.get("label") or "(no role)"

    @property
    def window(self) -> dict[str, Any] | None:
        """The accounting window that wrote the file (``profile.window``), or None."""
        window = self.profile.get("window")
        return window if isinstance(window, dict) else None

    @property
    def partial(self) -> bool:
        """True when a window was cut short (the process ended while it was open)."""
        window = self.window
        return bool(window and window.get("partial"))

    @property
    def finished(self) -> bool:
        """False for a ``"started"`` file: the process ended (or still runs) without writing."""
        return self.status != "started"

    def describe(self) -> str:
        """``pid 123 (actor) on host`` for messages."""
        who = self.role or self.process.get("label")
        return f"pid {self.pid}" + (f" ({who})" if who else "") + f" on {self.process['host']}"
