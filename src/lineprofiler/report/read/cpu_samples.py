"""What one worker's ``samples`` object says about CPU: why its threads were not running, per
phase (``off_cpu``), the process's CPU time and threads (``process_cpu``), and the CPUs it could
use (``cpus``). The worker file's reader checked the keys' types (:mod:`...runfiles.cpufields`);
this gives the blocks typed values and, for each part, either its numbers or why there are none
("could not measure", never 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Why a part is missing from a file written before the sampler measured it.
NOT_RECORDED = "recorded by a version of lineprofiler that did not measure it"
#: Why every part is missing from a worker that ran no resource sampler.
NO_SAMPLER = "no resource sampler ran in it (samples are null)"


@dataclass(frozen=True, slots=True)  # one per phase path per process: as many as their phase trees
class PhaseSplit:
    """The thread-time attributed to one phase path (innermost: the deepest open phase of the
    thread; ``""``: no phase), split into on CPU, waiting for a CPU, throttled by the cgroup's
    quota (None: its counters were unreadable) and blocked (sleeping)."""

    path: str
    elapsed_ns: int
    on_cpu_ns: int
    runqueue_ns: int
    throttled_ns: int | None
    blocked_ns: int


@dataclass(frozen=True)
class OffCpu:
    #: Empty when not measured (``reason`` says why).
    phases: tuple[PhaseSplit, ...]
    #: The tick of the attribution to phases, in seconds.
    resolution_s: float | None
    #: Thread-time of intervals that crossed more than one phase change: attributed to none.
    unattributed_ns: int | None
    threads: int | None
    reason: str | None
    throttle_reason: str | None
    throttle_source: str | None

    @property
    def measured(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class ProcessCpu:
    """The CPU time of all the process's threads (those that never entered a phase too)."""

    cpu_ns: int | None
    threads: int | None
    threads_max: int | None
    reason: str | None


@dataclass(frozen=True)
class Capacity:
    """The CPUs the process could run on."""

    online: int | None
    affinity: int | None
    quota_cpus: float | None
    quota_source: str | None
    reason: str | None


@dataclass(frozen=True)
class WorkerCpu:
    off_cpu: OffCpu
    process: ProcessCpu
    capacity: Capacity


def _int(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    return value if type(value) is int and value >= 0 else None


def _text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) and value else None


def _positive(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e12:
        return None
    return float(value)


def _off_cpu(value: Any, absent: str) -> OffCpu:
    if not isinstance(value, dict):
        return OffCpu((), None, None, None, absent, None, None)
    reason = _text(value, "unavailable_reason")
    rows = value.get("phases")
    phases: tuple[PhaseSplit, ...] = ()
    if reason is None and isinstance(rows, list):
        phases = tuple(
            PhaseSplit(
                row["path"], row["elapsed_ns"], row["on_cpu_ns"], row["runqueue_ns"],
                row.get("throttled_ns"), row["blocked_ns"],
            )
            for row in rows
        )
    elif reason is None:
        reason = "its off_cpu object lists no phases"
    throttle_reason = _text(value, "throttle_unavailable_reason")
    if reason is None and throttle_reason is None and any(p.throttled_ns is None for p in phases):
        throttle_reason = "the cgroup's cpu.stat could not be read"
    return OffCpu(
        phases=phases,
        resolution_s=_positive(value, "resolution_s"),
        unattributed_ns=_int(value, "unattributed_ns"),
        threads=_int(value, "threads"),
        reason=reason,
        throttle_reason=throttle_reason,
        throttle_source=_text(value, "throttle_source"),
    )


def _process(value: Any, absent: str) -> ProcessCpu:
    if not isinstance(value, dict):
        return ProcessCpu(None, None, None, absent)
    cpu_ns = _int(value, "cpu_ns")
    reason = _text(value, "unavailable_reason")
    if cpu_ns is None and reason is None:
        reason = "its CPU time could not be read"
    return ProcessCpu(cpu_ns, _int(value, "threads"), _int(value, "threads_max"), reason)


def _capacity(value: Any, absent: str) -> Capacity:
    if not isinstance(value, dict):
        return Capacity(None, None, None, None, absent)
    online, affinity = _int(value, "online"), _int(value, "affinity")
    reason = _text(value, "unavailable_reason")
    if online is None and affinity is None and reason is None:
        reason = "neither its CPU count nor its affinity could be read"
    return Capacity(
        online or None, affinity or None, _positive(value, "quota_cpus"), _text(value, "quota_source"), reason
    )


def worker_cpu(samples: Any) -> WorkerCpu:
    """The CPU parts of a worker's ``samples`` object (None: no sampler ran), each with its
    numbers or why it has none."""
    if not isinstance(samples, dict):
        return WorkerCpu(_off_cpu(None, NO_SAMPLER), _process(None, NO_SAMPLER), _capacity(None, NO_SAMPLER))
    return WorkerCpu(
        _off_cpu(samples.get("off_cpu"), NOT_RECORDED),
        _process(samples.get("process_cpu"), NOT_RECORDED),
        _capacity(samples.get("cpus"), NOT_RECORDED),
    )


def unreadable(reason: str) -> WorkerCpu:
    """What a worker whose file could not be re-read for its samples says about its CPU."""
    return WorkerCpu(_off_cpu(None, reason), _process(None, reason), _capacity(None, reason))


__all__ = ["NOT_RECORDED", "NO_SAMPLER", "Capacity", "OffCpu", "PhaseSplit", "ProcessCpu", "WorkerCpu", "worker_cpu"]
