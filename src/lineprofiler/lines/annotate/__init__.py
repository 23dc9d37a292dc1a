"""Annotated source in HTML: ``LineProfiler.to_html()``, ``lineprofiler run --html`` and
``lineprofiler view --html`` write one self-contained page of every profiled file's source with
each line's hits, time, self time and time per hit in the margin, heat-coloured by time."""

from .page import Limits, render_annotated, write_annotated

__all__ = ["Limits", "render_annotated", "write_annotated"]
