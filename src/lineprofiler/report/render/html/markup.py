"""The pieces every section of an HTML report is made of (cells, tables, sections, notes) and
the self-contained page around them: what the report's page, its LINES section and the
comparison page share; and the style sheet and script inlined into every page.

The page reads the same without the script: tables are in their report order, tips are the
marks' ``<title>``s, and the per-role toggles stay hidden. The script adds a styled tip that
follows the pointer, sorting by a click on a column head, and the toggles. System fonts only.
A table wider than the window (800 px) scrolls sideways in its own box, never past the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from .... import __version__
from ... import format as fmt

CSS = """
:root{--fg:#1d2330;--muted:#5b6472;--line:#d9dde3;--bg:#fff;--soft:#f5f6f8;--bad:#b3261e;--warn:#8a5a00}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:18px 22px 40px}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 6px}
.sub{color:var(--muted)}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:6px 18px;margin:10px 0}
dl.facts div{background:var(--soft);padding:6px 10px;border-radius:6px}
dl.facts dt{font-size:12px;color:var(--muted)}
dl.facts dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums}
.alerts{border:2px solid var(--bad);background:#fdf0ef;border-radius:8px;padding:10px 14px;margin:14px 0}
.alerts h2{border:0;margin:0 0 6px;color:var(--bad)}
.alerts ul{margin:4px 0 4px 18px;padding:0}
.alerts li{margin:3px 0}
.superseded{border-color:var(--warn);background:#fff8e6}
.superseded h2{color:var(--warn)}
nav{position:sticky;top:0;background:rgba(255,255,255,.95);border-bottom:1px solid var(--line);padding:6px 0;
z-index:2}
nav a{margin-right:14px;color:var(--muted);text-decoration:none;font-size:13px}
nav a:hover{color:var(--fg)}
table{border-collapse:collapse;margin:6px 0 10px;font-variant-numeric:tabular-nums;display:block;max-width:100%;
overflow-x:auto}
th,td{padding:3px 10px;text-align:right;border-bottom:1px solid var(--line);white-space:nowrap}
th{font-size:12px;color:var(--muted);font-weight:600;background:var(--soft)}
th:first-child,td:first-child{text-align:left}
td.name{text-align:left;max-width:420px;overflow:hidden;text-overflow:ellipsis}
td.src code{font-size:12px}
table[data-block=lines] th:nth-child(n+7){text-align:left}
div.wide{overflow-x:auto}
tr.sub td{color:var(--muted);border-bottom:0;font-size:13px}
td.bar svg.chart{display:inline-block;margin:0;vertical-align:middle}
tr.sub td:first-child{padding-left:28px}
.js th[data-sort]{cursor:pointer}
.js th[data-sort]:after{content:" \\2195";color:#aab}
th[aria-sort=ascending]:after{content:" \\2191"!important;color:var(--fg)!important}
th[aria-sort=descending]:after{content:" \\2193"!important;color:var(--fg)!important}
.real{color:var(--bad);font-weight:700}
.note{color:var(--muted);margin:4px 0}
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0;overflow:visible}
svg .axis{font-size:10px;fill:var(--muted)}
svg .label{font-size:10px;fill:var(--fg)}
svg .note{font-size:10px;fill:#d62728;font-weight:600}
svg .inbar{font-size:11px;fill:#fff;pointer-events:none}
svg .frame{fill:none;stroke:var(--line)}
svg .grid{stroke:#eef0f3}
svg .ref{stroke:#333;stroke-dasharray:4 3}
svg .q{stroke:#d62728;stroke-width:1.2;stroke-dasharray:3 2}
svg .qlabel{font-size:10px;fill:#d62728}
svg .band{fill-opacity:.28;stroke-width:1;stroke-linejoin:round}
svg .mark:hover{opacity:.75}
svg .band:hover{fill-opacity:.55;opacity:1}
.hists{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:10px 22px}
.hists figure{margin:0}
figcaption{font-size:12px;color:var(--muted)}
figcaption b{color:var(--fg)}
ul.legend{list-style:none;margin:2px 0 8px;padding:0;display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.toggles{display:none;gap:12px;font-size:12px;margin:4px 0}
.js .toggles{display:flex}
#tip{position:fixed;display:none;pointer-events:none;background:#1d2330;color:#fff;padding:4px 8px;
border-radius:4px;font-size:12px;max-width:420px;z-index:10;white-space:pre-line}
footer{margin-top:30px;color:var(--muted);font-size:12px}
pre.text{background:var(--soft);padding:10px;overflow:auto;font-size:12px}
"""

JS = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var tip = document.getElementById("tip");
  function show(e) {
    var el = e.target.closest ? e.target.closest("[data-tip]") : null;
    if (!el) { tip.style.display = "none"; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.style.display = "block";
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) { x = e.clientX - tip.offsetWidth - 10; }
    if (y + tip.offsetHeight > window.innerHeight) { y = e.clientY - tip.offsetHeight - 10; }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  document.addEventListener("mouseover", show);
  document.addEventListener("mousemove", show);
  document.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  // A mark's <title> would show a second, native tip on top of this one.
  Array.prototype.forEach.call(document.querySelectorAll("[data-tip] > title"), function (t) {
    t.parentNode.removeChild(t);
  });

  function key(row, col) {
    var cell = row.cells[col];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    if (v !== null && v !== "") { var n = parseFloat(v); if (!isNaN(n)) { return n; } }
    if (v === "") { return -Infinity; }
    return cell.textContent.trim().toLowerCase();
  }
  function sortTable(th) {
    var table = th.closest("table");
    var col = Array.prototype.indexOf.call(th.parentNode.cells, th);
    var descending = th.getAttribute("aria-sort") !== "descending";
    Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    // Each <tbody> is a group (a phase with its counters under it) and moves whole.
    var groups = Array.prototype.slice.call(table.tBodies);
    var rows = groups.length === 1 ? Array.prototype.slice.call(groups[0].rows) : null;
    var items = rows || groups;
    items.sort(function (a, b) {
      var ka = key(rows ? a : a.rows[0], col), kb = key(rows ? b : b.rows[0], col);
      if (ka === kb) { return 0; }
      var less = (typeof ka === typeof kb) ? ka < kb : typeof ka === "number";
      return (less ? -1 : 1) * (descending ? -1 : 1);
    });
    var parent = rows ? groups[0] : table;
    items.forEach(function (item) { parent.appendChild(item); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("th[data-sort]"), function (th) {
    th.addEventListener("click", function () { sortTable(th); });
  });

  Array.prototype.forEach.call(document.querySelectorAll("input[data-toggle]"), function (box) {
    box.addEventListener("change", function () {
      var group = box.getAttribute("data-toggle");
      Array.prototype.forEach.call(document.querySelectorAll("[data-group]"), function (el) {
        if (el.getAttribute("data-group") === group) { el.style.display = box.checked ? "" : "none"; }
      });
    });
  });
})();
"""

__all__ = ["CSS", "JS"]


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
        f"<main>{body.replace('<!--nav-->', f'<nav>{links}</nav>', 1)}"
        f"<footer>Written by lineprofiler {escape(__version__)}. Numbers are formatted as "
        "<code>lineprofiler report</code> prints them; <code>--json</code> has them unformatted.</footer></main>"
        f'<div id="tip" role="tooltip"></div><script>{JS}</script></body></html>\n'
    )


__all__ = ["head", "name", "page", "para", "section", "table", "td"]
