"""The story of a traced run as HTML: the findings, the critical path, and the lanes.

The lanes are one SVG: a row per traced thread of each process drawn (the critical path's
first), its exact spans as boxes (inner phases thinner), the critical path as a red bar under
the rows it ran on, matched links as arrows from signal to wait (thick on the path; an arrow the
clocks put backwards is dashed and says so), and entries still open when a killed worker's file
was written hatched up to its last known moment; under them a time axis from the run's start
(its labels follow the zoom), and a legend of the colours and marks. Hover shows a mark's
figures; the wheel zooms around the pointer, dragging pans, a double click resets. ``max_spans`` bounds the boxes (the
longest kept) and the page says how many it left out. The page reads run files only, through
the :class:`~..story.model.Story`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from html import escape

from ... import format as fmt
from ...compute.story.model import LaneSpan, Story
from .markup import name, page, para, section

#: Boxes drawn at most, by default (the longest).
MAX_SPANS = 20_000
_LABEL_W, _PLOT_W, _ROW_H, _GAP = 230, 950, 16, 6
_AXIS_H, _TICKS, _LEGEND_PHASES = 24, 5, 16
_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac")

_STYLE = """
svg.story{display:block;width:100%;height:auto;user-select:none;cursor:grab;background:#fff}
svg.story .span{stroke:#fff;stroke-width:.5;vector-effect:non-scaling-stroke}
svg.story .open{fill-opacity:.45;stroke:#b3261e;stroke-dasharray:3 2;vector-effect:non-scaling-stroke}
svg.story .crit{fill:#d62728}
svg.story .arrow{stroke:#333;stroke-width:.7;fill:none;vector-effect:non-scaling-stroke;opacity:.55}
svg.story .arrow.on-path{stroke:#d62728;stroke-width:2;opacity:1}
svg.story .arrow.backwards{stroke:#8a5a00;stroke-dasharray:4 3;opacity:1}
svg.story .lane-label{font-size:10px;fill:#1d2330}
svg.story .row{fill:#f5f6f8}
svg.story .tick{font-size:10px;fill:#5b6472}
svg.story .tick-line{stroke:#c9ced6;vector-effect:non-scaling-stroke}
.story-legend .line{display:inline-block;width:14px;height:0;border-top:2px solid #333;margin-right:5px;
vertical-align:3px}
.story-legend .line.on-path{border-color:#d62728}
.story-legend .line.backwards{border-top:2px dashed #8a5a00}
.story-legend .swatch.open{background:#fff;border:1px dashed #b3261e}
ol.findings li{margin:4px 0}
"""

_SCRIPT = """
(function () {
  "use strict";
  var svg = document.getElementById("story-lanes");
  if (!svg) { return; }
  var g = svg.querySelector("g.zoom"), x0 = +svg.getAttribute("data-x0"), w = +svg.getAttribute("data-w");
  var k = 1, tx = 0, drag = null;
  var ticks = svg.querySelectorAll("text.tick"), runNs = +svg.getAttribute("data-ns");
  function duration(ns) {  // the report's format.duration, up to hours
    if (ns < 999.5) { return ns.toFixed(0) + "ns"; }
    if (ns < 999950) { return (ns / 1e3).toFixed(1) + "us"; }
    if (ns < 999950000) { return (ns / 1e6).toFixed(1) + "ms"; }
    if (ns < 59950000000) { return (ns / 1e9).toFixed(1) + "s"; }
    var s = Math.round(ns / 1e9);
    if (s < 600) { return Math.floor(s / 60) + "m " + String(s % 60).padStart(2, "0") + "s"; }
    return Math.round(ns / 6e10) + "m";
  }
  function apply() {
    g.setAttribute("transform", "translate(" + (x0 + tx) + ",0) scale(" + k + ",1) translate(" + (-x0) + ",0)");
    svg.setAttribute("data-zoom", String(k));
    // A tick stays where it is drawn; its label is the time under it at this zoom.
    Array.prototype.forEach.call(ticks, function (t) {
      var at = +t.getAttribute("data-at");
      t.textContent = "+" + duration(Math.max(0, (at - tx) / k) / w * runNs);
    });
  }
  function clamp() { tx = Math.min(0, Math.max(w - w * k, tx)); }
  function units(e) {
    var r = svg.getBoundingClientRect();
    return (e.clientX - r.left) / r.width * svg.viewBox.baseVal.width;
  }
  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var u = units(e) - x0, nk = Math.min(1e7, Math.max(1, k * (e.deltaY < 0 ? 1.25 : 0.8)));
    tx = u - (u - tx) * nk / k; k = nk; clamp(); apply();
  }, {passive: false});
  svg.addEventListener("mousedown", function (e) { drag = {x: units(e), tx: tx}; });
  window.addEventListener("mousemove", function (e) {
    if (drag) { tx = drag.tx + units(e) - drag.x; clamp(); apply(); }
  });
  window.addEventListener("mouseup", function () { drag = null; });
  svg.addEventListener("dblclick", function () { k = 1; tx = 0; apply(); });
})();
"""


def _colour(phase: str) -> str:
    top = phase.split("/", 1)[0]
    return _COLOURS[hashlib.blake2s(top.encode("utf-8", "backslashreplace")).digest()[0] % len(_COLOURS)]


def _drawn(story: Story, max_spans: int) -> dict[int, list[LaneSpan]]:
    """The spans drawn per process: the ``max_spans`` longest, and every open one."""
    every = [(s.end_ns - s.start_ns, lane.process, n) for lane in story.lanes for n, s in enumerate(lane.spans)]
    chosen = {(process, n) for _, process, n in sorted(every, reverse=True)[:max_spans]}
    return {
        lane.process: [s for n, s in enumerate(lane.spans) if s.open or (lane.process, n) in chosen]
        for lane in story.lanes
    }


def lanes_svg(story: Story, max_spans: int = MAX_SPANS) -> tuple[str, str, int, int]:
    """The lanes, their legend, how many boxes were drawn and how many spans were left out."""
    start, span = story.run_start_ns, max(1, story.duration_ns)

    def x(t: int) -> float:
        return _LABEL_W + (t - start) / span * _PLOT_W

    drawn = _drawn(story, max_spans)
    rows: dict[tuple[int, str], int] = {}
    labels: list[str] = []
    for lane in story.lanes:
        used = sorted({s.thread for s in drawn[lane.process]}) or [0]
        for thread in used:
            thread_name = lane.threads[thread] if thread < len(lane.threads) else f"thread {thread}"
            rows[(lane.process, thread_name)] = len(rows)
            process = story.processes[lane.process]
            text = f"{process.role} {process.pid} {process.host}" + (f" {thread_name}" if len(used) > 1 else "")
            labels.append(text)
    lanes_h = len(rows) * (_ROW_H + _GAP)
    height = lanes_h + _AXIS_H
    marks: list[str] = []
    for n in range(len(rows)):
        marks.append(
            f'<rect class="row" x="{_LABEL_W}" y="{n * (_ROW_H + _GAP)}" width="{_PLOT_W}" height="{_ROW_H}"/>'
        )
    boxes = 0
    for lane in story.lanes:
        process = story.processes[lane.process]
        for s in drawn[lane.process]:
            thread_name = lane.threads[s.thread] if s.thread < len(lane.threads) else f"thread {s.thread}"
            row = rows[(lane.process, thread_name)]
            depth = min(3, s.phase.count("/"))
            y = row * (_ROW_H + _GAP) + depth * 3
            width = max(0.02, x(s.end_ns) - x(s.start_ns))
            cpu = "CPU not measured" if s.cpu_ns is None else f"CPU {fmt.duration(s.cpu_ns)}"
            state = "still open when its file was written (killed): drawn to its last known moment" if s.open else cpu
            tip = (
                f"{fmt.printable(s.phase)}: {fmt.duration(s.end_ns - s.start_ns)} "
                f"at +{fmt.duration(s.start_ns - start)}"
                f"\n{state}\n{fmt.printable(process.label)}"
            )
            cls = "span open" if s.open else "span"
            marks.append(
                f'<rect class="{cls}" x="{x(s.start_ns):.3f}" y="{y}" width="{width:.3f}" '
                f'height="{_ROW_H - depth * 3}" '
                f'fill="{_colour(s.phase)}" data-tip="{escape(tip, quote=True)}"/>'
            )
            boxes += 1
    arrows = 0
    for arrow in story.arrows:
        ends: list[int | None] = []
        for who, thread in ((arrow.from_process, arrow.from_thread), (arrow.to_process, arrow.to_thread)):
            drawn_lane = next((lane for lane in story.lanes if lane.process == who), None)
            threads = drawn_lane.threads if drawn_lane is not None else []
            ends.append(rows.get((who, threads[thread] if thread < len(threads) else "")))
        if ends[0] is None or ends[1] is None:
            continue
        cls = "arrow" + (" on-path" if arrow.on_path else "") + (" backwards" if arrow.backwards else "")
        said = (
            "\nthis wait ends before its signal on the run's timeline: the clocks disagree, or signal() came "
            "after the put"
            if arrow.backwards
            else ""
        )
        tip = (
            f"{fmt.printable(arrow.channel)} {fmt.printable(arrow.key)}: "
            f"signal at +{fmt.duration(arrow.from_ns - start)}, wait ended at +{fmt.duration(arrow.to_ns - start)} "
            f"({fmt.duration(arrow.to_ns - arrow.from_ns)} later){said}"
        )
        y1 = ends[0] * (_ROW_H + _GAP) + _ROW_H / 2
        y2 = ends[1] * (_ROW_H + _GAP) + _ROW_H / 2
        marks.append(
            f'<line class="{cls}" x1="{x(arrow.from_ns):.3f}" y1="{y1}" x2="{x(arrow.to_ns):.3f}" y2="{y2}" '
            f'data-tip="{escape(tip, quote=True)}"/>'
        )
        arrows += 1
    # The path last: on top of the arrows that cross it.
    if story.path is not None:
        for segment in story.path.segments:
            at = rows.get((segment.process, segment.thread))
            if at is None or segment.duration_ns <= 0:
                continue
            runner = story.processes[segment.process]
            what = "woken after the signal" if segment.kind == "wake" else "running"
            tip = (
                f"critical path: {fmt.printable(runner.label)} {what}, {fmt.printable(segment.phase or 'no phase')}"
                f"\n{fmt.duration(segment.duration_ns)} ({fmt.percent(segment.duration_ns / span)} of the run)"
            )
            marks.append(
                f'<rect class="crit" x="{x(segment.start_ns):.3f}" y="{at * (_ROW_H + _GAP) + _ROW_H}" '
                f'width="{max(0.05, x(segment.end_ns) - x(segment.start_ns)):.3f}" height="4" '
                f'data-tip="{escape(tip, quote=True)}"/>'
            )
    closed = sum(1 for spans in drawn.values() for s in spans if not s.open)
    left_out = max(0, sum(p.spans_kept for p in story.processes) - closed)
    text = "".join(
        f'<text class="lane-label" x="4" y="{n * (_ROW_H + _GAP) + 12}">{name(label)}</text>'
        for n, label in enumerate(labels)
    ) + _axis(lanes_h, story.duration_ns)
    width = _LABEL_W + _PLOT_W
    svg = (
        f'<svg class="story" id="story-lanes" viewBox="0 0 {width} {height}" data-x0="{_LABEL_W}" data-w="{_PLOT_W}" '
        f'data-ns="{max(1, story.duration_ns)}" '
        f'data-arrows="{arrows}" role="img" aria-label="exact spans per process over time">'
        f'<defs><clipPath id="story-plot"><rect x="{_LABEL_W}" y="0" width="{_PLOT_W}" height="{height}"/></clipPath>'
        f'</defs><g clip-path="url(#story-plot)"><g class="zoom">{"".join(marks)}</g></g>'
        f'<rect x="0" y="0" width="{_LABEL_W - 2}" height="{height}" fill="#fff"/>{text}</svg>'
    )
    return svg, _legend(story, drawn), boxes, left_out


def _axis(top: float, duration_ns: int) -> str:
    """Ticks at fifths of the plot, labelled with the time from the run's start (the script
    relabels them on zoom); the first label starts at the plot's edge, the last ends at it."""
    parts = []
    for k in range(_TICKS + 1):
        at = _PLOT_W * k / _TICKS
        anchor = "start" if k == 0 else "end" if k == _TICKS else "middle"
        parts.append(
            f'<line class="tick-line" x1="{_LABEL_W + at:.1f}" y1="0" x2="{_LABEL_W + at:.1f}" y2="{top + 3}"/>'
            f'<text class="tick" x="{_LABEL_W + at:.1f}" y="{top + 14}" text-anchor="{anchor}" data-at="{at:.1f}">'
            f"+{escape(fmt.duration(duration_ns * k / _TICKS))}</text>"
        )
    return "".join(parts) + f'<text class="tick" x="4" y="{top + 14}">time from the run\'s start</text>'


def _legend(story: Story, drawn: dict[int, list[LaneSpan]]) -> str:
    """The colours (one per top-level phase drawn; inner phases thinner) and the other marks."""
    tops = sorted({s.phase.split("/", 1)[0] for spans in drawn.values() for s in spans})
    items = [
        f'<li><span class="swatch" style="background:{_colour(top)}"></span>{name(top)}</li>'
        for top in tops[:_LEGEND_PHASES]
    ]
    if len(tops) > _LEGEND_PHASES:
        items.append(f"<li>and {len(tops) - _LEGEND_PHASES:,} more phases</li>")
    items.append('<li><span class="swatch" style="background:#d62728;height:4px"></span>critical path</li>')
    if story.arrows:
        items.append('<li><span class="line"></span>link: signal to wait</li>')
        items.append('<li><span class="line on-path"></span>link on the critical path</li>')
    if any(a.backwards for a in story.arrows):
        items.append('<li><span class="line backwards"></span>link the clocks put backwards</li>')
    if any(s.open for spans in drawn.values() for s in spans):
        items.append('<li><span class="swatch open"></span>still open when killed</li>')
    return f'<ul class="legend story-legend">{"".join(items)}</ul>'


def story_html(story: Story, max_spans: int = MAX_SPANS) -> str:
    """The story's section of a page."""
    svg, legend, boxes, left_out = lanes_svg(story, max_spans)
    summary = (
        f"{len(story.processes)} traced process(es), {story.kept_line}; traced length "
        f"{fmt.duration(story.duration_ns)}. Drawn: {fmt.count(boxes)} span(s) of {len(story.lanes)} process(es)"
        + (f", {fmt.count(left_out)} left out (the shortest: --max-spans draws more)" if left_out else "")
        + (f"; {fmt.count(story.arrows_left_out)} link(s) not drawn" if story.arrows_left_out else "")
        + ". Wheel: zoom; drag: pan; double click: reset."
    )
    findings = "".join(
        f'<li data-cost="{"" if f.cost_fraction is None else f.cost_fraction}">'
        f"[{'cost unknown' if f.cost_fraction is None else fmt.percent(f.cost_fraction) + ' of the run'}] "
        f"{name(f.text)}</li>"
        for f in story.findings
    )
    path = ""
    if story.path is not None:
        rows = "".join(
            f"<tr><td>{name(story.processes[s.process].label)}</td><td>{name(s.phase or '(no phase)')}</td>"
            f'<td data-v="{s.duration_ns}">{escape(fmt.duration(s.duration_ns))}</td>'
            f"<td>{escape(fmt.percent(s.fraction))}</td></tr>"
            for s in story.path.shares
        )
        path = (
            f"<h3>Critical path: {escape(fmt.duration(story.path.duration_ns))}, "
            f"{story.path.jumps} link(s) followed</h3>"
            '<table data-block="critical-path"><thead><tr><th>process</th><th>phase</th><th>time</th>'
            "<th>of the run</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    body = (
        f"<style>{_STYLE}</style>{para(summary)}"
        + (f'<h3>Findings</h3><ol class="findings">{findings}</ol>' if findings else "")
        + path
        + legend
        + f'<div class="wide">{svg}</div><script>{_SCRIPT}</script>'
        + _lifecycles_html(story)
    )
    return section("story", "Story: what set the run's length", body)


def _lifecycles_html(story: Story) -> str:
    """A table per channel of request lifecycles: each interval's share, mean, p95 and count."""
    out = []
    for channel in story.lifecycles:
        whole = channel.total_ns or 1
        rows = "".join(
            f"<tr><td>{name(s.name)}</td>"
            f'<td data-v="{s.total_ns}">{escape(fmt.percent(s.total_ns / whole))}</td>'
            f'<td data-v="{s.mean_ns}">{escape(fmt.duration(s.mean_ns))}</td>'
            f'<td data-v="{s.p95_ns}">{escape(fmt.duration(s.p95_ns))}</td><td>{s.count}</td></tr>'
            for s in channel.segments
        )
        left = f", {channel.incomplete} incomplete, {channel.out_of_order} out of order (left out)"
        out.append(
            f"<h3>Requests on {name(channel.channel)}: {fmt.count(channel.requests)}"
            f"{escape(left) if channel.incomplete or channel.out_of_order else ''}</h3>"
            '<table data-block="lifecycle"><thead><tr><th>interval</th><th>share</th><th>mean</th><th>p95</th>'
            f"<th>requests</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(out)


def render_story_html(story: Story, caveats: Sequence[str], *, title: str, max_spans: int | None = None) -> str:
    """``lineprofiler trace --html``: the story as one self-contained page."""
    alerts = ""
    if caveats:
        items = "".join(f"<li>{name(line)}</li>" for line in caveats)
        alerts = f'<section class="alerts" id="caveats"><h2>CAVEATS</h2><ul>{items}</ul></section>'
    top = f"<header><h1>{escape(fmt.printable(title))}</h1></header>"
    return page(title, top + alerts + "<!--nav-->" + story_html(story, max_spans or MAX_SPANS), [("story", "Story")])
