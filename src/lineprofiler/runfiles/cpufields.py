"""The CPU keys of a worker file's ``samples`` object, checked: why its threads waited, per
phase (``off_cpu``), the process's CPU time and threads (``process_cpu``) and the CPUs it could
use (``cpus``). docs/resources.md describes every key.

Each key is optional (a file written before they existed has none: the report says "not
measured"); a key that is there must hold what its schema says, or the file is refused with a
one-line reason naming the key, as the rest of the worker file is (:func:`check`).
"""

from __future__ import annotations

from .validation import NONE, Checker, Field

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run reads its file
if TYPE_CHECKING:
    from typing import Any

_OFF_CPU = (
    Field("resolution_s", (int, float, NONE), required=False, non_negative=True),
    Field("phases", (list,), required=False),
    Field("unattributed_ns", (int, NONE), required=False, non_negative=True),
    Field("threads", (int, NONE), required=False, non_negative=True),
    Field("unavailable_reason", (str, NONE), required=False),
    Field("throttle_unavailable_reason", (str, NONE), required=False),
    Field("throttle_source", (str, NONE), required=False),
)
#: One phase's row: the thread-time attributed to it, split four ways.
_OFF_CPU_PHASE = (
    Field("path", (str,)),
    Field("elapsed_ns", (int,), non_negative=True),
    Field("on_cpu_ns", (int,), non_negative=True),
    Field("runqueue_ns", (int,), non_negative=True),
    Field("throttled_ns", (int, NONE), required=False, non_negative=True),
    Field("blocked_ns", (int,), non_negative=True),
)
_PROCESS_CPU = (
    Field("cpu_ns", (int, NONE), required=False, non_negative=True),
    Field("threads", (int, NONE), required=False, non_negative=True),
    Field("threads_max", (int, NONE), required=False, non_negative=True),
    Field("unavailable_reason", (str, NONE), required=False),
)
_CPUS = (
    Field("online", (int, NONE), required=False, non_negative=True),
    Field("affinity", (int, NONE), required=False, non_negative=True),
    Field("quota_cpus", (int, float, NONE), required=False, non_negative=True),
    Field("quota_source", (str, NONE), required=False),
    Field("unavailable_reason", (str, NONE), required=False),
)


def check(samples: Any, path: object, checker: Checker) -> None:
    """Raise ``checker``'s error (one line: the file and the key) when a CPU key of ``samples``
    holds what its schema does not allow; a key that is absent or null is fine."""
    if not isinstance(samples, dict):
        return
    off_cpu = samples.get("off_cpu")
    if off_cpu is not None:
        checker.check(off_cpu, "samples.off_cpu", _OFF_CPU, path)
        for i, row in enumerate(off_cpu.get("phases") or ()):
            checker.check(row, f"samples.off_cpu.phases[{i}]", _OFF_CPU_PHASE, path)
    for key, fields in (("process_cpu", _PROCESS_CPU), ("cpus", _CPUS)):
        value = samples.get(key)
        if value is not None:
            checker.check(value, f"samples.{key}", fields, path)
