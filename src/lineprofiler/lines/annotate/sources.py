"""Which text a profiled file is shown with: the file on disk when it is the source that ran,
else the line strings the stats carry.

A file on disk is the source that ran when its sha256 equals the one the line-stats file kept
(computed as :func:`lineprofiler.lines.saved.source_sha256` computes it: over the decoded text),
or, where no hash was kept (a live profiler), when every recorded line's text equals the disk's
(and at least one is known).
The file is read whole only up to :data:`MAX_SOURCE_BYTES`; anything odd (not a regular file, an
undecodable encoding, a read error) falls back to the recorded strings, never raises.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...runfiles.linesmerge import SourceConflict
from ...runfiles.linesrecords import LinesFile

__all__ = ["MAX_SOURCE_BYTES", "FileText", "file_hashes", "file_text"]

#: A source file larger than this is not read: its recorded lines are shown instead.
MAX_SOURCE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class FileText:
    """A file's lines by number (1-based). ``whole`` when they are the file's every line, read
    from disk; otherwise only the recorded lines whose text is known are present."""

    lines: Mapping[int, str]
    whole: bool

    @property
    def last(self) -> int:
        return max(self.lines, default=0)


def _read_disk(filename: str) -> list[str] | None:
    """The file's lines as Python decodes them (its coding cookie honoured), newlines kept."""
    try:
        info = os.stat(filename)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        with tokenize.open(filename) as handle:
            return handle.readlines()
    except (OSError, SyntaxError, UnicodeError, LookupError, ValueError):
        return None


def _sha256(lines: Sequence[str]) -> str:
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def file_text(filename: str, expected_sha256: str | None, recorded: Mapping[int, str | None]) -> FileText:
    """The text to show for ``filename``; ``recorded`` maps each recorded line to the text the
    stats carry (None: unknown)."""
    disk = _read_disk(filename)
    if disk is not None:
        stripped = [line.rstrip("\r\n") for line in disk]
        if expected_sha256 is not None:
            same = _sha256(disk) == expected_sha256
        else:  # at least one known line must agree: a name alone never shows a file's contents
            same = any(text is not None for text in recorded.values()) and all(
                text is None or (0 < lineno <= len(stripped) and stripped[lineno - 1] == text)
                for lineno, text in recorded.items()
            )
        if same:
            return FileText(dict(enumerate(stripped, 1)), whole=True)
    return FileText({lineno: text for lineno, text in sorted(recorded.items()) if text is not None}, whole=False)


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
