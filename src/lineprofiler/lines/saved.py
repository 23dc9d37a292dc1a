"""Saved line profiles: the document a profiler writes, and what reading files back gives.

Nothing here imports the C tracer: ``lineprofiler view`` and ``LineProfiler.load()`` work on a
machine that only has the files. The file format itself is :mod:`lineprofiler.runfiles.linesfile`.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..runfiles import linesfile
from ..runfiles.linesfile import LinesFile, MergedFunction, MergedLines
from .render import PrintedProfile, render_nothing
from .sourcefile import source_lines
from .stats import FunctionStats, LineStats, StatsKey

__all__ = ["SavedProfile", "document_from_stats", "host_name", "process_info", "source_sha256"]

ENV_ROLE = "LINEPROFILER_ROLE"
ENV_HOST = "LINEPROFILER_HOST"


def host_name() -> str:
    """``LINEPROFILER_HOST`` if set, else this machine's host name (as the accounting layer)."""
    return os.environ.get(ENV_HOST) or socket.gethostname() or "localhost"


def process_info(
    status: str,
    *,
    start_unix_ns: int,
    label: str | None = None,
    role: str | None = None,
    signal: str | None = None,
    exit_code: int | None = None,
    pid: int | None = None,
    parent_pid: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``process`` object of a file written by this process now. ``extra`` adds keys of the
    writer's own (an accounting worker's ``run_id`` and ``attempt``): readers ignore keys they
    do not know."""
    return {
        **(extra or {}),
        "pid": os.getpid() if pid is None else pid,
        "parent_pid": os.getppid() if parent_pid is None else parent_pid,
        "host": host_name(),
        "argv": [str(a) for a in sys.argv],
        "python": ".".join(map(str, sys.version_info[:3])),
        "role": role if role is not None else (os.environ.get(ENV_ROLE) or None),
        "label": label,
        "start_unix_ns": int(start_unix_ns),
        "end_unix_ns": None if status == "started" else time.time_ns(),
        "status": status,
        "signal": signal,
        "exit_code": exit_code,
    }


def source_sha256(filename: str) -> str | None:
    """The sha256 of the source text of ``filename`` the tables print (see
    :func:`~.sourcefile.source_lines`), or None when there is none."""
    lines = source_lines(filename)
    if not lines:
        return None
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def document_from_stats(
    stats: Mapping[StatsKey, FunctionStats],
    *,
    process: Mapping[str, Any],
    profile: Mapping[str, Any],
    errors: list[str] | tuple[str, ...] = (),
    regions: Mapping[str, Mapping[StatsKey, FunctionStats]] | None = None,
    region_entries: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A line-stats document from get_stats() output (and get_region_stats()'s, as ``regions``);
    source hashes are read here, but for a file that changed since the run (no hash: the file
    holds other code now)."""
    hashes: dict[str, str | None] = {}
    every = [*stats.values(), *(f for region in (regions or {}).values() for f in region.values())]
    changed = {f.filename for f in every if f.source_changed}
    for filename in (f.filename for f in every):
        if filename in changed:
            hashes[filename] = None
        elif filename not in hashes:
            try:
                hashes[filename] = source_sha256(filename)
            except Exception:  # an unreadable or odd file: no hash, never an error
                hashes[filename] = None
    return linesfile.build_document(
        process=process,
        profile=profile,
        functions=_function_rows(stats),
        files=hashes,
        changed=sorted(changed),
        errors=errors,
        regions={name: _function_rows(region) for name, region in (regions or {}).items()},
        region_entries=region_entries,
    )


def _function_rows(stats: Mapping[StatsKey, FunctionStats]) -> list[linesfile.FunctionRows]:
    return [
        (
            f.filename,
            f.first_lineno,
            f.qualname,
            [(x.lineno, x.hits, x.time_ns, x.source, x.self_ns) for x in f.lines.values()],
            f.calls,
        )
        for f in stats.values()
    ]


def _function_stats(functions: Iterable[MergedFunction]) -> dict[StatsKey, FunctionStats]:
    out: dict[StatsKey, FunctionStats] = {}
    for fn in functions:
        filename = fn.file if fn.variant is None else f"{fn.file} [source {fn.variant}]"
        lines = {
            x.lineno: LineStats(x.lineno, x.hits, x.time_ns, x.source, x.self_ns)
            for x in sorted(fn.lines.values(), key=_lineno)
        }
        key = StatsKey(filename, fn.qualname, fn.first_line)
        total = sum(x.time_ns for x in lines.values())
        out[key] = FunctionStats(filename, fn.first_line, fn.qualname, total, lines, fn.calls, fn.source_changed)
    return out


def _lineno(line: Any) -> int:
    return int(line.lineno)


class SavedProfile(PrintedProfile):
    """Line stats read back from files: one process's, or several merged (same file, function
    and line summed). ``get_stats()``, ``print_stats()`` and ``print_global_top_stats()`` work as
    on a :class:`~lineprofiler.LineProfiler`.

    ``processes`` are the files read; ``problems`` one line per file that could not be used;
    ``merged.conflicts`` the files whose source differed between processes (their other
    versions appear as functions of their own, named ``file [source <hash8>]``)."""

    def __init__(self, files: list[LinesFile], problems: list[str] | None = None, path: Path | None = None) -> None:
        self.processes: list[LinesFile] = list(files)
        self.problems: list[str] = list(problems or [])
        self.path = path
        self.merged: MergedLines = linesfile.merge_lines(self.processes)
        self._stats: dict[StatsKey, FunctionStats] | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SavedProfile:
        """Read a file, or every process file of a directory. Raises
        :class:`~lineprofiler.runfiles.linesfile.LinesFileError` (with a one-line reason) when
        nothing usable is there, and its subclass ``NewerSchemaError`` for a file written by a
        newer lineprofiler."""
        files, problems = linesfile.load_lines(path)
        return cls(files, problems, Path(path))

    def __repr__(self) -> str:
        return f"<SavedProfile {len(self.processes)} process(es) from {str(self.path)!r}>"

    @property
    def project_folder(self) -> Path | None:
        """The project folder, when every process profiled the same one."""
        folders = {p.profile["project_folder"] for p in self.processes}
        return Path(folders.pop()) if len(folders) == 1 else None

    @property
    def wall_time_ns(self) -> int:
        """Summed over processes: the time each had its profiler enabled."""
        return self.merged.wall_ns

    def get_stats(self) -> dict[StatsKey, FunctionStats]:
        if self._stats is None:
            self._stats = _function_stats(self.merged.functions.values())
        return dict(self._stats)

    def region_stats(self) -> dict[str, dict[StatsKey, FunctionStats]]:
        """As :meth:`LineProfiler.region_stats <lineprofiler.LineProfiler.region_stats>`, merged
        over the processes."""
        return {name: _function_stats(functions.values()) for name, functions in self.merged.regions.items()}

    def region_entries(self) -> dict[str, int]:
        """How many times each region was entered, summed over the processes."""
        return dict(self.merged.region_entries)

    @property
    def max_regions(self) -> int:
        """The cap of distinct region names the processes kept (and this merge keeps)."""
        return self.merged.max_regions

    @property
    def regions_overflowed(self) -> int:
        """Entries of region names past the cap, in the region ``"(overflow)"``: the processes'
        own and those of the names the merge folded in."""
        return self.merged.regions_overflowed

    # -- printing (PrintedProfile prints and draws) --------------------------------------------

    def _shown_folder(self) -> Path | None:
        return self.project_folder

    def _nothing_text(self, stats: Mapping[StatsKey, FunctionStats]) -> str | None:
        if self.merged.functions:
            return None
        finished = [p for p in self.processes if p.finished]
        if not finished:
            return None
        first = finished[0]
        outside = sum(int(p.profile.get("codes_outside") or 0) for p in finished)
        return render_nothing(first.profile["project_folder"], outside, [])

    def _shown_wall_ns(self) -> int | None:
        # The wall times of processes overlap: shown for one process only.
        return self.wall_time_ns if len(self.processes) == 1 else None

    def _source_hashes(self) -> Mapping[str, str | None]:
        from .annotate.sources import file_hashes

        return file_hashes(self.processes, self.merged.conflicts)
