"""STORY: what set a traced run's length, from its exact spans and links.

Computed by :mod:`..story` (read only when some worker recorded a trace: otherwise the block is
absent and the report is what it was); printed by
:func:`..render.text_blocks.story_lines`.
"""

from __future__ import annotations

from ...read.run import Run
from ..story.assemble import story as build_story
from ..story.model import Story
from . import RenderOptions
from .cpu import run_cpu


def story_block(run: Run, options: RenderOptions) -> Story | None:
    def compute() -> tuple[Story | None, list[str]]:
        # The findings read each process's off-CPU split from the reads this report shares.
        return build_story(run, run_cpu(run, options))

    # Shared: the HTML and Perfetto outputs of one report read the traces once.
    result, notes = options.shared("story", run, compute)
    for line in notes:
        if line not in options.caveats:
            options.add_caveat(line)
    return result
