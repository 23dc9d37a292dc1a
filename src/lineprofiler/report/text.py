"""The text report: a list of blocks, each rendering the merged run to lines.

A block is a function ``render(run, options) -> list[str]`` over a
:class:`~.merge.Run`; a block with nothing to show returns ``[]`` and is simply absent.
Blocks are separated by one blank line. A block may add lines to CAVEATS with
``options.add_caveat(line)``; CAVEATS is rendered last, after every other block.

The order: header, one block per role, DOMINANT PHASES (with counters under their phase),
COUNTERS not shown there, ITERATIONS, then :data:`EXTRA_BLOCKS` (I/O BY PHASE, I/O and MEMORY
from ``report/blocks/resources.py``, GPU from ``report/blocks/gpu.py``), then CAVEATS. A block
that raises costs that block only: it is named under CAVEATS and the rest is printed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import format as fmt
from .attempts import CONCURRENT, NEWEST, RESTARTED, AttemptSummary
from .blocks import Block, RenderOptions, gpu, resources
from .merge import PhaseStats, RoleStats, Run, utc_time

#: How many rows a role block and DOMINANT PHASES print before summarising the rest.
ROLE_ROWS = 8
DOMINANT_ROWS = 10
NAME_WIDTH = 30


def _section(title: str) -> list[str]:
    return [title, fmt.RULE]


def _clip(name: str, width: int = NAME_WIDTH - 1) -> str:
    return fmt.clip_left(fmt.printable(name), width)


# -- header ------------------------------------------------------------------------------------


def render_header(run: Run, options: RenderOptions) -> list[str]:
    roles = ", ".join(f"{fmt.printable(r.name)} x{len(r.workers)}" for r in run.roles.values())
    lines = [f"Runtime {fmt.duration(run.runtime_ns)}   Processes {len(run.workers)}   Roles {roles}"]
    hosts = [fmt.printable(h) for h in run.hosts]
    shown = ", ".join(hosts) if len(hosts) <= 8 else ", ".join(hosts[:6]) + f", ... {hosts[-1]}"
    noun = "node" if len(hosts) == 1 else "nodes"
    lines.append(f"Hosts {shown} ({len(hosts)} {noun})   Run {run.name}")
    extra = []
    if run.ranks:
        extra.append(f"Ranks {fmt.int_ranges(run.ranks)}")
    if run.job_ids:
        launchers = sorted({fmt.printable(w.launcher) for w in run.workers if w.launcher})
        jobs = ", ".join(fmt.printable(j) for j in run.job_ids[:4])
        if len(run.job_ids) > 4:
            jobs += f" and {len(run.job_ids) - 4} more"
        extra.append(f"Job {jobs}" + (f" ({', '.join(launchers)})" if launchers else ""))
    extra.append(f"Started {utc_time(run.start_ns)}")
    lines.append("   ".join(extra))
    lines.extend(attempt_lines(run))
    return lines


#: How many superseded attempts the header names before it sums up the rest.
ATTEMPT_ROWS = 10


def _attempt_facts(attempt: AttemptSummary) -> str:
    roles_text = ", ".join(f"{fmt.printable(k)} x{v}" for k, v in sorted(attempt.roles.items()))
    text = (
        f"{attempt.files} worker file(s), {roles_text}, started {utc_time(attempt.start_ns)}, "
        f"ran {fmt.duration(attempt.span_ns)}"
    )
    if attempt.merged:
        text += f" ({len(attempt.merged) + 1} run ids merged by time)"
    return text


def attempt_lines(run: Run) -> list[str]:
    """The header's lines about attempts: what was merged into this one by time, the jobs that
    overlap it, and every attempt not shown (``--attempt ID`` shows one)."""
    lines = []
    if run.status != NEWEST and run.newest is not None:
        lines.append(f"Showing the {run.status} attempt {run.name} (--attempt); the newest is {run.newest.name}")
    if run.merged:
        processes = sum(a.files for a in run.merged)
        names = ", ".join(a.name for a in run.merged[:2])
        if len(run.merged) > 2:
            names += f" and {len(run.merged) - 2} more"
        lines.append(
            f"Merged by time: {processes} process(es) under {len(run.merged)} other generated run id(s) ({names}) "
            f"ran during this run; set LINEPROFILER_RUN_ID for the whole job to make one run explicit"
        )
    if run.newest is not None:
        relation = "overlapping this one in time" if run.status == CONCURRENT else "shown by default"
        lines.append(f"Newest attempt {run.newest.name} ({relation}; not merged): {_attempt_facts(run.newest)}")
    for attempt in run.concurrent:
        lines.append(
            f"Concurrent run {attempt.name} (another job overlapping this one in time; not merged): "
            f"{_attempt_facts(attempt)}"
        )
    for attempt in run.superseded[:ATTEMPT_ROWS]:
        restarted = "; the job was restarted since" if attempt.status == RESTARTED else ""
        lines.append(f"Superseded attempt {attempt.name} (not merged): {_attempt_facts(attempt)}{restarted}")
    rest = run.superseded[ATTEMPT_ROWS:]
    if rest:
        lines.append(
            f"... and {len(rest)} older attempt(s), {sum(a.files for a in rest)} worker file(s), the oldest "
            f"{rest[-1].name} started {utc_time(rest[-1].start_ns)}"
        )
    if run.newest is not None or run.concurrent or run.superseded:
        lines.append("(lineprofiler report DIR --attempt ID shows another attempt)")
    return lines


# -- roles -------------------------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b``.

    Halving, comparing only the part not yet known equal: the comparisons are C string
    compares that add up to about twice the common length, with a few Python steps.
    """
    n = min(len(a), len(b))
    if n == 0 or a[0] != b[0]:
        return 0
    if a[:n] == b[:n]:
        return n
    low, high = 1, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


def short_names(paths: Sequence[str]) -> dict[str, str]:
    """Each path's shortest suffix of components that no other path in ``paths`` ends with
    (the whole path when another path ends with all of it).

    Linear in the text of the paths, whatever their number and depth: with ``P = "/" + path``,
    another path ends with the last ``n`` components of this one exactly when the reversed
    ``P``s share a prefix reaching past the ``n``-th slash from the end. Sorted by reversed
    ``P``, the path sharing the longest such prefix with any path is one of its two
    neighbours, so each path is compared with those two only.
    """
    keys = sorted({("/" + p)[::-1] for p in paths})
    names: dict[str, str] = {}
    for i, key in enumerate(keys):
        shared = max(
            _common_prefix(key, keys[i - 1]) if i > 0 else 0,
            _common_prefix(key, keys[i + 1]) if i + 1 < len(keys) else 0,
        )
        full = key[::-1]
        if shared >= len(full):
            names[full[1:]] = full[1:]  # another path ends with all of this one
        else:
            # The last slash before the shared ending starts the shortest suffix that is not shared.
            names[full[1:]] = full[full.rfind("/", 0, len(full) - shared) + 1 :]
    return names


def _role_block(role: RoleStats) -> list[str]:
    n = len(role.workers)
    without = n - len(role.data_workers)
    parts = [f"{n} process{'es' if n != 1 else ''}"]
    if without:
        parts.append(f"{without} without data")
    parts.append(f"imbalance {fmt.ratio(role.imbalance)}")
    lines = _section(f"{fmt.printable(role.name).upper()}  ({', '.join(parts)})")
    total = role.phase_time_ns
    # Entries still open at a worker's last snapshot count with their time so far (a process
    # killed four hours into a phase still shows those hours), and the row says so.
    ranked = sorted(
        (p for p in role.phases.values() if p.self_with_open_ns > 0), key=lambda p: (-p.self_with_open_ns, p.path)
    )
    if not ranked or total <= 0:
        lines.append("(no time recorded in phases)")
        return lines
    names = short_names([p.path for p in ranked])
    shown = ranked[:ROLE_ROWS]
    for phase in shown:
        row = (f"{_clip(names[phase.path]):<{NAME_WIDTH}}{fmt.percent(phase.self_with_open_ns / total):>6}"
               f"{fmt.duration(phase.self_with_open_ns):>13}")
        if phase.open_entries:
            row += f"   includes {fmt.count(phase.open_entries)} open entr{'y' if phase.open_entries == 1 else 'ies'}"
        lines.append(row)
    rest = ranked[ROLE_ROWS:]
    if rest:
        rest_ns = sum(p.self_with_open_ns for p in rest)
        label = f"({fmt.count(len(rest))} more phases)"
        lines.append(f"{label:<{NAME_WIDTH}}{fmt.percent(rest_ns / total):>6}{fmt.duration(rest_ns):>13}")
    slowest = role.slowest
    mean = role.mean_busy_ns
    imbalance = role.imbalance
    if slowest is not None and mean and imbalance is not None and imbalance >= 1.005:
        lines.append(
            f"  busiest: {slowest.label}, {fmt.duration(slowest.busy_ns)} in phases vs a mean of "
            f"{fmt.duration(mean)}"
        )
    lifetime = role.lifetime_ns
    if lifetime > 0:
        lines.append(f"  time in phases: {fmt.percent(role.busy_ns / lifetime)} of the processes' lifetime")
    return lines


def render_roles(run: Run, options: RenderOptions) -> list[str]:
    lines: list[str] = []
    open_entries = 0
    for role in run.roles.values():
        if lines:
            lines.append("")
        lines.extend(_role_block(role))
        open_entries += sum(p.open_entries for p in role.phases.values())
    if open_entries:
        options.add_caveat(
            f"{fmt.count(open_entries)} phase entr{'y was' if open_entries == 1 else 'ies were'} still open at "
            "the last snapshot: the role blocks count their time so far; DOMINANT PHASES, wait% and the "
            "percentiles cover closed entries only"
        )
    return lines


# -- dominant phases and counters --------------------------------------------------------------


def _counter_row(name: str, total: int, phase: PhaseStats | None, lifetime_ns: int) -> str:
    """``+ name  total  rate  time-each``.

    Under a phase, the rate is per second of that phase's wall time summed over the role's
    processes, and time-each is that wall time over the total: what one simulation inside
    ``mcts`` costs. With no phase open, the rate is per second of the role's process lifetime
    and there is no time-each.
    """
    if phase is not None:
        wall = phase.wall_ns
        per_s = total / (wall / 1e9) if wall > 0 else None
        each = wall / total if total > 0 and wall > 0 else None
        # Each column keeps one space before it, so a value wider than its column stays
        # readable instead of running into the one before.
        tail = f" {fmt.rate(per_s):>13} {fmt.per_each(each):>12}"
    else:
        per_s = total / (lifetime_ns / 1e9) if lifetime_ns > 0 else None
        tail = f" {fmt.rate(per_s):>13}"
    return f"    + {_clip(name, 23):<24}{fmt.count(total):>8}{tail}"


def _dominant(run: Run) -> list[tuple[RoleStats, PhaseStats]]:
    rows = [(role, phase) for role in run.roles.values() for phase in role.phases.values() if phase.self_ns > 0]
    rows.sort(key=lambda rp: (-rp[1].self_ns, rp[0].name, rp[1].path))
    return rows[:DOMINANT_ROWS]


def render_dominant(run: Run, options: RenderOptions) -> list[str]:
    rows = _dominant(run)
    if not rows:
        return []
    several = len(run.roles) > 1
    head = f"{'DOMINANT PHASES':<{NAME_WIDTH}}{'self':>10}{'wait':>8}{'p50':>10}{'p99':>10}"
    lines = [head + ("  role" if several else "")]
    for role, phase in rows:
        line = (
            f"{_clip(phase.path):<{NAME_WIDTH}}{fmt.duration(phase.self_ns):>10}"
            f"{fmt.percent(phase.wait_fraction, 0):>8}{fmt.duration(phase.quantile(0.50)):>10}"
            f"{fmt.duration(phase.quantile(0.99)):>10}"
        )
        if several:
            line += f"  {fmt.printable(role.name)}"
        lines.append(line)
        for (path, name), total in sorted(role.counters.items()):
            if path == phase.path:
                lines.append(_counter_row(name, total, phase, role.lifetime_ns))
    return lines


def render_counters(run: Run, options: RenderOptions) -> list[str]:
    """Counters whose phase is not a row of DOMINANT PHASES, under their phase."""
    shown = {(role.name, phase.path) for role, phase in _dominant(run)}
    lines: list[str] = []
    for role in run.roles.values():
        by_phase: dict[str, list[tuple[str, int]]] = {}
        for (path, name), total in sorted(role.counters.items()):
            if (role.name, path) not in shown:
                by_phase.setdefault(path, []).append((name, total))
        for path, counters in sorted(by_phase.items(), key=lambda item: (item[0] == "", item[0])):
            label = _clip(path) if path else "(no phase open)"
            tag = f"  {fmt.printable(role.name)}" if len(run.roles) > 1 else ""
            lines.append(f"  {label}{tag}")
            for name, total in counters:
                lines.append(_counter_row(name, total, role.phases.get(path) if path else None, role.lifetime_ns))
    if not lines:
        return []
    return ["COUNTERS  (under phases not listed above)"] + lines


# -- iterations --------------------------------------------------------------------------------


def iteration_phase(run: Run) -> tuple[str, str] | None:
    """``(phase, why)``: the configured ``window_phase`` if it was entered, else the most-entered
    top-level phase; None when no phase was entered at all."""
    configured = run.window_phase
    if configured is not None and any(
        p.entries
        for role in run.roles.values()
        for path, p in role.phases.items()
        if path == configured or p.leaf == configured
    ):
        return configured, "window_phase"
    # Top-level phases only, summed over the roles: (entries, wall) per path.
    top: dict[str, list[int]] = {}
    for role in run.roles.values():
        for path, p in role.phases.items():
            if p.entries > 0 and "/" not in path:
                sums = top.setdefault(path, [0, 0])
                sums[0] += p.entries
                sums[1] += p.wall_ns
    if not top:
        return None
    best = max(top, key=lambda path: (top[path][0], top[path][1], path))
    why = "the most-entered top-level phase"
    if configured is not None:
        why += f"; window_phase {fmt.printable(configured)!r} was never entered"
    return best, why


def _matching(role: RoleStats, name: str) -> PhaseStats | None:
    exact = role.phases.get(name)
    candidates = [exact] if exact is not None else [p for p in role.phases.values() if p.leaf == name]
    candidates = [p for p in candidates if p.entries > 0]
    if not candidates:
        return None
    merged = PhaseStats(name)
    for phase in candidates:
        merged.merge(phase)
    return merged


def _iteration_stats(phase: PhaseStats) -> str:
    return (
        f"  mean{fmt.duration(phase.mean_ns):>11}   p50{fmt.duration(phase.quantile(0.50)):>11}"
        f"   p95{fmt.duration(phase.quantile(0.95)):>11}   p99{fmt.duration(phase.quantile(0.99)):>11}"
    )


def render_iterations(run: Run, options: RenderOptions) -> list[str]:
    chosen = iteration_phase(run)
    if chosen is None:
        return []
    name, why = chosen
    per_role = [(role, stats) for role in run.roles.values() if (stats := _matching(role, name)) is not None]
    if not per_role:
        return []
    about = f"phase {_clip(name)} ({why})"
    if len(per_role) == 1:
        stats = per_role[0][1]
        return [f"ITERATIONS  ({fmt.count(stats.entries)} entries)  {about}", _iteration_stats(stats)]
    lines = [f"ITERATIONS  {about}"]
    for role, stats in per_role:
        lines.append(f"  {fmt.printable(role.name).upper()}  ({fmt.count(stats.entries)} entries)")
        lines.append(_iteration_stats(stats))
    return lines


# -- caveats -----------------------------------------------------------------------------------


def render_caveats(run: Run, options: RenderOptions) -> list[str]:
    lines = list(run.caveats) + list(options.caveats)
    if not lines:
        return []
    # Caveats quote file names and texts from the files: nothing in them may reach the terminal raw.
    return _section("CAVEATS") + [f"  - {fmt.printable(line)}" for line in lines]


#: The blocks of this module, in the order they print.
CORE_BLOCKS: tuple[Block, ...] = (render_header, render_roles, render_dominant, render_counters, render_iterations)
#: ``(origin, block)`` of the blocks that print after ITERATIONS and before CAVEATS, in order.
EXTRA_BLOCKS: tuple[tuple[str, Block], ...] = (
    *(("resources", block) for block in resources.BLOCKS),
    *(("gpu", block) for block in gpu.BLOCKS),
)


def render(run: Run, options: RenderOptions | None = None) -> str:
    """The whole report as text (no trailing newline)."""
    options = options if options is not None else RenderOptions(no_samples=run.no_samples)
    blocks = [*(("core", b) for b in CORE_BLOCKS), *EXTRA_BLOCKS]
    chunks: list[list[str]] = []
    for origin, block in blocks:
        try:
            lines = block(run, options)
        except Exception as error:
            if os.environ.get("LINEPROFILER_DEBUG"):
                raise
            title = getattr(block, "__name__", "a")
            options.add_caveat(
                f"the {origin} block {title} failed and is missing: {error.__class__.__name__}: {error}"
            )
            continue
        if lines:
            chunks.append(lines)
    caveats = render_caveats(run, options)
    if caveats:
        chunks.append(caveats)
    return "\n\n".join("\n".join(line.rstrip() for line in chunk) for chunk in chunks)


__all__ = [
    "Block",
    "CORE_BLOCKS",
    "EXTRA_BLOCKS",
    "RenderOptions",
    "iteration_phase",
    "render",
    "short_names",
]
