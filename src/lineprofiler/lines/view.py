"""``lineprofiler view``: saved line profiles, merged over the processes that wrote them.

Reads files only (no C tracer): one file, or a directory of process files. Prints who wrote
them (and who left nothing), then the tables, for all processes together or per role, then
the tables of the regions (``LineProfiler.region(name)``) when the files have any. Every
text the files hold (roles, hosts, paths, errors) is shown through :func:`printable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._terminal import printable
from ..runfiles.linesfile import UNFINISHED_REASON, LinesFile
from .render import HINT_CLI, own_time, render_nothing, render_regions, render_report
from .saved import SavedProfile

__all__ = ["ViewOptions", "render_processes", "render_view"]


@dataclass(frozen=True)
class ViewOptions:
    top: int = 20
    functions: int | None = 10
    min_us: float = 0.0
    sort: str = "time"
    by_role: bool = False


def _pids(files: Sequence[LinesFile], limit: int = 8) -> str:
    pids = [str(f.pid) for f in files]
    shown = ", ".join(pids[:limit])
    return shown + (f" and {len(pids) - limit} more" if len(pids) > limit else "")


def render_processes(saved: SavedProfile) -> str:
    """Who wrote the files: processes per role, processes that left nothing, files that could
    not be read, and files whose source differed between processes."""
    merged = saved.merged
    procs = saved.processes
    groups: dict[str, list[LinesFile]] = {}
    for p in procs:
        groups.setdefault(p.group, []).append(p)
    hosts = sorted({printable(p.process["host"]) for p in procs})
    roles = ", ".join(f"{printable(name)} x{len(members)}" for name, members in groups.items())
    out = [f"Line profile of {len(procs)} process{'es' if len(procs) != 1 else ''} ({roles})"]
    if len(hosts) > 1:
        out.append(f"Hosts: {', '.join(hosts)}")
    unfinished = merged.unfinished
    for p in unfinished:
        why = next((e for e in p.errors if e.startswith("not profiled")), None)
        if why:
            out.append(f"  ! {printable(p.describe())} left nothing: {printable(why)}")
        else:
            out.append(f"  ! {printable(p.describe())} left nothing: {UNFINISHED_REASON}")
    silent = merged.silent
    if silent:
        out.append(f"  {len(silent)} process(es) ran no line of the project: pid {_pids(silent)}")
    for problem in saved.problems:
        out.append(f"  ! unreadable: {printable(problem)}")
    for conflict in merged.conflicts:
        versions = "; ".join(
            f"{digest[:8]} in pid {', '.join(map(str, pids[:6]))}{' ...' if len(pids) > 6 else ''}"
            for digest, pids in conflict.versions
        )
        out.append(
            f"  ! {printable(conflict.file)}: the source differed between processes ({versions}); "
            f"only the first is merged, the others are shown as '[source <hash>]'"
        )
    for p in procs:
        for error in p.errors:
            if not error.startswith("not profiled"):
                out.append(f"  ! {printable(p.describe())}: {printable(error)}")
    return "\n".join(out) + "\n"


def _render_merged(saved: SavedProfile, opts: ViewOptions) -> str:
    stats = saved.get_stats()
    if not stats:
        finished = [p for p in saved.processes if p.finished]
        if not finished:
            return "No line timings recorded: no process finished writing its file.\n"
        outside = sum(int(p.profile.get("codes_outside") or 0) for p in finished)
        return render_nothing(finished[0].profile["project_folder"], outside, [], hint=HINT_CLI)
    total = saved.wall_time_ns if len(saved.processes) == 1 else None
    text = render_report(
        stats,
        functions=opts.functions,
        top_n=opts.top,
        min_time_us=opts.min_us,
        sort_by=opts.sort,
        root=saved.project_folder,
        total_ns=total,
    )
    regions = saved.region_stats()
    if regions:
        text += "\nREGIONS\n\n" + render_regions(
            regions,
            saved.region_entries(),
            top_n=opts.top,
            min_time_us=opts.min_us,
            root=saved.project_folder,
            total_ns=own_time(stats),
            max_regions=saved.max_regions,
            overflowed=saved.regions_overflowed,
        )
    return text


def render_view(saved: SavedProfile, opts: ViewOptions) -> str:
    """The whole ``view`` output."""
    parts = [render_processes(saved), "\n"]
    if not opts.by_role:
        parts.append(_render_merged(saved, opts))
        return "".join(parts)
    groups: dict[str, list[LinesFile]] = {}
    for p in saved.processes:
        groups.setdefault(p.group, []).append(p)
    for name, members in groups.items():
        sub = SavedProfile(members, path=saved.path)
        title = printable(name.upper())
        rule = "=" * max(10, 72 - len(title))
        parts.append(f"{title}  ({len(members)} process{'es' if len(members) != 1 else ''}) {rule}\n\n")
        parts.append(_render_merged(sub, opts))
        parts.append("\n")
    return "".join(parts)
