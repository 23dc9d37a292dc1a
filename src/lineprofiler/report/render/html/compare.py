"""``compare A B --html``: the two runs side by side per role and phase, as one page.

Drawn from the same document ``compare --json`` prints (``report/render/compare.py``): shares of the
role's phase time in A and in B, p50 and p99 with their change, a change marked where it is
beyond the histograms' bucket error.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ... import format as fmt
from ...wording import compare_attempt_notes, compare_off_cpu_line, short_names
from . import svg
from .markup import page, para, table, td


def _side(doc: dict[str, Any], key: str) -> str:
    side = doc[key]
    roles = ", ".join(f"{fmt.printable(r)} x{n}" for r, n in side["roles"].items())
    facts = (
        ("Run", side["run"]),
        ("Directory", fmt.printable(side["run_dir"])),
        ("Runtime", fmt.duration(side["runtime_ns"])),
        ("Processes", str(side["processes"])),
        ("Roles", roles),
    )
    items = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
    return f'<div data-side="{key}"><h3>{key.upper()}</h3><dl class="facts">{items}</dl></div>'


def _duration(ns: float | None) -> str:
    return td(fmt.duration(ns), ns)


def _change(change: float | None, real: bool) -> str:
    shown = fmt.signed_percent(change) + (" *" if real else "")
    return td(shown, change, "real" if real else "")


def _role(role: dict[str, Any]) -> str:
    about = []
    for key in ("a", "b"):
        n = role[f"{key}_processes"]
        imbalance = role[f"{key}_imbalance"]
        about.append(f"{key.upper()} {n} process{'es' if n != 1 else ''}"
                     + (f", imbalance {fmt.ratio(imbalance)}" if n else ""))
    title = f"{fmt.printable(role['role']).upper()}  ({'; '.join(about)})"
    rows = [r for r in role["phases"] if (r["a"] and r["a"]["self_ns"] > 0) or (r["b"] and r["b"]["self_ns"] > 0)]
    if not rows:
        return f"<h2>{escape(title)}</h2><p>(no time recorded in phases on either side)</p>"
    names = short_names([r["path"] for r in rows])
    cells = []
    bars = []
    for r in rows:
        sa, sb = r["a"] or {}, r["b"] or {}
        label = fmt.printable(names[r["path"]])
        share_a, share_b = sa.get("share"), sb.get("share")
        cells.append(
            f'<tr data-phase="{escape(r["path"], quote=True)}">{td(label, cls="name")}'
            f"{td(fmt.percent(share_a), share_a)}{td(fmt.percent(share_b), share_b)}"
            f"{td(fmt.points(r['share_change']), r['share_change'])}"
            + "".join(
                f"{_duration(sa.get(key))}{_duration(sb.get(key))}{_change(r[f'{q}_change'], r[f'{q}_real'])}"
                for q, key in (("p50", "p50_ns"), ("p99", "p99_ns"))
            )
            + "</tr>"
        )
        marked = bool(r["p50_real"] or r["p99_real"])
        changed = f" ({fmt.signed_percent(r['p50_change'])} p50, {fmt.signed_percent(r['p99_change'])} p99)"
        tips = [
            f"{side} {label}: {fmt.percent(s.get('share'))} of phase time, p50 {fmt.duration(s.get('p50_ns'))}"
            for side, s in (("A", sa), ("B", sb))
        ]
        bars.append((label, share_a, share_b, tips[0], tips[1] + (changed if marked else ""), marked))
    columns = ("phase", "share A", "share B", "change", "p50 A", "p50 B", "change", "p99 A", "p99 B", "change")
    role_key = escape(role["role"], quote=True)
    tab = table("compare", columns, cells).replace("<table ", f'<table data-role="{role_key}" ', 1)
    chart = svg.paired_bars("compare-share", bars, f"phase shares of {role['role']} in A and B")
    legend = svg.legend(
        [("A", "#9aa5b1"), ("B", "#4e79a7"), ("p50/p99 changed beyond the bucket error", svg.STRAGGLER)]
    )
    off_cpu = compare_off_cpu_line(role)
    why = f'<p data-block="off-cpu">{escape(fmt.printable(off_cpu))}</p>' if off_cpu else ""
    return f"<h2>{escape(title)}</h2>{chart}{legend}{tab}{why}"


def render_compare_html(doc: dict[str, Any]) -> str:
    """The comparison document as one self-contained HTML page."""
    notes = []
    for key in ("a", "b"):
        side = doc[key]
        notes += compare_attempt_notes(key, side)
        notes += [f"{key.upper()}: {c}" for c in side["caveats"]]
    alerts = ""
    if notes:
        items = "".join(f"<li>{escape(fmt.printable(n))}</li>" for n in notes)
        alerts = (
            f'<section class="alerts" data-block="caveats"><h2>CAVEATS and attempts</h2><ul>{items}</ul></section>'
        )
    error = para(
        f"p50/p99 changes are marked * only beyond the histograms' bucket error: each side is within "
        f"\u00b1{fmt.percent(doc['bucket_relative_error'])} (one bucket), so changes between "
        f"{fmt.signed_percent(doc['real_change_below'])} and {fmt.signed_percent(doc['real_change_above'])} "
        "are not marked: they may be bucket rounding, not a change."
    )
    head = (
        f'<header><h1>lineprofiler compare <span class="sub">{escape(doc["a"]["run"])} vs '
        f'{escape(doc["b"]["run"])}</span></h1><div class="sides">{_side(doc, "a")}{_side(doc, "b")}</div></header>'
    )
    body = head + alerts + error + "".join(_role(r) for r in doc["roles"])
    return page(f"lineprofiler compare: {doc['a']['run']} vs {doc['b']['run']}", body, [])


__all__ = ["render_compare_html"]
