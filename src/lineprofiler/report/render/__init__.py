"""The report's top floor, and its one way out: every output of a run leaves through here.

:func:`render` gives the text of a model in a format (``"text"``, ``"json"`` or ``"html"``):
the report's :class:`~..model.Report`, a traced run's :class:`~..compute.story.model.Story`, or
a comparison of two runs (the ``dict`` :func:`.compare.compare_runs` makes); :func:`write` puts
that text (or a Perfetto export's parts, as they are made) into the file the user named. The
command line, 0.10.0's ``write_report`` and ``write_trace``, and the line profilers' annotated
pages go through them. The renderers are imported when asked for, so that ``lineprofiler top``
pays for none of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

#: The formats every model renders in.
FORMATS = ("text", "json", "html")
#: What ``open(path, "w")`` gives a new file (less the umask): the outputs are the user's files.
FILE_MODE = 0o666


def render(model: Any, fmt: str, *, caveats: Sequence[str] = (), title: str = "", max_spans: int | None = None) -> str:
    """``model`` as ``fmt``, with no trailing newline (an HTML page ends with its own).

    ``caveats`` are what the JSON of a report and every output of a story list under CAVEATS (a
    report's text and HTML print the report's own); ``title`` and ``max_spans`` are the story
    page's title and the most span boxes it draws."""
    from ..compute.story.model import Story
    from ..model import Report

    if fmt not in FORMATS:
        raise ValueError(f"format must be 'text', 'json' or 'html', got {fmt!r}")
    if isinstance(model, Report):
        return _report(model, fmt, list(caveats))
    if isinstance(model, Story):
        return _story(model, fmt, list(caveats), title=title, max_spans=max_spans)
    return _comparison(model, fmt)


def write(path: str | os.PathLike[str], text: str | Iterable[str], fmt: str, *, parents: bool = False) -> str:
    """``text`` (what :func:`render` gave for ``fmt``) into ``path``, ended by a newline (or, given
    in parts, those parts as they come): whole (a temporary file renamed over it), or into it
    when it is a FIFO, a device or this process's own stdout
    (:func:`~lineprofiler.runfiles.output.write_output`). ``parents``: missing folders above it
    are made. Returns ``path``; raises OSError."""
    from ...runfiles.output import write_output

    name = os.fspath(path)
    if parents:
        os.makedirs(os.path.dirname(os.path.abspath(name)), exist_ok=True)
    if isinstance(text, str):
        whole = text if fmt == "html" or text.endswith("\n") else text + "\n"
        write_output(name, whole.encode("utf-8"), mode=FILE_MODE)
    else:  # parts written as they are made (a trace export is never held all at once), as they are
        write_output(name, (part.encode("utf-8") for part in text), mode=FILE_MODE)
    return name


def _report(report: Any, fmt: str, caveats: list[str]) -> str:
    if fmt == "json":
        from . import json as report_json

        # json.dumps escapes every control and non-ASCII character: nothing here needs escaping.
        return report_json.dumps(report_json.document(report, caveats))
    if fmt == "html":
        from .blocks import render_html

        return render_html(report)
    from .blocks import render_report

    return render_report(report)


def _story(story: Any, fmt: str, caveats: list[str], *, title: str, max_spans: int | None) -> str:
    if fmt == "json":
        from . import json as report_json

        document = {"kind": "lineprofiler-story", "version": 1, "story": report_json.plain(story), "caveats": caveats}
        return report_json.dumps(document)
    if fmt == "html":
        from .html.story import render_story_html

        return render_story_html(story, caveats, title=title, max_spans=max_spans)
    from .text import caveats_lines
    from .text_blocks import story_lines

    return "\n\n".join("\n".join(chunk) for chunk in (story_lines(story), caveats_lines(caveats)) if chunk)


def _comparison(document: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        import json

        return json.dumps(document, indent=2, allow_nan=False)  # ASCII, controls escaped
    if fmt == "html":
        from .html import render_compare_html

        return render_compare_html(document)
    from .compare import render_compare

    return render_compare(document)
