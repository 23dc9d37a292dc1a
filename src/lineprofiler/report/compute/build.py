"""From a merged run to the report's model: every block's numbers, computed once.

:data:`BLOCKS` is the one list of the report's blocks, in the order they print: what each is
called, where its model goes in :class:`~.model.Report`, and its ``compute(run, options) ->
model`` (``None`` or ``[]``: the block is absent). :func:`build_report` runs them in order; a
block that raises costs that block only: it is named under CAVEATS and the rest is computed.
The computations live in ``blocks/``; the renderers (text, JSON, HTML) then format the same
:class:`~.model.Report`, the text printing the blocks in this same order.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model import Report
from ..read.run import Run
from .blocks import RenderOptions, cpu, gpu, lines, resources, timeline
from .blocks.iterations import iteration_phase, iterations, role_loop, role_window_phase
from .blocks.phases import DOMINANT_ROWS, buckets, counter, counters, dominant
from .blocks.roles import attempt, header, process, roles
from .blocks.story import story_block
from .blocks.windows import windows

Compute = Callable[[Run, RenderOptions], Any]


@dataclass(frozen=True)
class Block:
    """One block of the report. CAVEATS names a block that fails by ``origin`` and ``name`` (or,
    when the text fails to print it, ``printed_as``): those words are part of the output."""

    origin: str
    #: What CAVEATS calls its computation.
    name: str
    #: The :class:`~.model.Report` attribute its model goes to.
    attribute: str
    compute: Compute
    #: What CAVEATS calls its text printer; None: the text prints no such block.
    printed_as: str | None


def _timeline_block(run: Run, options: RenderOptions) -> Any:
    # The timeline's functions are looked up at each call, so that a test can replace them.
    return timeline.timeline_block(run, options)


def _lanes(run: Run, options: RenderOptions) -> Any:
    return timeline.lanes(run, options)


BLOCKS: tuple[Block, ...] = (
    Block("core", "render_header", "header", header, "render_header"),
    Block("core", "render_roles", "roles", roles, "render_roles"),
    Block("core", "render_dominant", "dominant", dominant, "render_dominant"),
    Block("core", "render_counters", "counters", counters, "render_counters"),
    Block("core", "render_iterations", "iterations", iterations, "render_iterations"),
    Block("core", "render_windows", "windows", windows, "render_windows"),
    Block("lines", "lines_block", "lines", lines.lines_block, "render_lines"),
    Block("resources", "render_io_by_phase", "io_by_phase", resources.io_by_phase, "render_io_by_phase"),
    Block("resources", "render_io", "io", resources.sampled_io, "render_io"),
    Block("resources", "render_memory", "memory", resources.memory, "render_memory"),
    # Cores used against the CPUs there were, per host (and, on DOMINANT PHASES, why phases waited).
    Block("resources", "render_cpu", "cpu", cpu.cpu_block, "render_cpu"),
    Block("gpu", "render", "gpu", gpu.gpu_block, "render"),
    Block("timeline", "timeline_block", "timeline", _timeline_block, "render_timeline"),
    # The HTML report and the Perfetto export draw the lanes; the text has no such block.
    Block("timeline", "lanes", "lanes", _lanes, None),
    # None unless a worker recorded a trace (then STORY: the critical path and findings).
    Block("story", "story_block", "story", story_block, "story_lines"),
)


def failure_line(origin: str, name: str, error: Exception) -> str:
    """The CAVEATS line of a block that raised."""
    return f"the {origin} block {name} failed and is missing: {error.__class__.__name__}: {error}"


def build_report(run: Run, options: RenderOptions | None = None) -> Report:
    """Every block's model over ``run``; CAVEATS last, merge's lines then the blocks'."""
    options = options if options is not None else RenderOptions(no_samples=run.no_samples)
    report = Report()
    for block in BLOCKS:
        try:
            value = block.compute(run, options)
        except Exception as error:
            if os.environ.get("LINEPROFILER_DEBUG"):
                raise
            options.add_caveat(failure_line(block.origin, block.name, error))
            report.failed.append(f"{block.origin} {block.name}")
            continue
        if value is not None:
            setattr(report, block.attribute, value)
    report.caveats = list(run.caveats) + list(options.caveats)
    return report


# The blocks' computations are re-exported: they were defined here first.
__all__ = [
    "BLOCKS",
    "DOMINANT_ROWS",
    "Block",
    "attempt",
    "build_report",
    "buckets",
    "counter",
    "counters",
    "dominant",
    "failure_line",
    "header",
    "iteration_phase",
    "iterations",
    "process",
    "role_loop",
    "role_window_phase",
    "roles",
]
