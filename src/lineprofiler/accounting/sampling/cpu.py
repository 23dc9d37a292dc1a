"""Why threads waited, and how much CPU the process and the machine had: the worker document's
``samples.off_cpu``, ``samples.process_cpu`` and ``samples.cpus`` (see docs/resources.md).

The native sampler attributes each thread's scheduler times to the phase it is in at every
timeline tick (``Sampler.sched()``); this module finds the cgroup files it reads, and turns its
phase node ids into paths. Nothing here runs per event: once at start, once per snapshot.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _cgroup_folders(proc_cgroup: str = PROC_CGROUP, root: str = CGROUP_ROOT) -> list[str]:
    """The folders of this process's CPU cgroup, most specific first: cgroup v2's unified
    folder, or v1's ``cpu`` controller folder (mounted as ``cpu`` or ``cpu,cpuacct``)."""
    text = _read(proc_cgroup) or ""
    folders = []
    for line in text.splitlines():
        _, _, rest = line.partition(":")
        controllers, _, relative = rest.partition(":")
        relative = relative.lstrip("/")
        if controllers == "":
            folders.append(os.path.join(root, relative))
        elif "cpu" in controllers.split(","):
            for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                folders.append(os.path.join(root, mount, relative))
    return folders


def cpu_stat_path(proc_cgroup: str = PROC_CGROUP, root: str = CGROUP_ROOT) -> str | None:
    """The ``cpu.stat`` that counts this process's cgroup's throttling, or None."""
    for folder in _cgroup_folders(proc_cgroup, root):
        path = os.path.join(folder, "cpu.stat")
        if os.path.isfile(path):
            return path
    return None


def _quota(folder: str) -> tuple[float | None, str | None] | None:
    """(CPUs the quota allows or None for no quota, the file) from a cgroup folder; None when it has
    no quota file."""
    v2 = os.path.join(folder, "cpu.max")
    text = _read(v2)
    if text is not None:
        quota, _, period = text.strip().partition(" ")
        if quota == "max":
            return None, v2
        try:
            return int(quota) / int(period), v2
        except (ValueError, ZeroDivisionError):
            return None, None
    quota_text = _read(os.path.join(folder, "cpu.cfs_quota_us"))
    period_text = _read(os.path.join(folder, "cpu.cfs_period_us"))
    if quota_text is None or period_text is None:
        return None
    source = os.path.join(folder, "cpu.cfs_quota_us")
    try:
        quota_us, period_us = int(quota_text), int(period_text)
    except ValueError:
        return None, None
    return (None if quota_us < 0 or period_us <= 0 else quota_us / period_us), source


def cpus_document(proc_cgroup: str = PROC_CGROUP, root: str = CGROUP_ROOT) -> dict[str, Any]:
    """``samples.cpus``: the CPUs the machine has, this process may run on, and its cgroup allows."""
    try:
        affinity: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    quota_cpus: float | None = None
    source: str | None = None
    reason: str | None = "no cgroup CPU quota file was found for this process"
    for folder in _cgroup_folders(proc_cgroup, root):
        found = _quota(folder)
        if found is not None:
            (quota_cpus, source), reason = found, None
            break
    return {
        "online": os.cpu_count() or None,
        "affinity": affinity,
        "quota_cpus": quota_cpus,
        "quota_source": source,
        "unavailable_reason": reason,
    }


def off_cpu_document(
    sched: dict[str, Any] | None, resolution_s: float | None, path_of: Callable[[int], str | None], reason: str | None
) -> dict[str, Any]:
    """``samples.off_cpu`` from the native sampler's ``sched()`` (None: not measured, ``reason``)."""
    if sched is None or resolution_s is None:
        return {"resolution_s": resolution_s, "phases": [], "unattributed_ns": 0, "threads": 0,
                "unavailable_reason": reason or "not measured", "throttle_unavailable_reason": None,
                "throttle_source": None}
    throttle_reason = sched.get("throttle_reason")
    phases = []
    unattributed = int(sched.get("unattributed_ns", 0))
    for node, elapsed, on_cpu, runqueue, throttled, blocked in sched.get("phases", ()):
        path = "" if node < 0 else path_of(node)
        if path is None:  # a node of a recorder that is no longer the primary one
            unattributed += elapsed
            continue
        # Never below zero (the worker file's readers refuse it): the C side's splits round.
        phases.append({
            "path": path, "elapsed_ns": max(elapsed, 0), "on_cpu_ns": max(on_cpu, 0), "runqueue_ns": max(runqueue, 0),
            "throttled_ns": None if throttle_reason else max(throttled, 0), "blocked_ns": max(blocked, 0),
        })
    threads = int(sched.get("threads", 0))
    return {
        "resolution_s": resolution_s,
        "phases": phases,
        "unattributed_ns": unattributed,
        "threads": threads,
        "unavailable_reason": reason or (sched.get("reason") if threads == 0 else None),
        "throttle_unavailable_reason": throttle_reason,
        "throttle_source": sched.get("throttle_source"),
    }


def process_cpu_document(sched: dict[str, Any] | None, reason: str | None) -> dict[str, Any]:
    """``samples.process_cpu``: all the process's threads' CPU time and its thread count."""
    def measured(key: str) -> int | None:
        value = None if sched is None else sched.get(key)
        return value if isinstance(value, int) and value >= 0 else None

    cpu_ns = measured("process_cpu_ns")
    return {
        "cpu_ns": cpu_ns,
        "threads": measured("process_threads"),
        "threads_max": measured("process_threads_max"),
        "unavailable_reason": None if cpu_ns is not None else (reason or "/proc/self/stat could not be read"),
    }
