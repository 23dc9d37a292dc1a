"""The keys of a worker file's ``gpu.phase_time`` object, checked: each ``gpu=True`` phase's GPU
time from CUDA event pairs, the pairs measured, dropped (the pool was full) and still pending.
docs/gpu.md describes every key.

The object is optional (a file written before it existed, or by a process whose profiler did not
wire it, has none: the report says "not recorded"); one that is there must hold what its schema
says, or the file is refused with a one-line reason naming the key (:func:`check`).
"""

from __future__ import annotations

from .validation import NONE, Checker, Field

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run reads its file
if TYPE_CHECKING:
    from typing import Any

_PHASE_TIME = (
    Field("available", (bool,)),
    Field("unavailable_reason", (str, NONE), required=False),
    Field("source", (str, NONE), required=False),
    Field("pool_pairs", (int,), required=False, non_negative=True),
    Field("ended", (bool,), required=False),
    Field("errors", (int,), required=False, non_negative=True),
    Field("last_error", (str, NONE), required=False),
    Field("phases", (list,)),
)
#: One phase path's row.
_PHASE = (
    Field("path", (str,)),
    Field("gpu_ns", (int,), non_negative=True),
    Field("pairs", (int,), non_negative=True),
    Field("dropped", (int,), non_negative=True),
    Field("pending", (int,), non_negative=True),
)


def check(gpu: Any, path: object, checker: Checker) -> None:
    """Raise ``checker``'s error (one line: the file and the key) when ``gpu.phase_time`` holds
    what its schema does not allow; absent or null is fine."""
    if not isinstance(gpu, dict) or gpu.get("phase_time") is None:
        return
    checker.check(gpu["phase_time"], "gpu.phase_time", _PHASE_TIME, path)
    for i, row in enumerate(gpu["phase_time"]["phases"]):
        checker.check(row, f"gpu.phase_time.phases[{i}]", _PHASE, path)
