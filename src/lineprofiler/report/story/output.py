"""A traced run's story as ``lineprofiler trace`` and 0.10.0's ``write_trace()`` give it: found in
the run (or one line saying why there is none) and rendered as text, JSON or HTML."""

from __future__ import annotations

from ..merge import ReportError
from ..run import Run
from .assemble import story
from .model import Story

__all__ = ["render_story", "run_story"]


def run_story(run: Run) -> tuple[Story, list[str]]:
    """The story of ``run`` and its CAVEATS (the run's, then the story's own notes). Raises
    ReportError (one line: the first reason, and how many more) when no worker has a usable
    trace: a thousand workers could each give one."""
    result, notes = story(run)
    if result is None:
        reason = f": {notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else "") if notes else ""
        raise ReportError(f"no worker of this run recorded a usable trace (Profiler(trace=True)){reason}")
    return result, list(run.caveats) + [n for n in notes if n not in run.caveats]


def render_story(result: Story, caveats: list[str], fmt: str, *, title: str, max_spans: int | None = None) -> str:
    """``fmt`` ``"json"`` (``kind`` ``"lineprofiler-story"``), ``"html"`` (the lanes, at most
    ``max_spans`` boxes) or ``"text"`` (STORY, then CAVEATS; no trailing newline)."""
    if fmt == "json":
        from .. import json as report_json

        document = {"kind": "lineprofiler-story", "version": 1, "story": report_json.plain(result), "caveats": caveats}
        return report_json.dumps(document)
    if fmt == "html":
        from ..html.story import render_story_html

        return render_story_html(result, caveats, title=title, max_spans=max_spans)
    from ..blocks.story import story_lines
    from ..text import caveats_lines

    return "\n\n".join("\n".join(chunk) for chunk in (story_lines(result), caveats_lines(caveats)) if chunk)
