"""Adding line-stats files together: the same (file, function, line) summed over the processes
that ran it, and the versions of a file whose source differed between processes kept apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .linesrecords import MAX_REGIONS, REGIONS_OVERFLOW, FunctionRecord, LinesFile

#: A merged function's key: (file, first line, qualname, variant).
MergedKey = tuple[str, int, str, str | None]


@dataclass
class MergedLine:
    """One line summed over processes; ``per_process`` holds ``(process index, hits, time_ns)``
    for each process that ran it (indices into :attr:`MergedLines.processes`)."""

    lineno: int
    hits: int = 0
    time_ns: int = 0
    source: str | None = None
    per_process: list[tuple[int, int, int]] = field(default_factory=list)
    #: Summed over processes; None when any of them did not measure it (an older file).
    self_ns: int | None = 0


@dataclass
class MergedFunction:
    file: str
    first_line: int
    qualname: str
    #: The first 8 hex digits of the source hash when this is not the version of ``file`` that
    #: most processes ran; None for that version (and for files without a hash).
    variant: str | None = None
    lines: dict[int, MergedLine] = field(default_factory=dict)
    #: Summed over processes; None when any of them did not count them (an older file).
    calls: int | None = 0
    #: True when its file changed since the run in a process that ran it (see
    #: ``LinesFile.changed``): those lines carry no text.
    source_changed: bool = False

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
    functions: dict[MergedKey, MergedFunction]
    conflicts: list[SourceConflict]
    #: Region name -> its functions, merged as ``functions`` are, in the order first seen.
    regions: dict[str, dict[MergedKey, MergedFunction]] = field(default_factory=dict)
    #: Region name -> entries summed over processes (a process that did not say adds none).
    region_entries: dict[str, int] = field(default_factory=dict)
    #: Distinct region names past MAX_REGIONS over the processes, and their entries: added to
    #: the region REGIONS_OVERFLOW.
    regions_folded: int = 0
    regions_folded_entries: int = 0

    @property
    def regions_overflowed(self) -> int:
        """Entries of region names past a cap: each process's own (``profile.regions_overflowed``)
        and those of the names this merge folded into REGIONS_OVERFLOW."""
        said = (p.profile.get("regions_overflowed") for p in self.processes)
        return sum(n for n in said if type(n) is int and n > 0) + self.regions_folded_entries

    @property
    def max_regions(self) -> int:
        """The cap the processes said they kept (the largest), else MAX_REGIONS."""
        said = [p.profile.get("max_regions") for p in self.processes]
        return max((n for n in said if type(n) is int and n > 0), default=MAX_REGIONS)

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
    functions: dict[MergedKey, MergedFunction] = {}
    regions: dict[str, dict[MergedKey, MergedFunction]] = {}
    entries: dict[str, int] = {}
    folded: set[str] = set()
    folded_entries = 0
    for index, proc in enumerate(processes):
        _add_functions(functions, proc.functions, index, variant_of, proc.changed)
        for region in proc.regions:
            name = region.name
            if name in folded or (name != REGIONS_OVERFLOW and name not in regions and _regions_full(regions)):
                folded.add(name)
                folded_entries += region.entries or 0
                name = REGIONS_OVERFLOW
            _add_functions(regions.setdefault(name, {}), region.functions, index, variant_of, proc.changed)
            entries[name] = entries.get(name, 0) + (region.entries or 0)
    return MergedLines(processes, functions, conflicts, regions, entries, len(folded), folded_entries)


def _regions_full(regions: dict[str, dict[MergedKey, MergedFunction]]) -> bool:
    """Whether the merge holds MAX_REGIONS names besides REGIONS_OVERFLOW."""
    return len(regions) - (REGIONS_OVERFLOW in regions) >= MAX_REGIONS


def _plus(total: int | None, more: int | None) -> int | None:
    """A sum that stays unknown once one part is."""
    return None if total is None or more is None else total + more


def _add_functions(
    functions: dict[MergedKey, MergedFunction],
    records: Iterable[FunctionRecord],
    index: int,
    variant_of: dict[tuple[str, int], str | None],
    changed: frozenset[str],
) -> None:
    for fn in records:
        variant = variant_of.get((fn.file, index))
        key = (fn.file, fn.first_line, fn.qualname, variant)
        merged = functions.get(key)
        if merged is None:
            merged = functions[key] = MergedFunction(fn.file, fn.first_line, fn.qualname, variant)
        merged.calls = _plus(merged.calls, fn.calls)
        merged.source_changed = merged.source_changed or fn.file in changed
        for rec in fn.lines:
            line = merged.lines.get(rec.lineno)
            if line is None:
                line = merged.lines[rec.lineno] = MergedLine(rec.lineno, source=rec.source)
            elif line.source is None:
                line.source = rec.source
            line.hits += rec.hits
            line.time_ns += rec.time_ns
            line.self_ns = _plus(line.self_ns, rec.self_ns)
            if line.per_process and line.per_process[-1][0] == index:
                # One process listed the same key twice (a re-defined function): one entry.
                _, h, t = line.per_process[-1]
                line.per_process[-1] = (index, h + rec.hits, t + rec.time_ns)
            else:
                line.per_process.append((index, rec.hits, rec.time_ns))
