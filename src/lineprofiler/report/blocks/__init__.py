"""The report's blocks: each ``compute(run, options) -> model`` over a :class:`~..run.Run`, and
what every block is given (:class:`RenderOptions`) and the blocks built from samples share.

:mod:`.header`, :mod:`.roles`, :mod:`.phases` (DOMINANT PHASES and COUNTERS), :mod:`.iterations`,
:mod:`.lines`, :mod:`.resources` (I/O BY PHASE, I/O, MEMORY), :mod:`.gpu` and :mod:`.timeline`
compute them; ``report/build.py`` lists them in order and runs them. Their models are
``report/model.py``'s; the renderers format those, never a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ...runfiles.workerfile import WorkerFileError
from ..run import Run, Worker

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


@dataclass(frozen=True)
class SampleInfo:
    """What one worker's document says about its resource samples (its ``samples`` object).

    The object comes from the worker file and only its type was checked on reading, so each
    value is checked here once: the blocks read this, never the raw object.
    """

    worker: Worker
    #: The sample file, in the worker file's own folder; None when none was written.
    sidecar: Path | None
    #: The sampling interval in seconds, when the document gives a positive one.
    interval_s: float | None
    #: The sample file's columns as the document lists them.
    columns: tuple[str, ...]
    #: Why no sample file was written (or the worker file could not be re-read).
    unavailable_reason: str | None
    io_unavailable_reason: str | None
    phase_unavailable_reason: str | None


def _text(samples: dict[str, Any], key: str) -> str | None:
    value = samples.get(key)
    return value if isinstance(value, str) and value else None


def sample_info(worker: Worker) -> SampleInfo | None:
    """The worker's :class:`SampleInfo`, or None when its document has no ``samples`` object.

    Reads the samples once (merge keeps them on disk: this re-reads the worker file);
    a file that can no longer be read gives a SampleInfo whose reason says so.
    """
    try:
        samples = worker.document.read_samples()
    except WorkerFileError as error:
        return SampleInfo(worker, None, None, (), f"its worker file could not be re-read: {error}", None, None)
    if not isinstance(samples, dict):
        return None
    name = samples.get("file")
    sidecar = None
    # Only a plain name: a sample file is never looked for outside its worker's folder.
    if isinstance(name, str) and name and "/" not in name and "\\" not in name and name not in (".", ".."):
        sidecar = worker.path.parent / name
    interval = samples.get("interval_s")
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 < interval < 1e9:
        interval = None
    columns = samples.get("columns")
    names = tuple(c for c in columns if isinstance(c, str)) if isinstance(columns, list) else ()
    return SampleInfo(
        worker=worker,
        sidecar=sidecar,
        interval_s=None if interval is None else float(interval),
        columns=names,
        unavailable_reason=_text(samples, "unavailable_reason"),
        io_unavailable_reason=_text(samples, "io_unavailable_reason"),
        phase_unavailable_reason=_text(samples, "phase_unavailable_reason"),
    )


def sample_infos(run: Run, options: RenderOptions) -> list[SampleInfo]:
    """:func:`sample_info` of every worker that has a ``samples`` object, read once per report."""

    def compute() -> list[SampleInfo]:
        return [info for info in map(sample_info, run.workers) if info is not None]

    return options.shared("sample_infos", run, compute)


__all__ = ["RenderOptions", "SampleInfo", "sample_info", "sample_infos"]
