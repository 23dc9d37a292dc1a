"""The text report: the report's model (``report/model.py``) printed block by block.

Each ``*_lines(model)`` function prints one block; a block whose model is absent prints nothing.
:func:`.blocks.render_report` prints them in order, separated by one blank line (and
:func:`.blocks.render` computes the model first).

The order: header, one block per role, DOMINANT PHASES (with counters under their phase),
COUNTERS not shown there, ITERATIONS, BACKEND WINDOWS, then LINES (``--lines``), I/O BY PHASE, I/O, MEMORY, CPU, GPU,
TIMELINE and STORY (printed by :mod:`.text_blocks`), then CAVEATS: the order of ``build.BLOCKS``.
A block that fails to compute or to print costs that block only: it is named under CAVEATS and
the rest is printed.
Sentences the HTML page prints too come from :mod:`..wording`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from .. import format as fmt
from ..model import (
    BackendWindow,
    Counter,
    Counters,
    Dominant,
    Header,
    IterationRole,
    Iterations,
    Role,
    Source,
    Split,
)

# The sentences the HTML page prints too are worded in .wording; re-exported where they were.
from ..wording import (
    ATTEMPT_ROWS,
    CHOOSE_LOOP,
    SPARK_WIDTH,
    attempt_facts,
    attempt_lines,
    backend_window_text,
    role_title,
    roles_text,
    short_names,
    straggler_lines,
    time_in_phases_text,
    utc_time,
)
from . import cpu_text, gpu_text
from .step_text import collectives_text, replaces_split, step_parts_text
from .text_blocks import gpu_lines, io_by_phase_lines, io_lines, memory_lines

#: How many rows a role block prints before summarising the rest.
ROLE_ROWS = 8
#: How many counters COUNTERS prints, and DOMINANT PHASES under one phase, before one line counts
#: the rest: a run may count thousands of distinct names, and --json lists every one.
COUNTER_ROWS = 20
NAME_WIDTH = 30
#: The width the note under DOMINANT PHASES is wrapped to.
NOTE_WIDTH = 100
RULE = fmt.RULE


def _section(title: str) -> list[str]:
    return [title, fmt.RULE]


def _clip(name: str, width: int = NAME_WIDTH - 1) -> str:
    return fmt.clip_left(fmt.printable(name), width)


# -- header ------------------------------------------------------------------------------------


def header_lines(header: Header | None) -> list[str]:
    if header is None:
        return []
    roles = roles_text(header)
    lines = [f"Runtime {fmt.duration(header.runtime_ns)}   Processes {header.processes}   Roles {roles}"]
    hosts = [fmt.printable(h) for h in header.hosts]
    shown = ", ".join(hosts) if len(hosts) <= 8 else ", ".join(hosts[:6]) + f", ... {hosts[-1]}"
    noun = "node" if len(hosts) == 1 else "nodes"
    lines.append(f"Hosts {shown} ({len(hosts)} {noun})   Run {header.run}")
    extra = []
    if header.ranks:
        extra.append(f"Ranks {fmt.int_ranges(header.ranks)}")
    if header.job_ids:
        launchers = sorted({fmt.printable(name) for name in header.launchers})
        jobs = ", ".join(fmt.printable(j) for j in header.job_ids[:4])
        if len(header.job_ids) > 4:
            jobs += f" and {len(header.job_ids) - 4} more"
        extra.append(f"Job {jobs}" + (f" ({', '.join(launchers)})" if launchers else ""))
    extra.append(f"Started {utc_time(header.start_ns)}")
    lines.append("   ".join(extra))
    if header.sources:
        lines.append(sources_text(header))
    lines.extend(attempt_lines(header))
    return lines


def source_text(source: Source) -> str:
    """``0123abcd`` and, for a modified tree, ``(+dirty: 2 files, diff 9b1530cd)``."""
    text = fmt.printable(source.commit)[:8]
    if source.dirty_files:
        sha = f", diff {fmt.printable(source.diff_sha)}" if source.diff_sha else ""
        text += f" (+dirty: {fmt.count(source.dirty_files)} file{'s' if source.dirty_files != 1 else ''}{sha})"
    return text


def sources_text(header: Header) -> str:
    """The header's line of the code the run ran; several commits name their roles."""
    if len(header.sources) == 1:
        return f"Source {source_text(header.sources[0])}"
    shown = [f"{source_text(s)} ({', '.join(fmt.printable(r) for r in s.roles)})" for s in header.sources[:3]]
    more = f", and {len(header.sources) - 3} more" if len(header.sources) > 3 else ""
    return f"Sources {'; '.join(shown)}{more}"


# -- roles -------------------------------------------------------------------------------------


def role_lines(role: Role) -> list[str]:
    lines = _section(role_title(role))
    if not role.phases:
        lines.append("(no time recorded in phases)")
        return lines
    for phase in role.phases[:ROLE_ROWS]:
        row = f"{_clip(phase.name):<{NAME_WIDTH}}{fmt.percent(phase.share):>6}{fmt.duration(phase.self_ns):>13}"
        if phase.open_entries:
            row += f"   includes {fmt.count(phase.open_entries)} open entr{'y' if phase.open_entries == 1 else 'ies'}"
        lines.append(row)
    more, rest_ns, rest_share = role.rest(ROLE_ROWS)
    if more:
        label = f"({fmt.count(more)} more phases)"
        lines.append(f"{label:<{NAME_WIDTH}}{fmt.percent(rest_share):>6}{fmt.duration(rest_ns):>13}")
    lines.extend(f"  {sentence}" for sentence in (*straggler_lines(role), time_in_phases_text(role)) if sentence)
    if role.split is not None and not replaces_split(role):
        lines.append(f"  {split_text(role.split)}")
    for line in (step_parts_text(role), collectives_text(role)):
        if line is not None:
            lines.append(f"  {line}")
    return lines


#: Children a split line names before it counts the rest.
SPLIT_CHILDREN = 5


def split_text(split: Split) -> str:
    """``split of iteration: self_play 90.1% · train 8.2% · Other 1.7%``."""
    parts = [f"{fmt.printable(name)} {fmt.percent(share)}" for name, share in split.children[:SPLIT_CHILDREN]]
    more = split.children[SPLIT_CHILDREN:]
    if more:
        parts.append(f"{fmt.count(len(more))} more {fmt.percent(sum(share for _, share in more))}")
    if split.other:
        parts.append(f"Other {fmt.percent(split.other)}")
    return f"split of {_clip(split.parent)}: " + " · ".join(parts)


def roles_lines(roles: list[Role]) -> list[str]:
    lines: list[str] = []
    for role in roles:
        if lines:
            lines.append("")
        lines.extend(role_lines(role))
    return lines


# -- dominant phases and counters --------------------------------------------------------------


def counter_line(counter: Counter) -> str:
    """``+ name  total  rate  time-each``; a counter with no phase has no time-each."""
    # Each column keeps one space before it, so a value wider than its column stays readable
    # instead of running into the one before.
    tail = f" {fmt.rate(counter.per_s):>13}"
    if counter.per == "phase":
        tail += f" {fmt.per_each(counter.each_ns):>12}"
    return f"    + {_clip(counter.name, 23):<24}{fmt.count(counter.total):>8}{tail}{spread_text(counter)}"


def spread_text(counter: Counter) -> str:
    """``  always 8`` when every ``count()`` added the same, else ``  0..4``; "" unknown."""
    if counter.spread is None:
        return ""
    low, high = counter.spread
    return f"  always {fmt.count(low)}" if low == high else f"  {fmt.count(low)}..{fmt.count(high)}"


def dominant_lines(dominant: Dominant | None) -> list[str]:
    if dominant is None or not dominant.phases:
        return []
    several = dominant.several_roles
    # Why each row's threads waited, under it, where any process measured it: files written
    # before it was measured print the table they always did (--json says why it is missing).
    split_shown = cpu_text.measured(dominant.phases)
    # entries last: the seed's columns keep their places (0.10.0 had entries first)
    head = f"{'DOMINANT PHASES':<{NAME_WIDTH}}{'self':>10}{'wait':>8}{'p50':>10}{'p99':>10}{'entries':>11}"
    gpu_shown = gpu_text.shown(dominant)  # runs without GPU time print the table they always did
    lines = [head + (f"{'gpu':>10}" if gpu_shown else "") + ("  role" if several else "")]
    for phase in dominant.phases:
        line = (
            f"{_clip(phase.path):<{NAME_WIDTH}}{fmt.duration(phase.self_ns):>10}"
            f"{fmt.percent(phase.wait, 0):>8}{fmt.duration(phase.p50_ns):>10}{fmt.duration(phase.p99_ns):>10}"
            f" {fmt.count(phase.entries):>10}"
        )
        if gpu_shown:
            line += gpu_text.cell(phase)
        if several:
            line += f"  {fmt.printable(phase.role)}"
        lines.append(line)
        if split_shown:
            lines.append(f"    waited: {cpu_text.row_words(phase)}")
        lines.extend(counter_line(c) for c in phase.counters[:COUNTER_ROWS])
        if len(phase.counters) > COUNTER_ROWS:
            lines.append(f"    {more_counters(len(phase.counters) - COUNTER_ROWS)}")
    if split_shown:
        note = cpu_text.split_note(dominant.phases)
        lines.extend(textwrap.wrap(note, NOTE_WIDTH, initial_indent="  ", subsequent_indent="  "))
    lines.extend(gpu_text.lines(dominant))
    return lines


def more_counters(count: int) -> str:
    return f"... {fmt.count(count)} more counter{'s' if count != 1 else ''} (--json lists every one)"


def counters_lines(counters: Counters | None) -> list[str]:
    if counters is None or not counters.groups:
        return []
    lines = ["COUNTERS  (under phases not listed above)"]
    shown = 0
    for group in counters.groups:
        if shown == COUNTER_ROWS:
            break
        label = _clip(group.phase) if group.phase else "(no phase open)"
        tag = f"  {fmt.printable(group.role)}" if counters.several_roles else ""
        lines.append(f"  {label}{tag}")
        rows = group.counters[: COUNTER_ROWS - shown]
        lines.extend(counter_line(c) for c in rows)
        shown += len(rows)
    total = sum(len(group.counters) for group in counters.groups)
    if total > shown:
        lines.append(f"  {more_counters(total - shown)}")
    return lines


# -- iterations --------------------------------------------------------------------------------


def _iteration_stats(stats: IterationRole) -> str:
    return (
        f"  mean{fmt.duration(stats.mean_ns):>11}   p50{fmt.duration(stats.p50_ns):>11}"
        f"   p95{fmt.duration(stats.p95_ns):>11}   p99{fmt.duration(stats.p99_ns):>11}"
    )


def iterations_lines(iterations: Iterations | None) -> list[str]:
    if iterations is None or not iterations.roles:
        return []
    about = f"phase {_clip(iterations.phase)} ({iterations.why})"
    if len(iterations.roles) == 1:
        stats = iterations.roles[0]
        return [f"ITERATIONS  ({fmt.count(stats.entries)} entries)  {about}", _iteration_stats(stats)]
    one_phase = iterations.one_phase
    lines = [f"ITERATIONS  {about}" if one_phase else f"ITERATIONS  per role, its own loop ({CHOOSE_LOOP})"]
    for stats in iterations.roles:
        title = f"  {fmt.printable(stats.role).upper()}  ({fmt.count(stats.entries)} entries)"
        if not one_phase:
            title += f"  phase {_clip(stats.phase)} ({stats.why})"
        lines.append(title)
        lines.append(_iteration_stats(stats))
    return lines


# -- backend windows ---------------------------------------------------------------------------

#: Backend windows the text names, one line each, before one line counts the rest.
WINDOW_ROWS = 8


def windows_lines(windows: list[BackendWindow]) -> list[str]:
    """BACKEND WINDOWS: each window, and the file it wrote."""
    if not windows:
        return []
    lines = ["BACKEND WINDOWS  (the file each process's window wrote)"]
    lines.extend(f"  {backend_window_text(w)}" for w in windows[:WINDOW_ROWS])
    if len(windows) > WINDOW_ROWS:
        lines.append(f"  ... and {fmt.count(len(windows) - WINDOW_ROWS)} more (--json lists them)")
    return lines


# -- caveats and the whole report --------------------------------------------------------------


def caveats_lines(caveats: Sequence[str]) -> list[str]:
    if not caveats:
        return []
    # Caveats quote file names and texts from the files: nothing in them may reach the terminal raw.
    return _section("CAVEATS") + [f"  - {fmt.printable(line)}" for line in caveats]


__all__ = [
    "ATTEMPT_ROWS",
    "COUNTER_ROWS",
    "NAME_WIDTH",
    "ROLE_ROWS",
    "SPARK_WIDTH",
    "attempt_facts",
    "attempt_lines",
    "caveats_lines",
    "counter_line",
    "counters_lines",
    "dominant_lines",
    "gpu_lines",
    "header_lines",
    "io_by_phase_lines",
    "io_lines",
    "iterations_lines",
    "memory_lines",
    "more_counters",
    "role_lines",
    "roles_lines",
    "short_names",
    "windows_lines",
]
