"""Per-process phase occupancy over time: the lanes of the HTML report and the slices of the
Perfetto export.

A worker file holds aggregates (counts, sums, histograms) and no record of *when* each phase
was open, so today no run has lanes and :func:`lanes` returns ``[]``. When the run directory
gains a timeline of phase intervals, its reader plugs in here, and both renderers already draw
what this returns: the HTML report a lane per process, the Perfetto export a complete-event
slice per span.
"""

from __future__ import annotations

from .blocks import RenderOptions
from .merge import Run
from .model import Lane


def lanes(run: Run, options: RenderOptions) -> list[Lane]:
    """Each process's phase spans, in the run's worker order; ``[]`` when the run recorded no
    timeline (every run today)."""
    return []


__all__ = ["lanes"]
