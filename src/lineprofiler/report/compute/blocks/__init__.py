"""The report's blocks: each ``compute(run, options) -> model`` over a
:class:`~...read.run.Run`, and what every block is given (:class:`RenderOptions`) and the blocks
built from samples share.

:mod:`.roles` (the header and the roles), :mod:`.phases` (DOMINANT PHASES and COUNTERS),
:mod:`.iterations`, :mod:`.lines`, :mod:`.resources` (I/O BY PHASE, I/O, MEMORY), :mod:`.cpu`, :mod:`.gpu`,
:mod:`.timeline` and :mod:`.story` compute them; ``report/compute/build.py`` lists them in
order and runs them. Their models are ``report/model.py``'s; the renderers format those, never a
run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...read.run import Run

# Re-exported: the blocks (and their tests) take the samples' description from here.
from ...read.sample_info import SampleInfo as SampleInfo
from ...read.sample_info import sample_info as sample_info

_T = TypeVar("_T")


@dataclass
class RenderOptions:
    """What every block is given besides the run."""

    #: ``--no-samples``: blocks that read resource samples must not load them.
    no_samples: bool = False
    #: ``--lines``: the LINES block reads the line-stats files of ``backend="lines"`` windows,
    #: showing ``lines_top`` lines per role.
    lines: bool = False
    lines_top: int = 10
    #: Lines blocks add for CAVEATS (after the ones merge derived).
    caveats: list[str] = field(default_factory=list)
    #: Work shared by the blocks of one report: ``key -> (run, value)``.
    _shared: dict[str, tuple[Run, Any]] = field(default_factory=dict, repr=False)

    def add_caveat(self, line: str) -> None:
        """Name a limit of this report under CAVEATS (one line, no leading dash)."""
        self.caveats.append(line)

    def shared(self, key: str, run: Run, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per run for every block of this report that asks under ``key``."""
        held = self._shared.get(key)
        if held is None or held[0] is not run:
            held = self._shared[key] = (run, compute())
        value: _T = held[1]
        return value


def sample_infos(run: Run, options: RenderOptions) -> list[SampleInfo]:
    """:func:`sample_info` of every worker that has a ``samples`` object, read once per report."""

    def compute() -> list[SampleInfo]:
        return [info for info in map(sample_info, run.workers) if info is not None]

    return options.shared("sample_infos", run, compute)


__all__ = ["RenderOptions", "SampleInfo", "sample_info", "sample_infos"]
