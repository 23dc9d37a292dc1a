"""The HTML report's charts: SVG written here, from the report's model, with no plotting library.

Every chart is one ``<svg class="chart" data-chart="KIND">`` scaled by its viewBox. Each data
mark (a bar, a segment, a band) has the class ``mark``, a ``data-tip`` the page's script shows
on hover, and a ``<title>`` child, so browsers show the same tip with scripts off. Numbers in
tips and axes are formatted by ``report/format.py``, as in the text report.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from ....runfiles import histogram
from ... import format as fmt
from ...compute.series import COLUMNS
from ...model import Bucket, Series

#: Colours for phases and series, in order; the last is "the rest".
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#86bcb6", "#d37295", "#8cd17d",
)
REST = "#bab0ac"
STRAGGLER = "#d62728"

Fmt = Callable[[float], str]


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def attr(text: str) -> str:
    return escape(text, quote=True)


def _n(x: float) -> str:
    """A coordinate, short: integers without decimals."""
    r = round(x, 1)
    return str(int(r)) if r == int(r) else f"{r:.1f}"


def mark(shape: str, tip: str, **attrs: str | float) -> str:
    """One data mark with its tip (``data-tip`` for the script, ``<title>`` without it)."""
    extra = " ".join(f'{k.rstrip("_").replace("_", "-")}="{attr(v) if isinstance(v, str) else _n(v)}"'
                     for k, v in attrs.items())
    return f'<{shape} class="mark" data-tip="{attr(tip)}" {extra}><title>{escape(tip)}</title></{shape}>'


def chart(kind: str, width: float, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg class="chart" data-chart="{kind}" viewBox="0 0 {_n(width)} {_n(height)}" '
        f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label="{attr(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>"
    )


def text(x: float, y: float, content: str, *, anchor: str = "start", cls: str = "axis") -> str:
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" class="{cls}">{escape(content)}</text>'


# -- bars --------------------------------------------------------------------------------------------


@dataclass
class Segment:
    label: str
    value: float
    tip: str
    colour: str


def stacked_bar(kind: str, segments: Sequence[Segment], label: str, width: float = 720, height: float = 26) -> str:
    """One horizontal bar split into segments proportional to their values."""
    total = sum(max(0.0, s.value) for s in segments)
    body = []
    x = 0.0
    for s in segments:
        w = width * max(0.0, s.value) / total if total > 0 else 0.0
        if w <= 0:
            continue
        body.append(mark("rect", s.tip, x=x, y=0, width=w, height=height, fill=s.colour))
        if w > 60:
            body.append(text(x + 4, height / 2 + 4, s.label, cls="inbar"))
        x += w
    return chart(kind, width, height, body, label)


@dataclass
class Bar:
    label: str
    value: float
    tip: str
    highlight: bool = False
    note: str = ""


def bars(kind: str, rows: Sequence[Bar], label: str, *, reference: float | None = None,
         reference_label: str = "", width: float = 720, row: float = 14) -> str:
    """Horizontal bars, one per row, labelled on the left; an optional dashed reference line
    (a mean); highlighted rows are drawn in the straggler colour with their note."""
    left, right = 230.0, 70.0
    plot = width - left - right
    top = max((r.value for r in rows), default=0.0)
    top = max(top, reference or 0.0)
    height = row * len(rows) + 18
    body = []
    for i, r in enumerate(rows):
        y = i * row
        w = plot * r.value / top if top > 0 else 0.0
        body.append(text(left - 6, y + row - 3, fmt.clip_left(r.label, 38), anchor="end", cls="label"))
        fill = STRAGGLER if r.highlight else "#4e79a7"
        body.append(mark("rect", r.tip, x=left, y=y + 1, width=max(w, 0.5), height=row - 3, fill=fill,
                         data_value=r.value))
        if r.note:
            body.append(text(left + w + 4, y + row - 3, r.note, cls="note"))
    if reference is not None and top > 0:
        x = left + plot * reference / top
        body.append(f'<line class="ref" x1="{_n(x)}" x2="{_n(x)}" y1="0" y2="{_n(row * len(rows))}"/>')
        body.append(text(x, row * len(rows) + 13, reference_label, anchor="middle"))
    return chart(kind, width, height, body, label)


# -- a latency histogram ------------------------------------------------------------------------------


def _log_position(value: float, first: int) -> float:
    """Where a duration falls on the bucket axis, in buckets from the first shown one."""
    index = histogram.bucket_index(int(value))
    low, high = histogram.bucket_bounds(index)
    within = 0.5
    if high is not None and low > 0 and high > low and value > 0:
        within = min(1.0, max(0.0, math.log(value / low) / math.log(high / low)))
    return index - first + within


def latency_histogram(kind: str, buckets: Sequence[Bucket], quantiles: Sequence[tuple[str, float | None]],
                      label: str, width: float = 360, height: float = 150) -> str:
    """Entry counts per log bucket (8 per doubling), with quantiles marked as lines."""
    if not buckets:
        return ""
    left, bottom, top_pad = 8.0, 22.0, 6.0
    first = max(0, buckets[0].index - 1)
    last = buckets[-1].index + 1
    n = last - first + 1
    bw = (width - 2 * left) / n
    peak = max(b.count for b in buckets)
    plot_h = height - bottom - top_pad
    body = []
    for b in buckets:
        h = plot_h * b.count / peak
        x = left + (b.index - first) * bw
        high = "and above" if b.high_ns is None else f"to {fmt.duration(b.high_ns)}"
        tip = f"{fmt.duration(b.low_ns)} {high}: {fmt.count(b.count)} entries"
        body.append(mark("rect", tip, x=x, y=top_pad + plot_h - h, width=max(bw - 0.6, 0.6), height=max(h, 0.8),
                         fill="#4e79a7", data_count=b.count))
    for q, (name, value) in enumerate(quantiles):
        if value is None:
            continue
        x = left + _log_position(value, first) * bw
        body.append(f'<line class="q" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top_pad - 2)}" y2="{_n(top_pad + plot_h)}" '
                    f'data-q="{attr(name)}"/>')
        body.append(text(x + 2, top_pad + 8 + 10 * q, name, cls=f"qlabel q{q}"))
    # Axis: the low edge of the first and last bucket shown, and one in the middle.
    for index in (first + 1, (first + last) // 2, last):
        low, _ = histogram.bucket_bounds(index)
        body.append(text(left + (index - first) * bw, height - 6, fmt.duration(low), anchor="middle"))
    return chart(kind, width, height, body, label)


# -- quantities over time ----------------------------------------------------------------------------


@dataclass
class Band:
    """One series drawn as the envelope of its per-column minimum and maximum."""

    label: str
    series: Series
    colour: str
    tip: str
    group: str = ""


def _axis_time(left: float, plot_w: float, y: float, runtime_ns: int) -> list[str]:
    """Five ticks from the run's start; under a minute in the report's durations, since whole
    seconds would repeat."""
    label = fmt.duration if runtime_ns < 60 * 10**9 else fmt.moment
    # The last label ends at the plot's edge, so it never runs past the chart.
    anchors = ("middle",) * 4 + ("end",)
    return [text(left + plot_w * k / 4, y, label(runtime_ns * k / 4), anchor=anchors[k]) for k in range(5)]


def over_time(kind: str, bands: Sequence[Band], label: str, *, start_ns: int, runtime_ns: int,
              unit: Fmt, fixed_top: float | None = None, height: float = 200) -> str:
    """Bands over the run's wall clock: x is time from the run's start, :data:`COLUMNS` SVG units
    wide; y from zero to the highest value (or ``fixed_top``). Each band is the envelope of its
    columns' minima and maxima, joined across columns that hold no sample."""
    if not bands:
        return ""
    left, right, top_pad, bottom = 64.0, 12.0, 8.0, 22.0
    plot_w = float(COLUMNS)
    width = left + plot_w + right
    plot_h = height - top_pad - bottom
    top = fixed_top if fixed_top is not None else max(
        (v for b in bands for v in b.series.high if v is not None), default=0.0
    )
    if top <= 0:
        top = 1.0
    span = max(1, runtime_ns)

    def y_of(v: float) -> float:
        return top_pad + plot_h - plot_h * min(v, top) / top

    body = [f'<rect class="frame" x="{_n(left)}" y="{_n(top_pad)}" width="{_n(plot_w)}" height="{_n(plot_h)}"/>']
    for k in range(3):
        v = top * k / 2
        y = y_of(v)
        body.append(f'<line class="grid" x1="{_n(left)}" x2="{_n(left + plot_w)}" y1="{_n(y)}" y2="{_n(y)}"/>')
        body.append(text(left - 4, y + 4, unit(v), anchor="end"))
    for b in bands:
        s = b.series
        # Columns of this series are placed by time, so series of different column widths
        # (a short run's slots) share the axis.
        scale = plot_w * s.column_ns / span
        offset = plot_w * (s.start_ns - start_ns) / span
        highs: list[tuple[float, float]] = []
        lows: list[tuple[float, float]] = []
        for j, (lo, hi) in enumerate(zip(s.low, s.high, strict=False)):
            if lo is None or hi is None:
                continue  # no sample in this column (samples sparser than columns): join the neighbours
            x = left + offset + (j + 0.5) * scale
            highs.append((x, y_of(hi)))
            lows.append((x, y_of(lo)))
        if len(highs) == 1:  # one column: a short stroke still shows
            (x, hy), (_, ly) = highs[0], lows[0]
            highs.append((x + max(scale, 1.0), hy))
            lows.append((x + max(scale, 1.0), ly))
        parts = ["M" + " L".join(f"{_n(x)},{_n(y)}" for x, y in highs + lows[::-1]) + " Z"] if highs else []
        if parts:
            group = f' data-group="{attr(b.group)}"' if b.group else ""
            body.append(
                f'<path class="mark band"{group} data-tip="{attr(b.tip)}" d="{" ".join(parts)}" '
                f'stroke="{b.colour}" fill="{b.colour}"><title>{escape(b.tip)}</title></path>'
            )
    body.extend(_axis_time(left, plot_w, height - 6, runtime_ns))
    return chart(kind, width, height, body, label)


def stacked_rows(kind: str, rows: Sequence[tuple[str, Sequence[Segment]]], label: str, *, width: float = 720,
                 row: float = 18) -> str:
    """One horizontal stacked bar per row, all on one scale (the largest row's total)."""
    left, right = 230.0, 20.0
    plot = width - left - right
    top = max((sum(max(0.0, s.value) for s in segs) for _, segs in rows), default=0.0)
    body = []
    for i, (name, segs) in enumerate(rows):
        y = i * row
        body.append(text(left - 6, y + row - 5, fmt.clip_left(name, 38), anchor="end", cls="label"))
        x = left
        for s in segs:
            if s.value <= 0 or top <= 0:
                continue
            w = max(0.5, plot * s.value / top)  # a few bytes beside gigabytes still show
            body.append(mark("rect", s.tip, x=x, y=y + 2, width=w, height=row - 5, fill=s.colour))
            x += w
    return chart(kind, width, row * len(rows) + 4, body, label)


def lanes(kind: str, rows: Sequence[tuple[str, Sequence[tuple[float, float, str, str]]]], label: str, *,
          runtime_ns: int, colours: dict[str, str], width: float = 720, row: float = 14) -> str:
    """One lane per process: ``(start, end, key, tip)`` spans in ns from the run's start, each a
    rectangle coloured by its key."""
    left = 230.0
    plot = width - left - 12
    span = max(1, runtime_ns)
    body = []
    for i, (name, spans) in enumerate(rows):
        y = i * row
        body.append(text(left - 6, y + row - 3, fmt.clip_left(name, 38), anchor="end", cls="label"))
        for start, end, key, tip in spans:
            x = left + plot * start / span
            w = max(0.5, plot * (end - start) / span)
            body.append(mark("rect", tip, x=x, y=y + 1, width=w, height=row - 3, fill=colours.get(key, REST)))
    body.extend(_axis_time(left, plot, row * len(rows) + 13, runtime_ns))
    return chart(kind, width, row * len(rows) + 18, body, label)


def paired_bars(kind: str, rows: Sequence[tuple[str, float | None, float | None, str, str, bool]], label: str,
                *, width: float = 720, row: float = 20) -> str:
    """Two bars per row (A above B) on one scale: ``(label, a, b, tip_a, tip_b, marked)``; a
    marked row's label is drawn in the straggler colour."""
    left, right = 230.0, 20.0
    plot = width - left - right
    top = max((v for r in rows for v in (r[1], r[2]) if v is not None), default=0.0)
    body = []
    for i, (name, a, b, tip_a, tip_b, marked) in enumerate(rows):
        y = i * row
        body.append(text(left - 6, y + row / 2 + 3, fmt.clip_left(name, 38), anchor="end",
                         cls="note" if marked else "label"))
        for k, (value, tip, fill) in enumerate(((a, tip_a, "#9aa5b1"), (b, tip_b, "#4e79a7"))):
            if value is None:
                continue
            w = plot * value / top if top > 0 else 0.0
            body.append(mark("rect", tip, x=left, y=y + 2 + k * (row - 4) / 2, width=max(w, 0.5),
                             height=(row - 4) / 2 - 1, fill=fill))
    return chart(kind, width, row * len(rows) + 4, body, label)


def legend(items: Sequence[tuple[str, str]]) -> str:
    """``(label, colour)`` swatches, as HTML."""
    return '<ul class="legend">' + "".join(
        f'<li><span class="swatch" style="background:{c}"></span>{escape(label)}</li>' for label, c in items
    ) + "</ul>"


__all__ = [
    "Band",
    "Bar",
    "PALETTE",
    "REST",
    "STRAGGLER",
    "Segment",
    "bars",
    "chart",
    "colour",
    "latency_histogram",
    "lanes",
    "legend",
    "mark",
    "over_time",
    "paired_bars",
    "stacked_bar",
    "stacked_rows",
]
