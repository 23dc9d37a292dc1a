"""Where a process's numbers come from: its worker file's last snapshot, or the live file beside
it, which a process killed between snapshots (SIGKILL, the OOM killer) leaves fuller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..runfiles import livefile
from . import format as fmt


def prefer_live_numbers(path: Path, document: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The worker document with its phases and counters taken from the live file beside it when
    that file is newer than the document's last snapshot, and where the numbers came from:
    ``"json"``, ``"live"``, or ``"json: <why the live file was not used>"``.

    A final snapshot (the process exited or was signalled) is as new as the live file: it is
    kept. Otherwise the live file is newer when it holds at least the entries the snapshot had
    closed (its totals only grow). A damaged live file (cut short, zero-filled, a newer
    version) is never an error: its problems go into the document's ``errors``.
    """
    from .merge import _count  # merge imports this module: the field reader is taken at call time

    live_file = livefile.live_path(path)
    if document["times"].get("end_unix_ns") is not None:
        return document, "json"
    try:
        live = livefile.read_live_retrying(live_file)
    except livefile.LiveFileError as error:
        if document.get("live_file") is None and not live_file.exists():
            return document, "json"
        return document, f"json: live file not read ({error})"
    notes = [f"live file: {problem}" for problem in live.problems]
    if live.in_flight:
        shown = ", ".join(fmt.printable(p) for p in live.in_flight[:3])
        notes.append(
            f"live file: an entry was being added to {shown} when the process stopped; it may be partly counted"
        )
    if not live.usable:
        return dict(document, errors=list(document.get("errors", [])) + notes), "json: " + "; ".join(live.problems)
    closed = sum(_count(p, "entries") for p in document["phases"])
    if live.total_entries < closed:
        return document, "json: live file older than the last snapshot"
    snapshot_counters = {(c.get("phase"), c.get("name")): c.get("total") for c in document["counters"]}
    live_counters = {(c["phase"], c["name"]): c["total"] for c in live.counters}
    if live.total_entries == closed and live_counters == snapshot_counters:
        return dict(document, errors=list(document.get("errors", [])) + notes), "json"
    # Closed totals from the live file; what was still open, as of the last snapshot, from it.
    phases = {p["path"]: dict(p) for p in live.phases}
    for old in document["phases"]:
        if _count(old, "open_entries") == 0:
            continue
        new = phases.setdefault(old["path"], {**old, "entries": 0, "wall_ns": 0, "self_ns": 0, "hist": []})
        for key in ("open_entries", "open_ns", "open_self_ns"):
            new[key] = old.get(key, 0)
    updated = dict(document)
    updated["phases"] = list(phases.values())
    updated["counters"] = live.counters
    updated["errors"] = list(document.get("errors", [])) + notes
    if document["times"]["status"] == "started":
        # Killed before its first snapshot: the start file, with the live file's numbers.
        updated["times"] = dict(document["times"], status="running")
    return updated, "live"
