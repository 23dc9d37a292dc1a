"""``lineprofiler report RUN --lines-html``: the sampled lines (``Profiler(line_sampling=...)``)
as annotated source, one view per role and phase, in one self-contained page.

Each view is the line layer's annotated page (:func:`lineprofiler.lines.annotate.annotated_body`:
the functions, the slowest lines, then each file's source with every recorded line's hits, time,
self time in the margin, heat-coloured by self time within the view) with one more column: the
line's share of its phase ± the 95 % interval, as ``report --lines`` prints it. A view is a
``<section class="view">`` carrying ``data-role`` and ``data-phase``; the script shows one at a
time, chosen by role and phase, and keeps the choice in the address (``#v3``). Without the
script every view is shown, one after the other, under a list of links to each.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from ....lines.annotate.page import ExtraColumn, Limits, annotated_body, page_html
from ....lines.stats import FunctionStats, LineStats, StatsKey
from ... import format as fmt
from ...model_sampled_lines import SampledLineRow, SampledLinesBlock, SampledPhase, SampledRole
from ..text_sampled_lines import NOTE, coverage_text

__all__ = ["render_sampled_source"]

#: Source rows over the whole page, shared out between the views (each gets at least
#: :data:`MIN_VIEW_ROWS`), so that many phases make a page of tens of MB at most.
PAGE_ROWS = 60_000
MIN_VIEW_ROWS = 2_000
SHARE_HEAD = "Share of phase \u00b1 95 %"
DOT = " \u00b7 "

CSS = """
form.pick{display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center;margin:12px 0;padding:8px 10px;
background:var(--soft);border:1px solid var(--line)}
form.pick select{font:inherit;max-width:420px}
form.pick[hidden]{display:none}
ul.views{columns:2 280px;margin:6px 0 16px;padding-left:18px;font-size:13px}
html.one section.view{display:none}
html.one section.view.on{display:block}
html.one ul.views{display:none}
section.view>h2{font-size:18px;border-bottom:2px solid var(--fg)}
"""

JS = """
(function () {
  "use strict";
  var views = Array.prototype.slice.call(document.querySelectorAll("section.view"));
  var form = document.getElementById("pick");
  var role = document.getElementById("pick-role"), phase = document.getElementById("pick-phase");
  if (!views.length || !form) { return; }
  form.hidden = false;
  document.documentElement.classList.add("one");
  function fill(name) {
    phase.textContent = "";
    views.forEach(function (v) {
      if (v.getAttribute("data-role") !== name) { return; }
      var option = document.createElement("option");
      option.value = v.id;
      option.textContent = v.getAttribute("data-phase-label");
      phase.appendChild(option);
    });
  }
  function show(view) {
    views.forEach(function (v) { v.classList.toggle("on", v === view); });
    role.value = view.getAttribute("data-role");
    fill(role.value);
    phase.value = view.id;
  }
  function choose(view) {
    show(view);
    history.replaceState(null, "", "#" + view.id);
  }
  role.addEventListener("change", function () {
    choose(views.filter(function (v) { return v.getAttribute("data-role") === role.value; })[0]);
  });
  phase.addEventListener("change", function () { choose(document.getElementById(phase.value)); });
  function fromAddress() {
    var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    var view = target ? target.closest("section.view") : null;
    show(view || views[0]);
    if (target && view && target !== view) { target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
})();
"""


def _attr(text: str) -> str:
    return escape(fmt.printable(text), quote=True)


def _stats(phase: SampledPhase) -> dict[StatsKey, FunctionStats]:
    """The phase's lines as the line layer's stats: one function per (file, qualname), whose
    first line is the first of its lines that ran in a window (the file keeps no other)."""
    grouped: dict[tuple[str, str], list[SampledLineRow]] = {}
    for row in phase.rows:
        grouped.setdefault((row.file, row.function), []).append(row)
    stats: dict[StatsKey, FunctionStats] = {}
    for (file, function), rows in grouped.items():
        first = min(row.line for row in rows)
        lines = {row.line: LineStats(row.line, row.hits, row.time_ns, row.source, row.self_ns) for row in rows}
        stats[StatsKey(file, function, first)] = FunctionStats(
            file, first, function, sum(row.time_ns for row in rows), lines
        )
    return stats


def _share_column(phase: SampledPhase) -> ExtraColumn:
    shares = {(row.file, row.function, row.line): (row.share, row.error) for row in phase.rows}

    def cell(f: FunctionStats, line: LineStats) -> tuple[str, float] | None:
        found = shares.get((f.filename, f.qualname, line.lineno))
        if found is None:
            return None
        share, error = found
        return f"{fmt.percent(share)} \u00b1 {fmt.percent(error)}", share

    return ExtraColumn(SHARE_HEAD, cell)


def _role_facts(role: SampledRole) -> str:
    noun = "process" if role.processes == 1 else "processes"
    facts = [f"{role.processes} {noun} sampled at {fmt.percent(role.fraction)}", coverage_text(role)]
    if role.skipped:
        facts.append(f"{fmt.count(role.skipped)} windows skipped: the program's own line profiler was recording")
    if role.hidden_phases:
        facts.append(f"{fmt.count(role.hidden_phases)} smaller phases not shown")
    out = f'<p class="note">{escape(fmt.printable("; ".join(facts)))}.</p>'
    out += "".join(
        f'<p class="note left-out">sampling stopped: {escape(fmt.printable(error))}</p>' for error in role.errors
    )
    return out


def _label(phase: SampledPhase | None) -> str:
    return "(no lines)" if phase is None else phase.path


def _view(number: int, role: SampledRole, phase: SampledPhase | None, limits: Limits) -> str:
    label = _label(phase)
    head = (
        f'<section class="view" id="v{number}" data-role="{_attr(role.role)}" '
        f'data-phase="{"" if phase is None else _attr(phase.path)}" data-phase-label="{_attr(label)}">'
        f"<h2>{escape(fmt.printable(role.role + DOT + label))}</h2>{_role_facts(role)}"
    )
    if phase is None:
        return head + '<p class="note">No line of the project ran inside the windows.</p></section>'
    about = (
        f"Phase {fmt.printable(phase.path)}: {fmt.percent(phase.share)} of the role's sampled time, "
        f"{fmt.count(phase.windows)} windows, {fmt.count(phase.lines)} lines."
    )
    body = annotated_body(
        _stats(phase),
        root=Path(role.project) if role.project else None,
        limits=limits,
        prefix=f"v{number}-",
        extra=_share_column(phase),
    )
    return f'{head}<p class="note">{escape(about)}</p>{body}</section>'


def render_sampled_source(block: SampledLinesBlock, *, title: str, caveats: Sequence[str] = ()) -> str:
    """The page of ``block`` (every line of each phase: ``sampled_lines_block(every_line=True)``)."""
    views: list[tuple[SampledRole, SampledPhase | None]] = []
    for role in block.roles:
        views.extend((role, phase) for phase in role.phases)
        if not role.phases:
            views.append((role, None))
    limits = Limits(files=50, lines=max(MIN_VIEW_ROWS, PAGE_ROWS // max(len(views), 1)), whole_file_lines=1_000)
    phases = sum(len(role.phases) for role in block.roles)
    facts = [
        f"{len(block.roles)} role{'s' if len(block.roles) != 1 else ''}",
        f"{phases} phase{'s' if phases != 1 else ''}",
        "line_sampling: exact lines in short windows spread over the run",
    ]
    parts = [f"<h1>{escape(fmt.printable(title))}</h1>", f'<p class="sub">{escape(DOT.join(facts))}</p>']
    parts.append(
        f'<p class="note">{escape(NOTE.strip())}. Each view is one role\'s phase: its lines, summed over the '
        "role's processes, inside the windows; shaded by self time against the view's largest.</p>"
    )
    parts.extend(f'<p class="note left-out">{escape(fmt.printable(line))}</p>' for line in caveats)
    roles = "".join(f'<option value="{_attr(r.role)}">{escape(fmt.printable(r.role))}</option>' for r in block.roles)
    parts.append(
        '<form class="pick" id="pick" hidden><label>Role <select id="pick-role">'
        f'{roles}</select></label><label>Phase <select id="pick-phase"></select></label></form>'
    )
    links = "".join(
        f'<li><a href="#v{n}">{escape(fmt.printable(role.role + DOT + _label(phase)))}</a></li>'
        for n, (role, phase) in enumerate(views)
    )
    parts.append(f'<ul class="views">{links}</ul>')
    parts.extend(_view(n, role, phase, limits) for n, (role, phase) in enumerate(views))
    return page_html(title, "".join(parts), css=CSS, js=JS)
