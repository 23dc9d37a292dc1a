"""``lineprofiler run --html PATH``: the page written after the tables, from the run's own
profiler, or from the files of its processes with ``--children``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ...runfiles.linesfile import LinesFileError
from ...runfiles.output import is_stream

if TYPE_CHECKING:
    from ..profiler import LineProfiler

__all__ = ["html_target_problem", "write_run_page"]


def html_target_problem(path: str) -> str | None:
    """Why ``--html PATH`` could not be written, checked before the program runs (None: it
    looks writable), so a typo costs no run."""
    target = Path(os.path.abspath(path))
    if target.is_dir():
        return f"--html {path}: is a directory"
    if is_stream(target):  # a FIFO or a device, written into
        return None if os.access(target, os.W_OK) else f"--html {path}: cannot write it"
    if not target.parent.is_dir():
        return f"--html {path}: the folder {str(target.parent)!r} does not exist"
    if not os.access(target.parent, os.W_OK | os.X_OK):
        return f"--html {path}: cannot write in {str(target.parent)!r}"
    return None


def write_run_page(path: str, profiler: LineProfiler, folder: Path | None, what: str) -> str:
    """Write the page (from ``folder``'s process files when given, else from ``profiler``)
    and return the line to print on stderr: where it went, or why it could not be written.
    Never raises: the program's exit status is the run's."""
    title = f"lineprofiler run {what}"
    try:
        if folder is not None:
            from ..saved import SavedProfile

            SavedProfile.load(folder).to_html(path, title=title)
        else:
            profiler.to_html(path, title=title)
    except OSError as error:
        return f"lineprofiler: could not write {path}: {error.strerror or error}"
    except LinesFileError as error:
        return f"lineprofiler: could not write {path}: {error}"
    except Exception as error:  # a bug of ours must not cost the user the run's status
        return f"lineprofiler: could not write {path}: {error!r}"
    return f"lineprofiler: annotated source written to {path}"
