"""LINES (``report --lines``): the top lines of each role, from its ``backend="lines"`` windows
(and, from :mod:`.sampled_lines`, from its ``line_sampling`` windows).

A process whose profiler ran a lines window left ``run_dir/lines/<host>/l_<run>_<pid>_<uuid8>.json``,
named after its worker file. Only the files of the workers this report merged are read (a
file is paired with its worker by that name, and its ``pid`` and ``uuid`` are checked), so the
files of other attempts never mix in; they are counted. The files of one role are added with
:func:`~lineprofiler.runfiles.linesfile.merge_lines`: hits and time of the same (file, function,
line) summed over the role's processes, and, for each top line, the least and the most time one
process spent on it (a process of the role that did not run the line counts 0), which is where
the role's imbalance shows up line by line.

Files are read with the report's limits (a regular file of at most :data:`MAX_FILE_BYTES`, never
through a link); one that cannot be used (corrupt, foreign, from a newer lineprofiler) costs
that process's lines and is named under CAVEATS, never the report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ....runfiles import layout, linesfile, reading
from ....runfiles.linesfile import LinesFile, LinesFileError, MergedLine, MergedLines
from ...model import LineRow, LinesBlock, LinesRole, Reason
from ...read.run import Run, Worker
from . import RenderOptions
from .sampled_lines import sampled_lines_block

#: Line-stats files larger than this are refused (as worker files are).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: How many lines each role shows by default (``--lines-top``).
DEFAULT_TOP = 10


def _worker_window(worker: Worker) -> dict[str, Any] | None:
    """The worker's ``backend_window`` when it is a lines window, else None."""
    window = worker.document.get("backend_window")
    if isinstance(window, dict) and window.get("backend") == "lines":
        return window
    return None


def _read(path: Path) -> LinesFile:
    try:
        raw = reading.read_limited(path, MAX_FILE_BYTES)
    except OSError as error:
        raise LinesFileError(f"{path}: cannot read: {error.strerror or error}") from None
    return linesfile.parse_lines_bytes(raw, path)


def _missing_reason(window: dict[str, Any] | None) -> str:
    """Why a worker that ran a lines window left no file (from its worker file's description)."""
    if window is None:
        return "no line-stats file"
    state = window.get("state")
    if state == "waiting":
        span = window.get("window")
        start = span[0] if isinstance(span, list) and span else "?"
        return f"never reached entry {start} of {window.get('phase')}"
    if state == "unavailable":
        return f"window unavailable: {window.get('unavailable_reason')}"
    if state == "failed":
        return f"window failed: {window.get('error')}"
    if state == "active":
        return "window still open at its last snapshot (killed, or still running)"
    return "no line-stats file"


def _shown_path(file: str, project: str | None) -> str:
    if project:
        prefix = project.rstrip(os.sep) + os.sep
        if file.startswith(prefix):
            return file[len(prefix) :]
    return file


def _rows(merged: MergedLines, top: int, project: str | None, wall_ns: int) -> tuple[list[LineRow], int]:
    everything = [(fn, line) for fn in merged.functions.values() for line in fn.lines.values()]
    everything.sort(key=lambda item: (-item[1].time_ns, -item[1].hits, item[0].file, item[1].lineno))
    count = len(merged.processes)
    # A line running in several threads of a process at once adds up to more than the process's
    # window: its share counts, per process, at most that window, so it never exceeds 100 %.
    windows = [int(p.profile.get("wall_ns") or 0) for p in merged.processes]
    rows: list[LineRow] = []
    for rank, (fn, line) in enumerate(everything[:top], 1):
        times = [t for _, _, t in line.per_process]
        if count > 1:
            times += [0] * (count - len(times))
        rows.append(
            LineRow(
                rank=rank,
                file=fn.file,
                path=_shown_path(fn.file, project),
                line=line.lineno,
                function=fn.qualname,
                source=line.source,
                variant=fn.variant,
                hits=line.hits,
                time_ns=line.time_ns,
                per_hit_ns=line.time_ns / line.hits if line.hits else None,
                window_share=_window_share(line, windows, wall_ns),
                processes=len(line.per_process),
                min_ns=min(times) if count > 1 else None,
                max_ns=max(times) if count > 1 else None,
            )
        )
    return rows, len(everything)


def _window_share(line: MergedLine, windows: Sequence[int], wall_ns: int) -> float | None:
    """The share of the role's window time (``wall_ns``, the processes' ``windows`` added up)
    that ``line`` ran in, each process's part at most its own window; None without a window."""
    if wall_ns <= 0:
        return None
    return sum(min(ns, windows[index]) for index, _, ns in line.per_process) / wall_ns


def _span(
    windows: Sequence[dict[str, Any]], described: Sequence[dict[str, Any] | None]
) -> tuple[str | None, int | None, int | None]:
    """``(phase, start, stop)`` of the role's window: from its first file (checked on reading),
    else from its first worker file's description (checked here)."""
    if windows:
        return windows[0]["phase"], windows[0]["start"], windows[0]["stop"]
    for window in described:
        if window is None:
            continue
        phase, span = window.get("phase"), window.get("window")
        name = phase if isinstance(phase, str) else None
        if isinstance(span, list) and len(span) == 2 and all(type(v) is int for v in span):
            return name, span[0], span[1]
        return name, None, None
    return None, None, None


def _role(
    name: str, workers: Sequence[Worker], files: Sequence[LinesFile], top: int, unusable: set[tuple[int, str]]
) -> LinesRole:
    merged = linesfile.merge_lines(files)
    windows = [w for w in (f.window for f in files) if w is not None]
    described = [_worker_window(w) for w in workers]
    phase, start, stop = _span(windows, described)
    folders = {str(f.profile.get("project_folder")) for f in files}
    project = folders.pop() if len(folders) == 1 else None
    wall_ns = sum(int(f.profile.get("wall_ns") or 0) for f in files)
    rows, total = _rows(merged, top, project, wall_ns)
    have = {(f.pid, f.process.get("uuid")) for f in files}
    reasons: dict[str, int] = {}
    for worker, window in zip(workers, described, strict=True):
        if (worker.pid, worker.uuid) not in have:
            unused = (worker.pid, worker.uuid) in unusable
            why = "its line-stats file could not be used (see CAVEATS)" if unused else _missing_reason(window)
            reasons[why] = reasons.get(why, 0) + 1
    entries = [w.get("entries") for w in windows]
    return LinesRole(
        role=name,
        processes=len(workers),
        files=len(files),
        partial=sum(1 for f in files if f.partial),
        phase=phase,
        start=start,
        stop=stop,
        entries=sum(e for e in entries if isinstance(e, int)) if entries else None,
        wall_ns=wall_ns,
        project=project,
        lines=total,
        rows=rows,
        missing=[Reason(reason, n) for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
        conflicts=[c.file for c in merged.conflicts],
    )


def _stray_files(run: Run, expected: set[str]) -> int:
    """Line-stats files under ``lines/`` that belong to no merged worker (other attempts)."""
    folder = run.run_dir / layout.LINES_DIR
    if not folder.is_dir():
        return 0
    try:
        found = linesfile.find_lines_files(folder)
    except LinesFileError:
        return 0
    return sum(1 for path in found if str(path) not in expected)


def lines_block(run: Run, options: RenderOptions) -> LinesBlock | None:
    """The LINES model, or None when ``--lines`` was not asked for (with it, a block without
    roles says that no process of the attempt ran a lines window)."""
    if not options.lines:
        return None
    by_role: dict[str, list[Worker]] = {}
    files: dict[str, list[LinesFile]] = {}
    unreadable: list[str] = []
    unusable: set[tuple[int, str]] = set()
    expected: set[str] = set()
    for worker in run.workers:
        path = layout.lines_path(run.run_dir, worker.path)
        expected.add(str(path))
        window = _worker_window(worker)
        try:
            present = os.path.lexists(path)
        except OSError:
            present = False
        if window is None and not present:
            continue
        by_role.setdefault(worker.role, []).append(worker)
        if not present:
            continue
        try:
            read = _read(path)
        except LinesFileError as error:
            unreadable.append(str(error))
            unusable.add((worker.pid, worker.uuid))
            continue
        if (read.pid, read.process.get("uuid")) != (worker.pid, worker.uuid):
            unreadable.append(f"{path}: written by another process than its worker file (pid {read.pid})")
            unusable.add((worker.pid, worker.uuid))
            continue
        files.setdefault(worker.role, []).append(read)
    for line in unreadable:
        options.add_caveat(f"line stats not shown: {line}")
    others = _stray_files(run, expected)
    order = list(run.roles)
    roles = [
        _role(name, by_role[name], files.get(name, []), options.lines_top, unusable)
        for name in sorted(by_role, key=lambda r: (order.index(r) if r in order else len(order), r))
    ]
    for role in roles:
        for file in role.conflicts:
            options.add_caveat(
                f"{role.role}: the source of {file} differed between processes; its versions are shown apart"
            )
    sampled = sampled_lines_block(run, options)
    return LinesBlock(top=options.lines_top, roles=roles, unreadable=unreadable, other_attempts=others, sampled=sampled)


__all__ = ["DEFAULT_TOP", "MAX_FILE_BYTES", "lines_block"]
