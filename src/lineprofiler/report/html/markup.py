"""The pieces every section of an HTML report is made of (cells, tables, sections, notes) and
the self-contained page around them: what the report's page, its LINES section and the
comparison page share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from ... import __version__
from .. import format as fmt
from .assets import CSS, JS


def name(raw: str) -> str:
    """A name from a worker file, as the text prints it, escaped for HTML."""
    return escape(fmt.printable(raw))


def td(shown: str, value: float | int | str | None = None, cls: str = "") -> str:
    """A cell; ``value`` (unformatted) goes to ``data-v`` for sorting (empty: not measured)."""
    v = "" if value is None else f' data-v="{escape(str(value), quote=True)}"'
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}{v}>{escape(shown)}</td>"


def head(columns: Sequence[str], sortable: bool = True) -> str:
    sort = " data-sort" if sortable else ""
    return "<thead><tr>" + "".join(f"<th{sort}>{escape(c)}</th>" for c in columns) + "</tr></thead>"


def table(block: str, columns: Sequence[str], rows: Iterable[str], *, groups: bool = False) -> str:
    """A sortable table; with ``groups``, each row string is a whole ``<tbody>``."""
    body = "".join(rows) if groups else "<tbody>" + "".join(rows) + "</tbody>"
    return f'<table data-block="{block}">{head(columns)}{body}</table>'


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{body}</section>'


def para(sentence: str | None, cls: str = "note") -> str:
    return f'<p class="{cls}">{escape(sentence)}</p>' if sentence else ""


def page(title: str, body: str, nav: Sequence[tuple[str, str]]) -> str:
    links = "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in nav)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f'<main>{body.replace("<!--nav-->", f"<nav>{links}</nav>", 1)}'
        f"<footer>Written by lineprofiler {escape(__version__)}. Numbers are formatted as "
        "<code>lineprofiler report</code> prints them; <code>--json</code> has them unformatted.</footer></main>"
        f'<div id="tip" role="tooltip"></div><script>{JS}</script></body></html>\n'
    )


__all__ = ["head", "name", "page", "para", "section", "table", "td"]
