"""``report --json``: the report's model as one JSON document.

The document is the :class:`~.model.Report` itself, field for field (docs/report.md lists the
schema): ``kind`` ``"lineprofiler-report"``, ``version`` 1, then ``run`` (the same object
``compare --json`` gives each side), ``header``, ``roles``, ``dominant``, ``counters``,
``iterations``, ``io_by_phase``, ``io``, ``memory``, ``cpu``, ``gpu``, ``lanes``, ``timeline``, ``caveats`` and
``failed``, and ``story`` where a worker recorded a trace. An absent block is ``null``; a value that
could not be measured is ``null``, never 0. A reader should ignore keys it does not know: new keys
may appear within a version; a change of meaning or a removal raises the version.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ...runfiles import histogram
from ..compute.story import model as story_model
from ..model import KIND, VERSION, DeviceUse, Header, Report

#: Properties serialised beside a class's fields (what the text prints from them).
_PROPERTIES: dict[type, tuple[str, ...]] = {
    DeviceUse: ("idle",),
    story_model.Story: ("duration_ns", "kept_line", "lanes"),
    story_model.CriticalPath: ("duration_ns",),
    story_model.Segment: ("duration_ns",),
    story_model.HostClock: ("uncertainty_ns",),
}


#: Per dataclass, the names :func:`plain` writes (its fields, then its properties).
_NAMES: dict[type, tuple[str, ...]] = {}
_SCALARS = (int, str, bool, type(None))


def plain(value: Any) -> Any:
    """A model value as JSON-ready data: dataclasses as objects, non-finite floats as null."""
    kind = type(value)
    if kind in _SCALARS:
        return value  # most values: checked first, as a story's lanes hold thousands
    names = _NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _NAMES[kind] = tuple(f.name for f in dataclasses.fields(value)) + _PROPERTIES.get(kind, ())
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def run_object(header: Header, merge_caveats: list[str]) -> dict[str, Any]:
    """What a run is in every JSON document of the CLI (``report``'s ``run``, ``compare``'s
    ``a`` and ``b``): directory, name, identity, runtime, processes, roles, the names of the
    superseded attempts, of the concurrent jobs and of the generated run ids merged into it by
    time, and the CAVEATS lines merge derived."""
    return {
        "run_dir": header.run_dir,
        "run": header.run,
        "run_id": header.run_id,
        "attempt": header.attempt,
        "runtime_ns": header.runtime_ns,
        "processes": header.processes,
        "roles": dict(header.roles),
        "superseded": [a.name for a in header.superseded],
        "concurrent": [a.name for a in header.concurrent],
        "merged": [a.name for a in header.merged],
        "caveats": list(merge_caveats),
    }


def document(report: Report, merge_caveats: list[str]) -> dict[str, Any]:
    """The ``report --json`` document."""
    body = plain(report)
    # The story (a traced run's critical path and findings) is a key only where a worker
    # recorded a trace: other runs' documents are what they were.
    story = getattr(report, "story", None)
    body.pop("story", None)  # were it a field of the model: absent, not null, where nothing was traced
    if story is not None:
        body["story"] = plain(story)
    return {
        "kind": KIND,
        "version": VERSION,
        "histogram": {"scheme": histogram.SCHEME, "relative_error": histogram.RELATIVE_ERROR},
        "run": run_object(report.header, merge_caveats) if report.header is not None else None,
        **body,
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, allow_nan=False)


__all__ = ["document", "dumps", "plain", "run_object"]
