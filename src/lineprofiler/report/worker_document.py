"""A worker file's validated document, as the report holds it: without its bulk samples.

Merge reads worker files without their inline ``samples`` (or drops them from large files read
whole), so a run of thousands of processes holds only their phase trees. The samples are read
again from the file, on purpose and one worker at a time, by :meth:`WorkerDocument.read_samples`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..runfiles import workerfile


class WorkerDocument(Mapping[str, Any]):
    """A validated worker document, read-only.

    Merge does not parse or keep inline ``samples`` (it reads files with ``skip_samples``, and
    drops them from large files read whole); :meth:`read_samples` then re-reads and re-validates
    the file, every time, so a block that handles one worker at a time holds one worker's
    samples at a time: read them once per worker. ``document["samples"]`` is the same call.
    """

    __slots__ = ("_data", "_path", "_samples_on_disk")

    def __init__(self, data: dict[str, Any], path: Path, samples_on_disk: bool) -> None:
        self._data = data
        self._path = path
        self._samples_on_disk = samples_on_disk

    def __getitem__(self, key: str) -> Any:
        if key == "samples":
            return self.read_samples()
        return self._data[key]

    def read_samples(self) -> Any:
        """The document's inline ``samples``: from the file again when they are kept on disk.

        Raises :class:`~lineprofiler.runfiles.workerfile.WorkerFileError` when the file can no
        longer be read.
        """
        if self._samples_on_disk:
            return workerfile.read_worker_file(self._path).get("samples")
        return self._data["samples"]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        # Mapping's default would call __getitem__ and re-read the samples just to answer.
        return key in self._data

    @property
    def samples_on_disk(self) -> bool:
        """True when ``samples`` is re-read from the file on access instead of held."""
        return self._samples_on_disk
