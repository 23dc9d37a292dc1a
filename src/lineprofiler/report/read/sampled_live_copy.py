"""Where a process's sampled lines come from: its worker file's ``line_sampling`` section, or
the live copy beside it (``w_<run>_<pid>_<uuid8>.sampled_lines``), which a process killed
between snapshots (SIGKILL, the OOM killer) leaves with more windows.

A live copy is a file anyone could have damaged or cut short: whatever it holds costs that
process's newer lines only (a line under CAVEATS, the snapshot's section instead), never the
report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...runfiles import layout
from ...runfiles.linesampling import LineSamplingError, parse_section, read_live_copy
from .. import format as fmt

#: :attr:`~.run.Worker.sampled_lines_from` of a process whose lines come from its live copy.
LIVE = "live"


def _windows(section: object) -> int:
    """The windows of a worker file's section; -1 when it has none it can be read for."""
    if section is None:
        return -1
    try:
        return parse_section(section).windows
    except LineSamplingError:
        return -1


def prefer_live_copy(path: Path, document: dict[str, Any]) -> str:
    """Put the live copy's section into ``document`` when it holds more windows than the last
    snapshot's (the process never wrote a final snapshot); returns where the section came from:
    ``"json"``, :data:`LIVE`, or ``"json: <why the live copy was not used>"``.

    A final snapshot (the process exited or was signalled) holds every window: the copy is not
    even looked for."""
    if document["times"].get("end_unix_ns") is not None:
        return "json"
    name = fmt.printable(layout.sampled_lines_path(path).name)
    try:
        found = read_live_copy(path)
    except LineSamplingError as error:
        return f"json: live copy {name} not used: {fmt.printable(str(error))[:200]}"
    except Exception as error:  # a reader's bug costs this process's newer lines, not the report
        return f"json: live copy {name} not read (internal error: {error.__class__.__name__})"
    if found is None:
        return "json"
    raw, copy = found
    if copy.windows <= _windows(document.get("line_sampling")):
        return "json"
    document["line_sampling"] = raw
    return LIVE


__all__ = ["LIVE", "prefer_live_copy"]
