"""Adding line-stats files together: the same (file, function, line) summed over the processes
that ran it, and the versions of a file whose source differed between processes kept apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .linesrecords import LinesFile


@dataclass
class MergedLine:
    """One line summed over processes; ``per_process`` holds ``(process index, hits, time_ns)``
    for each process that ran it (indices into :attr:`MergedLines.processes`)."""

    lineno: int
    hits: int = 0
    time_ns: int = 0
    source: str | None = None
    per_process: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class MergedFunction:
    file: str
    first_line: int
    qualname: str
    #: The first 8 hex digits of the source hash when this is not the version of ``file`` that
    #: most processes ran; None for that version (and for files without a hash).
    variant: str | None = None
    lines: dict[int, MergedLine] = field(default_factory=dict)

    @property
    def time_ns(self) -> int:
        return sum(ln.time_ns for ln in self.lines.values())

    @property
    def hits(self) -> int:
        return sum(ln.hits for ln in self.lines.values())


@dataclass(frozen=True)
class SourceConflict:
    """A file whose source differed between processes: ``versions`` is ``(sha256, pids)`` per
    version, the merged one (most processes) first."""

    file: str
    versions: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass
class MergedLines:
    processes: list[LinesFile]
    functions: dict[tuple[str, int, str, str | None], MergedFunction]
    conflicts: list[SourceConflict]

    @property
    def unfinished(self) -> list[LinesFile]:
        """Processes that left nothing: only their ``"started"`` file exists."""
        return [p for p in self.processes if not p.finished]

    @property
    def silent(self) -> list[LinesFile]:
        """Processes that wrote a file but ran no project line."""
        return [p for p in self.processes if p.finished and not p.functions]

    @property
    def wall_ns(self) -> int:
        return sum(int(p.profile["wall_ns"]) for p in self.processes)


def merge_lines(files: Sequence[LinesFile]) -> MergedLines:
    """Add ``files`` together: the same (file, first line, function, line) is summed over
    processes. A file whose source hash differs between processes is not summed across the
    versions: the version most processes ran (the first seen, on a tie) merges as usual, the
    others are kept as functions of their own (``variant`` set) and listed in ``conflicts``."""
    processes = list(files)
    by_file: dict[str, dict[str, list[int]]] = {}
    for index, proc in enumerate(processes):
        for name, digest in proc.files.items():
            if digest is not None:
                by_file.setdefault(name, {}).setdefault(digest, []).append(index)
    variant_of: dict[tuple[str, int], str | None] = {}
    conflicts: list[SourceConflict] = []
    for name, versions in by_file.items():
        if len(versions) < 2:
            continue
        ordered = sorted(versions.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
        for digest, indices in ordered[1:]:
            for index in indices:
                variant_of[(name, index)] = digest[:8]
        conflicts.append(
            SourceConflict(
                name,
                tuple((digest, tuple(processes[i].pid for i in indices)) for digest, indices in ordered),
            )
        )
    functions: dict[tuple[str, int, str, str | None], MergedFunction] = {}
    for index, proc in enumerate(processes):
        for fn in proc.functions:
            variant = variant_of.get((fn.file, index))
            key = (fn.file, fn.first_line, fn.qualname, variant)
            merged = functions.get(key)
            if merged is None:
                merged = functions[key] = MergedFunction(fn.file, fn.first_line, fn.qualname, variant)
            for rec in fn.lines:
                line = merged.lines.get(rec.lineno)
                if line is None:
                    line = merged.lines[rec.lineno] = MergedLine(rec.lineno, source=rec.source)
                elif line.source is None:
                    line.source = rec.source
                line.hits += rec.hits
                line.time_ns += rec.time_ns
                if line.per_process and line.per_process[-1][0] == index:
                    # One process listed the same key twice (a re-defined function): one entry.
                    _, h, t = line.per_process[-1]
                    line.per_process[-1] = (index, h + rec.hits, t + rec.time_ns)
                else:
                    line.per_process.append((index, rec.hits, rec.time_ns))
    return MergedLines(processes, functions, conflicts)
