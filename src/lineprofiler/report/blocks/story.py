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
        f"traced length {fmt.duration(story.duration_ns)}",
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
    return lines
