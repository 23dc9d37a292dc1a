"""Which text a profiled file is shown with: the file on disk when it is the source that ran,
else the line strings the stats carry.

A file on disk is the source that ran when its sha256 equals the one the line-stats file kept
(computed as :func:`lineprofiler.lines.saved.source_sha256` computes it: over the decoded text),
or, where no hash was kept (a live profiler), when every recorded line's text equals the disk's
(and at least one is known).
The file is read as :func:`~lineprofiler.lines.sourcefile.source_lines` reads one: a regular file
of at most :data:`MAX_SOURCE_BYTES`, never blocking (a FIFO, a device or a ``/proc`` file is
not read); anything odd (an undecodable encoding, a read error) falls back to the recorded
strings, never raises. The page says why it shows only those (:attr:`FileText.reason`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...runfiles.linesmerge import SourceConflict
from ...runfiles.linesrecords import LinesFile
from ..sourcefile import MAX_SOURCE_BYTES, disk_lines

__all__ = ["CHANGED", "MAX_SOURCE_BYTES", "UNREADABLE", "UNVERIFIED", "FileText", "file_hashes", "file_text"]

#: Why only the recorded lines are shown.
CHANGED = "the file on disk changed since the run"
UNVERIFIED = "no recorded text or hash to check the file on disk against"
UNREADABLE = (
    f"the file on disk is missing, unreadable or not a regular file of at most {MAX_SOURCE_BYTES // 1024 // 1024} MiB"
)


@dataclass(frozen=True)
class FileText:
    """A file's lines by number (1-based). ``whole`` when they are the file's every line, read
    from disk; otherwise only the recorded lines whose text is known are present."""

    lines: Mapping[int, str]
    whole: bool
    #: Why the file on disk is not shown (:data:`CHANGED`, :data:`UNREADABLE`); None when it is.
    reason: str | None = None

    @property
    def last(self) -> int:
        return max(self.lines, default=0)


def _sha256(lines: Sequence[str]) -> str:
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def file_text(
    filename: str, expected_sha256: str | None, recorded: Mapping[int, str | None], changed: bool = False
) -> FileText:
    """The text to show for ``filename``; ``recorded`` maps each recorded line to the text the
    stats carry (None: unknown); ``changed``: the stats say the file changed since the run."""
    disk = None if changed else disk_lines(filename)
    reason = CHANGED if changed else UNREADABLE
    if disk is not None:
        stripped = [line.rstrip("\r\n") for line in disk]
        known = any(text is not None for text in recorded.values())
        reason = CHANGED if expected_sha256 is not None or known else UNVERIFIED
        if expected_sha256 is not None:
            same = _sha256(disk) == expected_sha256
        else:  # at least one known line must agree: a name alone never shows a file's contents
            same = known and all(
                text is None or (0 < lineno <= len(stripped) and stripped[lineno - 1] == text)
                for lineno, text in recorded.items()
            )
        if same:
            return FileText(dict(enumerate(stripped, 1)), whole=True)
    kept = {lineno: text for lineno, text in sorted(recorded.items()) if text is not None}
    return FileText(kept, whole=False, reason=reason)


def file_hashes(processes: Iterable[LinesFile], conflicts: Iterable[SourceConflict] = ()) -> dict[str, str]:
    """The source hash of each file, as saved line-stats files kept it: the first hash seen, or
    for a file whose source differed between processes, the version the merge kept."""
    out: dict[str, str] = {}
    for proc in processes:
        for name, digest in proc.files.items():
            if digest is not None:
                out.setdefault(name, digest)
    for conflict in conflicts:
        out[conflict.file] = conflict.versions[0][0]
    return out
