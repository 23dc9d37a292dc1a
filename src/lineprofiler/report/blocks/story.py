"""STORY: what set a traced run's length, from its exact spans and links.

Computed by :mod:`..story` (read only when some worker recorded a trace: otherwise the block is
absent and the report is what it was); printed by :func:`story_lines`. Every output that shows
spans says how many were kept.
"""

from __future__ import annotations

from .. import format as fmt
from ..run import Run
from ..story.assemble import story as build_story
from ..story.clocks import offset_text
from ..story.model import Story
from . import RenderOptions

#: Critical-path shares, findings and skew rows the text prints (``--json`` has them all).
PATH_ROWS = 8
FINDING_ROWS = 10
LIFECYCLE_ROWS = 8


def story_block(run: Run, options: RenderOptions) -> Story | None:
    def compute() -> tuple[Story | None, list[str]]:
        return build_story(run)

    # Shared: the HTML and Perfetto outputs of one report read the traces once.
    result, notes = options.shared("story", run, compute)
    for line in notes:
        if line not in options.caveats:
            options.add_caveat(line)
    return result


def _who(story: Story, index: int) -> str:
    return story.processes[index].label


def story_lines(story: Story | None) -> list[str]:
    if story is None:
        return []
    lines = [
        "STORY (exact spans and links)",
        fmt.RULE,
        f"{len(story.processes)} traced process(es), {story.kept_line}; "
        + (
            f"traced length {fmt.duration(story.duration_ns)}"
            if story.spans_kept
            else "no phase entry was traced (links and lifecycles only)"
        ),
    ]
    for clock in story.hosts:
        if clock.source == "reference":
            continue
        # The true offset lies within the bounds; the estimate need not be their middle.
        bounds = f"within [{offset_text(clock.low_ns)}, {offset_text(clock.high_ns)}]"
        lines.append(
            f"Clock of {fmt.printable(clock.host)}: offset {offset_text(clock.offset_ns)} {bounds} "
            f"(from {clock.source}{f', {clock.links} link(s)' if clock.links else ''})"
        )
    killed = [p for p in story.processes if p.killed]
    for process in killed:
        lines.append(
            f"{process.label} died with {process.open_entries} entr{'y' if process.open_entries == 1 else 'ies'} "
            "open: drawn open to its last known moment"
        )
    path = story.path
    if path is not None:
        lines.append("")
        lines.append(
            f"Critical path {fmt.duration(path.duration_ns)} of {fmt.duration(story.duration_ns)}, "
            f"{len(path.segments)} segment(s), {path.jumps} link(s) followed"
        )
        for share in path.shares[:PATH_ROWS]:
            process = story.processes[share.process]
            phase = fmt.printable(share.phase) if share.phase else "(no phase)"
            lines.append(
                f"  {fmt.percent(share.fraction):>6}  {fmt.duration(share.duration_ns):>8}  "
                f"{fmt.printable(process.role)} pid {process.pid} on {fmt.printable(process.host)}  {phase}"
            )
        if len(path.shares) > PATH_ROWS:
            lines.append(f"  ... {len(path.shares) - PATH_ROWS} more (--json lists them)")
    if story.findings:
        lines.append("")
        lines.append("Findings (ranked by what they cost the run)")
        for n, finding in enumerate(story.findings[:FINDING_ROWS], start=1):
            cost = (
                "cost unknown" if finding.cost_fraction is None else f"{fmt.percent(finding.cost_fraction)} of the run"
            )
            lines.append(f"  {n}. [{cost}] {finding.text}")
        if len(story.findings) > FINDING_ROWS:
            lines.append(f"  ... {len(story.findings) - FINDING_ROWS} more (--json lists them)")
    if story.skew:
        lines.append("")
        lines.append("Step skew at collective phases")
        for row in story.skew:
            rank = "unknown" if row.straggler_rank is None else f"rank {row.straggler_rank}"
            lines.append(
                f"  {fmt.printable(row.phase)}: {row.ranks} ranks, {row.steps} steps, first-to-last "
                f"{fmt.duration(row.mean_spread_ns)} a step, last most often: {rank} ({row.straggler_steps} steps)"
            )
    lines.extend(_lifecycle_lines(story))
    return lines


def _lifecycle_lines(story: Story) -> list[str]:
    """REQUEST LIFECYCLES: per channel, its requests' time split between their checkpoints."""
    if not story.lifecycles:
        return []
    lines = ["", "Request lifecycles (trace_begin -> trace_mark -> trace_end, on the run's timeline)"]
    for channel in story.lifecycles[:LIFECYCLE_ROWS]:
        left = [
            f"{count} {what}"
            for count, what in ((channel.incomplete, "incomplete"), (channel.out_of_order, "out of order"))
            if count
        ]
        spread = ""
        if channel.p50_ns is not None and channel.p95_ns is not None and channel.max_ns is not None:
            spread = (
                f", median {fmt.duration(channel.p50_ns)}, p95 {fmt.duration(channel.p95_ns)}, "
                f"max {fmt.duration(channel.max_ns)}"
            )
        lines.append(
            f"  {fmt.printable(channel.channel)}: {fmt.count(channel.requests)} request(s){spread}"
            + (f" ({', '.join(left)} left out)" if left else "")
        )
        for segment in channel.segments:
            share = segment.total_ns / channel.total_ns if channel.total_ns > 0 else 0.0
            lines.append(
                f"    {fmt.printable(segment.name):<34} {fmt.percent(share):>6}  "
                f"mean {fmt.duration(segment.mean_ns):>8}  p95 {fmt.duration(segment.p95_ns):>8}  "
                f"({fmt.count(segment.count)})"
            )
        for key, ns, begun, ended in channel.slowest[:1]:
            where = _who(story, begun) if begun == ended else f"{_who(story, begun)} -> {_who(story, ended)}"
            lines.append(f"    slowest: key {fmt.printable(key)}, {fmt.duration(ns)} ({where})")
    if len(story.lifecycles) > LIFECYCLE_ROWS:
        lines.append(f"  ... {len(story.lifecycles) - LIFECYCLE_ROWS} more channel(s) (--json lists them)")
    return lines
