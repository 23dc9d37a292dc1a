"""Where a process's numbers come from: its worker file's last snapshot, or the live file beside
it, which a process killed between snapshots (SIGKILL, the OOM killer) leaves fuller.

A live file is a file anyone could have damaged: whatever it holds costs that process's live
numbers only (a line under CAVEATS, the snapshot's numbers instead), never the report.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...runfiles import livefile, workerfile
from .. import format as fmt
from .run import int_field

#: A worker file's modification time more than this after its last flush says the directory
#: was copied without its files' times: a live file's time then says nothing about its writer.
COPIED_MTIME_NS = 60 * 1_000_000_000


@dataclass
class Numbers:
    """A worker document with the numbers the report uses, and where they came from."""

    document: dict[str, Any]
    #: ``"json"``, ``"live"``, or ``"json: <why the live file was not used>"``.
    source: str
    #: The latest moment the process is known to have lived, when its live file shows it lived
    #: past its last snapshot (None: the snapshot's times stand).
    alive_until_ns: int | None = None
    #: What the report should say about the live file (its problems, how the lifetime was found).
    notes: list[str] = field(default_factory=list)
    #: True when the worker file is only the start file: the process died before any snapshot.
    before_first_snapshot: bool = False
    #: False when the lifetime is the phase time recorded, for want of a later sign of life: a
    #: share of that lifetime would be the report's guess, not a measurement.
    lifetime_measured: bool = True


def _top_level_wall(phases: list[dict[str, Any]]) -> int:
    return sum(int_field(p, "wall_ns") for p in phases if "/" not in p.get("path", ""))


def prefer_live_numbers(path: Path, document: dict[str, Any]) -> Numbers:
    """The worker document with its phases and counters taken from the live file beside it when
    that file is newer than the document's last snapshot.

    A final snapshot (the process exited or was signalled) is as new as the live file: it is
    kept. Otherwise the live file is newer when it holds at least the entries the snapshot had
    closed (its totals only grow); a FROZEN one (its writer could not grow it) is merged path by
    path with the snapshot, which holds the paths made after it froze. A worker file whose
    ``live_file`` is null keeps none: a live file beside it is another's and is ignored. A damaged
    live file is never an error: the snapshot's numbers are used and the source says why.
    """
    live_file = livefile.live_path(path)
    name = fmt.printable(live_file.name)
    if document["times"].get("end_unix_ns") is not None:
        return Numbers(document, "json")
    if "live_file" in document and document["live_file"] is None:
        if os.path.lexists(live_file):
            return Numbers(
                document, f"json: {name} beside it is not its own (its worker file says it keeps no live file): ignored"
            )
        return Numbers(document, "json")
    try:
        live = livefile.read_live_retrying(live_file)
    except livefile.LiveFileError as error:
        if document.get("live_file") is None and not os.path.lexists(live_file):
            return Numbers(document, "json")
        return Numbers(document, f"json: live file {name} not read ({fmt.printable(error.reason)})")
    except Exception as error:  # a reader's bug costs this process's live numbers, not the report
        if os.environ.get("LINEPROFILER_DEBUG"):
            raise
        return Numbers(document, f"json: live file {name} not read (internal error: {error.__class__.__name__})")
    notes = [f"live file {name}: {fmt.printable(problem)}" for problem in live.problems]
    if live.in_flight:
        shown = ", ".join(fmt.printable(p) for p in live.in_flight[:3])
        notes.append(
            f"live file {name}: an entry was being added to {shown} when the process stopped; it may be partly counted"
        )
    if not live.usable:
        return Numbers(document, f"json: live file {name}: " + "; ".join(fmt.printable(p) for p in live.problems))
    merged = _frozen_merge(document, live) if live.frozen else _replace(document, live)
    if not isinstance(merged, str) and live.trace is not None:
        merged = dict(merged, trace=live.trace)  # a running or killed worker's newest spans
    if isinstance(merged, str):
        if notes:  # the snapshot's numbers stand, but the damage is still said
            why = merged.removeprefix("json").removeprefix(": ")
            merged = "json: " + "; ".join(([why] if why else []) + notes)
        return Numbers(document, merged)
    try:
        workerfile.validate(dict(merged, samples=None), path)  # the samples were checked (or skipped) already
    except workerfile.WorkerFileError as error:
        reason = fmt.printable(str(error).removeprefix(f"{path}: "))
        return Numbers(document, f"json: live file {name} holds numbers no worker file may hold ({reason})")
    numbers = Numbers(merged, "live", notes=notes, before_first_snapshot=document["times"]["status"] == "started")
    _extend_lifetime(numbers, path, document, live)
    return numbers


def _replace(document: dict[str, Any], live: livefile.LiveFile) -> dict[str, Any] | str:
    """The document with the live file's phases and counters, or why the snapshot's stand."""
    closed = sum(int_field(p, "entries") for p in document["phases"])
    if live.total_entries < closed:
        return "json: live file older than the last snapshot"
    snapshot_counters = {(c.get("phase"), c.get("name")): c.get("total") for c in document["counters"]}
    live_counters = {(c["phase"], c["name"]): c["total"] for c in live.counters}
    if live.total_entries == closed and live_counters == snapshot_counters:
        return "json"
    phases = {p["path"]: dict(p) for p in live.phases}
    return _with(document, phases, live.counters)


def _frozen_merge(document: dict[str, Any], live: livefile.LiveFile) -> dict[str, Any] | str:
    """The snapshot's phases and counters, each replaced by the live file's where that is at
    least as far along: a frozen live file is exact for the paths it holds, the snapshot alone
    has the paths made after the file stopped growing."""
    phases = {p["path"]: dict(p) for p in document["phases"]}
    newer = False
    for phase in live.phases:
        old = phases.get(phase["path"])
        if old is None or phase["entries"] >= int_field(old, "entries"):
            newer = newer or old is None or phase["entries"] > int_field(old, "entries")
            phases[phase["path"]] = dict(phase)
    counters = {(c.get("phase"), c.get("name")): dict(c) for c in document["counters"]}
    for counter in live.counters:
        key = (counter["phase"], counter["name"])
        old_counter = counters.get(key)
        if old_counter is None or counter["total"] >= old_counter.get("total", 0):
            newer = newer or old_counter is None or counter["total"] > old_counter.get("total", 0)
            counters[key] = dict(counter)
    if not newer:
        return "json"
    return _with(document, phases, list(counters.values()))


def _with(
    document: dict[str, Any], phases: dict[str, dict[str, Any]], counters: list[dict[str, Any]]
) -> dict[str, Any]:
    """The document with these phases and counters; what was still open at the last snapshot
    (its time so far) is kept from the snapshot."""
    for old in document["phases"]:
        if int_field(old, "open_entries") == 0:
            continue
        new = phases.setdefault(old["path"], {**old, "entries": 0, "wall_ns": 0, "self_ns": 0, "hist": []})
        for key in ("open_entries", "open_ns", "open_self_ns"):
            new[key] = old.get(key, 0)
    updated = dict(document)
    updated["phases"] = list(phases.values())
    updated["counters"] = counters
    if document["times"]["status"] == "started":
        # Killed before its first snapshot: the start file, with the live file's numbers.
        updated["times"] = dict(document["times"], status="running")
    return updated


def _extend_lifetime(numbers: Numbers, path: Path, document: dict[str, Any], live: livefile.LiveFile) -> None:
    """The process's lifetime from the live file's evidence of life, when it lived past its last
    snapshot: the later of the live file's last change (when the directory kept its files'
    times) and the snapshot's lifetime plus the phase time recorded since."""
    times = document["times"]
    flush, elapsed = times["last_flush_unix_ns"], times["elapsed_ns"]
    recorded = max(0, _top_level_wall(numbers.document["phases"]) - _top_level_wall(document["phases"]))
    by_phases = elapsed + recorded
    by_mtime = 0
    try:
        copied = path.stat().st_mtime_ns - flush > COPIED_MTIME_NS
    except OSError:
        copied = True
    if not copied and live.mtime_ns > flush:
        by_mtime = elapsed + (live.mtime_ns - flush)
    # The writer's own stamp of a recent phase exit: its clock, so a copied directory keeps it.
    # A stamp from the future (a corrupt or hostile file) is not evidence of anything.
    alive = live.alive_unix_ns
    by_stamp = elapsed + (alive - flush) if flush < alive <= time.time_ns() else 0
    lifetime = max(elapsed, by_phases, by_mtime, by_stamp)
    if lifetime <= elapsed:
        return
    numbers.alive_until_ns = flush + (lifetime - elapsed)
    numbers.document["times"] = dict(numbers.document["times"], elapsed_ns=lifetime)
    if by_stamp >= max(by_phases, by_mtime):
        numbers.notes.append(f"its lifetime ({fmt.duration(lifetime)}) runs to its last phase exit")
        return
    if by_mtime >= by_phases:
        numbers.notes.append(f"its lifetime ({fmt.duration(lifetime)}) runs to its live file's last change")
        return
    numbers.lifetime_measured = False
    why = "this directory's files lost their times" if copied else "its live file's time lags its stores"
    numbers.notes.append(
        f"its lifetime is not known ({why}): the phase time it recorded ({fmt.duration(lifetime)}) stands for it, "
        "and its time in phases is not measured"
    )
