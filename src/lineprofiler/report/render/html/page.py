"""The HTML report: the report's model as one self-contained page.

Sections follow the text report's blocks, each with the same numbers formatted by
``report/format.py`` (and, where the text prints a sentence, the same sentence from
``report/wording.py``), plus charts drawn by :mod:`.svg`. CAVEATS and the header's lines about
attempts (superseded, concurrent, merged by time) come first. Numeric cells carry their
unformatted value in ``data-v`` (what sorting uses); tables and rows carry ``data-*`` names for
what they hold, so a reader (or a test) can find a number without parsing the layout.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from ... import format as fmt
from ... import wording
from ...compute import series
from ...model import (
    BackendWindow,
    Counter,
    Counters,
    Dominant,
    GpuSummary,
    Header,
    IoByPhase,
    Iterations,
    Lane,
    Memory,
    ProcessMemory,
    Report,
    Role,
    SampledIo,
)
from .. import cpu_text
from ..step_text import collectives_text, replaces_split, step_parts_text
from ..text import sources_text, split_text, spread_text
from . import cpu as cpu_html
from . import svg
from .markup import name, para, section, table, td

# -- header and alerts ----------------------------------------------------------------------------------


def header_html(header: Header) -> str:
    facts = [
        ("runtime", "Runtime", fmt.duration(header.runtime_ns)),
        ("processes", "Processes", str(header.processes)),
        ("roles", "Roles", ", ".join(f"{fmt.printable(r)} x{n}" for r, n in header.roles.items())),
        ("hosts", "Hosts", f"{', '.join(fmt.printable(h) for h in header.hosts)} ({len(header.hosts)} "
                           f"{'node' if len(header.hosts) == 1 else 'nodes'})"),
        ("started", "Started", wording.utc_time(header.start_ns)),
    ]
    if header.ranks:
        facts.append(("ranks", "Ranks", fmt.int_ranges(header.ranks)))
    if header.job_ids:
        launchers = sorted({fmt.printable(x) for x in header.launchers})
        jobs = ", ".join(fmt.printable(j) for j in header.job_ids)
        facts.append(("job", "Job", jobs + (f" ({', '.join(launchers)})" if launchers else "")))
    if header.sources:
        label, _, value = sources_text(header).partition(" ")
        facts.append(("source", label, value))
    items = "".join(
        f'<div data-key="{key}"><dt>{escape(label)}</dt><dd>{escape(value)}</dd></div>' for key, label, value in facts
    )
    return (
        f'<header><h1>lineprofiler report <span class="sub">run {escape(header.run)}</span></h1>'
        f'<div class="sub">{escape(header.run_dir)}</div><dl class="facts">{items}</dl></header>'
    )


def alerts_html(report: Report, caveats: Sequence[str]) -> str:
    out = []
    if caveats:
        # As the text prints them: texts from the files with their control characters escaped.
        items = "".join(f"<li>{escape(fmt.printable(c))}</li>" for c in caveats)
        out.append(
            f'<section class="alerts" id="caveats" data-block="caveats"><h2>CAVEATS: {len(caveats)} limit'
            f"{'s' if len(caveats) != 1 else ''} of these numbers</h2><ul>{items}</ul></section>"
        )
    attempts = wording.attempt_lines(report.header) if report.header is not None else []
    if attempts:
        # The header's lines about attempts, as the text prints them: the attempt shown when it is
        # not the newest, the run ids merged by time, concurrent jobs and superseded attempts.
        items = "".join(f"<li>{escape(line)}</li>" for line in attempts)
        out.append(
            '<section class="alerts superseded" id="attempts" data-block="attempts"><h2>Attempts: what is '
            f"merged and what is not</h2><ul>{items}</ul></section>"
        )
    return "".join(out)


# -- roles ----------------------------------------------------------------------------------------------


def role_html(role: Role) -> str:
    title = f'<h3 data-role="{escape(role.name, quote=True)}">{escape(wording.role_title(role))}</h3>'
    if not role.phases:
        return f"{title}<p>(no time recorded in phases)</p>"
    shown = role.phases[: len(svg.PALETTE) - 1]
    segments = [
        svg.Segment(fmt.printable(p.name), p.share, f"{fmt.printable(p.path)}: {fmt.percent(p.share)}, "
                    f"{fmt.duration(p.self_ns)} self", svg.colour(i))
        for i, p in enumerate(shown)
    ]
    more, rest_ns, rest_share = role.rest(len(shown))
    if more:
        segments.append(svg.Segment(f"{more} more", rest_share, f"{more} more phases: {fmt.percent(rest_share)}, "
                                    f"{fmt.duration(rest_ns)} self", svg.REST))
    bar = svg.stacked_bar("phase-share", segments, f"phase shares of role {fmt.printable(role.name)}")
    legend = svg.legend([(s.label, s.colour) for s in segments])
    rows = []
    for p in role.phases:
        opened = fmt.count(p.open_entries) if p.open_entries else ""
        rows.append(
            f'<tr data-phase="{escape(p.path, quote=True)}">{td(fmt.printable(p.name), cls="name")}'
            f"{td(fmt.percent(p.share), p.share)}{td(fmt.duration(p.self_ns), p.self_ns)}"
            f"{td(opened, p.open_entries)}</tr>"
        )
    tab = table("role", ("phase", "share", "self", "open entries"), rows).replace(
        "<table ", f'<table data-role="{escape(role.name, quote=True)}" ', 1
    )
    members = sorted((m for m in role.members if m.has_data), key=lambda m: (-m.busy_ns, m.pid))
    straggler = role.straggler
    per_process = svg.bars(
        "process-busy",
        [
            svg.Bar(
                m.label,
                m.busy_ns,
                f"{m.label}: {fmt.duration(m.busy_ns)} in phases"
                # at most the whole lifetime: threads' phases in parallel add up to more
                + (f", {fmt.percent(min(1.0, m.busy_ns / m.lifetime_ns))} of its lifetime" if m.lifetime_ns else ""),
                highlight=m == straggler,
                note=wording.straggler_note(role) if m == straggler else "",
            )
            for m in members
        ],
        f"busy time per process of role {fmt.printable(role.name)}",
        reference=role.mean_busy_ns,
        reference_label=f"mean {fmt.duration(role.mean_busy_ns)}",
    ) if members else ""
    sentences = "".join(para(line) for line in wording.straggler_lines(role)) + para(wording.time_in_phases_text(role))
    if role.split is not None and not replaces_split(role):
        sentences += f'<p data-split="{escape(role.split.parent, quote=True)}">{escape(split_text(role.split))}</p>'
    steps = step_parts_text(role)
    if steps is not None and role.step_parts is not None:
        sentences += f'<p data-step-parts="{escape(role.step_parts.verdict or "", quote=True)}">{escape(steps)}</p>'
    collectives = collectives_text(role)
    if collectives is not None:
        sentences += f"<p data-collectives>{escape(collectives)}</p>"

    return f"{title}{bar}{legend}{tab}<h3>Busy time per process</h3>{per_process}{sentences}"


def windows_html(windows: Sequence[BackendWindow]) -> str:
    """Each process's backend window and the file it wrote (the same sentences as the text)."""
    return section("windows", "Backend windows", "".join(para(wording.backend_window_text(w)) for w in windows))


def roles_html(roles: Sequence[Role]) -> str:
    return section("roles", "Roles", "".join(role_html(r) for r in roles))


# -- dominant phases, counters, iterations -------------------------------------------------------------


def dominant_html(dominant: Dominant) -> str:
    groups = []
    figures = []
    # The off-CPU split, a bar beside wait, where any process measured it (as in the text).
    split_shown = cpu_text.measured(dominant.phases)
    for p in dominant.phases:
        key = f'data-role="{escape(p.role, quote=True)}" data-phase="{escape(p.path, quote=True)}"'
        row = (
            f"<tr {key}>{td(fmt.printable(p.path), cls='name')}{td(fmt.printable(p.role))}"
            f"{td(fmt.duration(p.self_ns), p.self_ns)}{td(fmt.percent(p.wait, 0), p.wait)}"
            f"{cpu_html.split_cell(p) if split_shown else ''}"
            f"{td(fmt.duration(p.p50_ns), p.p50_ns)}{td(fmt.duration(p.p95_ns), p.p95_ns)}"
            f"{td(fmt.duration(p.p99_ns), p.p99_ns)}{td(fmt.count(p.entries), p.entries)}</tr>"
        )
        subs = "".join(
            f'<tr class="sub" data-counter="{escape(c.name, quote=True)}"><td class="name">+ {name(c.name)}</td>'
            f"{td(fmt.count(c.total), c.total)}{td(fmt.rate(c.per_s), c.per_s)}"
            f"{td(fmt.per_each(c.each_ns), c.each_ns)}<td></td><td></td><td></td><td></td>"
            f"{'<td></td>' if split_shown else ''}</tr>"
            for c in p.counters
        )
        groups.append(f"<tbody>{row}{subs}</tbody>")
        chart = svg.latency_histogram(
            "latency",
            p.histogram,
            (("p50", p.p50_ns), ("p95", p.p95_ns), ("p99", p.p99_ns)),
            f"latency histogram of {fmt.printable(p.path)}",
        )
        figures.append(
            f"<figure {key}>{chart}<figcaption><b>{name(p.path)}</b> ({name(p.role)}): "
            f"p50 {fmt.duration(p.p50_ns)} · p95 {fmt.duration(p.p95_ns)} · p99 {fmt.duration(p.p99_ns)} · "
            f"{fmt.count(p.entries)} entries</figcaption></figure>"
        )
    columns = ("phase", "role", "self", "wait", *(("waited",) if split_shown else ()), "p50", "p95", "p99", "entries")
    tab = table("dominant", columns, groups, groups=True)
    if split_shown:
        tab += cpu_html.split_legend(dominant.phases)
    note = para(
        "Counters are listed under their phase: total, rate per second of the phase's wall time, "
        "time per each. Histograms: entries per bucket (8 per doubling of duration); hover a bar "
        "for its range and count."
    )
    return section("dominant", "Dominant phases", tab + note + f'<div class="hists">{"".join(figures)}</div>')


#: Counters drawn in the rates chart at most (the highest rates; the table lists all).
CHART_COUNTERS = 30


def counters_html(dominant: Dominant | None, counters: Counters | None) -> str:
    rows = []
    all_counters: list[tuple[str, Counter]] = []
    for p in dominant.phases if dominant else []:
        all_counters += [(p.role, c) for c in p.counters]
    for g in counters.groups if counters else []:
        all_counters += [(g.role, c) for c in g.counters]
    if not all_counters:
        return ""
    for role, c in all_counters:
        each = fmt.per_each(c.each_ns) if c.per == "phase" else ""
        rows.append(
            f'<tr data-role="{escape(role, quote=True)}" data-phase="{escape(c.phase, quote=True)}" '
            f'data-counter="{escape(c.name, quote=True)}">{td(fmt.printable(c.name), cls="name")}'
            f"{td(fmt.printable(c.phase) if c.phase else '(no phase open)', cls='name')}{td(fmt.printable(role))}"
            f"{td(fmt.count(c.total), c.total)}{td(fmt.rate(c.per_s), c.per_s)}{td(each, c.each_ns)}"
            f"{td(spread_text(c).strip())}</tr>"
        )
    tab = table("counters", ("counter", "phase", "role", "total", "rate", "each", "per count()"), rows)
    charted = all_counters
    if len(all_counters) > CHART_COUNTERS:
        # A bar per counter of thousands is a page tens of thousands of pixels tall: the chart
        # keeps the highest rates, in the table's order; the table keeps every counter.
        ranked = sorted(range(len(all_counters)), key=lambda i: -(all_counters[i][1].per_s or 0.0))
        charted = [all_counters[i] for i in sorted(ranked[:CHART_COUNTERS])]
    chart = svg.bars(
        "counter-rates",
        [
            svg.Bar(f"{fmt.printable(c.name)} ({fmt.printable(role)})", c.per_s or 0.0,
                    f"{fmt.printable(c.name)} in {fmt.printable(c.phase) or '(no phase open)'}: {fmt.count(c.total)}, "
                    f"{fmt.rate(c.per_s)}" + (f", {fmt.per_each(c.each_ns)}" if c.per == "phase" else ""))
            for role, c in charted
        ],
        "counter rates",
    )
    shown = (f" The chart shows the {len(charted)} highest rates of {fmt.count(len(all_counters))} counters; the "
             "table lists every one.") if len(charted) < len(all_counters) else ""
    note = para("Rates are per second of the phase's wall time summed over the role's processes; a counter with "
                "no phase open is per second of the role's summed process lifetime." + shown)
    return section("counters", "Counters", tab + chart + note)


def iterations_html(iterations: Iterations) -> str:
    rows = []
    figures = []
    for r in iterations.roles:
        rows.append(
            f'<tr data-role="{escape(r.role, quote=True)}">{td(fmt.printable(r.role), cls="name")}'
            f"{td(fmt.count(r.entries), r.entries)}{td(fmt.duration(r.mean_ns), r.mean_ns)}"
            f"{td(fmt.duration(r.p50_ns), r.p50_ns)}{td(fmt.duration(r.p95_ns), r.p95_ns)}"
            f"{td(fmt.duration(r.p99_ns), r.p99_ns)}{td(f'{fmt.printable(r.phase)} ({r.why})', cls='name')}</tr>"
        )
        chart = svg.latency_histogram("latency", r.histogram, (("p50", r.p50_ns), ("p95", r.p95_ns),
                                                                ("p99", r.p99_ns)), f"iterations of {r.role}")
        figures.append(f"<figure>{chart}<figcaption><b>{name(r.role)}</b></figcaption></figure>")
    about = (
        para(f"phase {fmt.printable(iterations.phase)} ({iterations.why})")
        if iterations.one_phase
        else para(f"each role's own loop ({wording.CHOOSE_LOOP})")
    )
    tab = table("iterations", ("role", "entries", "mean", "p50", "p95", "p99", "phase"), rows)
    return section("iterations", "Iterations", about + tab + f'<div class="hists">{"".join(figures)}</div>')


# -- resources ------------------------------------------------------------------------------------------

_LAYERS = (("disk_read", "read (from disk)", "#4e79a7"), ("cache_read", "read (from page cache)", "#76b7b2"),
           ("write", "write", "#e15759"))


def io_by_phase_html(io: IoByPhase) -> str:
    rows, chart_rows = [], []
    for p in io.phases:
        label = fmt.printable(f"{p.role}: {p.path}" if io.several_roles else p.path)
        rows.append(
            f'<tr data-role="{escape(p.role, quote=True)}" data-phase="{escape(p.path, quote=True)}">'
            f"{td(label, cls='name')}{td(fmt.size(p.read_bytes), p.read_bytes)}"
            f"{td(fmt.size(p.write_bytes), p.write_bytes)}{td(fmt.byte_rate(p.bytes_per_s), p.bytes_per_s)}"
            f"{td(fmt.size(p.cache_read_bytes), p.cache_read_bytes)}"
            f"{td(fmt.count(p.failed) if p.failed else '', p.failed)}</tr>"
        )
        values = (p.read_bytes, p.cache_read_bytes, p.write_bytes)
        chart_rows.append((label, [svg.Segment(lname, v, f"{label}: {lname} {fmt.size(v)}", c)
                                   for (_, lname, c), v in zip(_LAYERS, values, strict=True)]))
    tab = table("io-by-phase", ("phase", "read", "write", "rate", "read from page cache", "not measured"), rows)
    chart = svg.stacked_rows("io-by-phase", chart_rows, "bytes per io=True phase")
    legend = svg.legend([(n, c) for _, n, c in _LAYERS])
    note = para("Measured exactly at each io=True phase's entry and exit; the rate is over the measured "
                "entries' wall time.")
    return section("io-by-phase", "I/O by phase (measured exactly)", tab + chart + legend + note)


def _reasons(reasons: Iterable[tuple[str, int]], total: int) -> str:
    return "".join(para(f"not measured in {n} of {total} processes: {fmt.printable(why)}") for why, n in reasons)


def io_html(io: SampledIo, header: Header | None) -> str:
    reasons = _reasons(((r.reason, r.processes) for r in io.reasons), io.processes)
    # The sample files that could not be used (io.problems) are CAVEATS lines, at the top.
    if io.measured_processes == 0:
        return section("io", "I/O (sampled)", reasons or para("not measured: no sample file could be read"))

    def rate(total: int, per_s: float | None) -> str:
        return fmt.byte_rate(per_s) if io.rates_known and total > 0 else ""

    rows = [
        f'<tr data-key="disk_read">{td("Read (from disk)", cls="name")}'
        f"{td(fmt.size(io.disk_read_bytes), io.disk_read_bytes)}"
        f"{td(rate(io.disk_read_bytes, io.disk_read_per_s), io.disk_read_per_s)}</tr>",
        f'<tr data-key="cache_read">{td("Read (from page cache)", cls="name")}'
        f'{td(fmt.size(io.cache_read_bytes), io.cache_read_bytes)}{td("")}</tr>',
        f'<tr data-key="write">{td("Write", cls="name")}{td(fmt.size(io.write_bytes), io.write_bytes)}'
        f"{td(rate(io.write_bytes, io.write_per_s), io.write_per_s)}</tr>",
    ]
    tab = table("io", ("", "bytes", "rate"), rows)
    chart = ""
    tl = io.timeline
    if tl is not None and header is not None:
        bands = [svg.Band(lname, tl.rates[key], c, f"{lname}: peak {fmt.byte_rate(_peak(tl.rates[key].high))}")
                 for key, lname, c in _LAYERS if key in tl.rates]
        chart = svg.over_time("io-rates", bands, "read and write rates over time", start_ns=header.start_ns,
                              runtime_ns=header.runtime_ns, unit=fmt.byte_rate)
        peak = f"peak write {fmt.byte_rate(tl.peak_write_per_s)}"
        if tl.slot_ns > tl.interval_ns:
            peak += f" over {fmt.duration(tl.slot_ns)}"
        chart += svg.legend([(n, c) for _, n, c in _LAYERS]) + para(peak)
    notes = "".join(para(s) for s in wording.io_notes(io))
    return section("io", "I/O (sampled)", tab + chart + notes + reasons)


def _peak(values: Sequence[float | None]) -> float | None:
    return max((v for v in values if v is not None), default=None)


#: Above this many processes in a role, the RSS chart draws the role's envelope (its lowest and
#: highest process, column by column) and its largest process instead of a band per process: a
#: thousand bands cannot be told apart, and each weighs about 15 kB of the page.
RSS_BANDS_PER_ROLE = 8


def _rss_band(m: ProcessMemory, colour: str) -> svg.Band:
    assert m.rss is not None
    tip = f"{m.label}: peak {fmt.size(m.peak_bytes)}"
    if m.peak_at_ns is not None:
        tip += f" at {fmt.moment(m.peak_at_ns)}"
    return svg.Band(m.label, m.rss, colour, tip, group=f"rss:{m.role}")


def rss_bands(memory: Memory, colours: dict[str, str]) -> tuple[list[svg.Band], list[str]]:
    """The RSS chart's bands, and the roles drawn as an envelope."""
    by_role: dict[str, list[ProcessMemory]] = {}
    for m in memory.members:
        if m.rss is not None:
            by_role.setdefault(m.role, []).append(m)
    bands: list[svg.Band] = []
    enveloped: list[str] = []
    for role, members in by_role.items():
        envelope = None
        if len(members) > RSS_BANDS_PER_ROLE:
            envelope = series.envelope([m.rss for m in members if m.rss is not None])
        if envelope is None:
            bands += [_rss_band(m, colours[role]) for m in members]
            continue
        label = f"{fmt.printable(role)}  x{len(members)}"
        tip = f"{label}: from its lowest to its highest process, {fmt.size(max(m.peak_bytes for m in members))} at most"
        bands.append(svg.Band(label, envelope, colours[role], tip, group=f"rss:{role}"))
        bands.append(_rss_band(max(members, key=lambda m: m.peak_bytes), colours[role]))
        enveloped.append(label)
    return bands, enveloped


def memory_html(memory: Memory, header: Header | None) -> str:
    if not memory.roles:
        reasons = _reasons(((r.reason, r.processes) for r in memory.reasons), memory.processes)
        return section("memory", "Memory (RSS, sampled)", reasons or para("not measured: no RSS could be read"))
    rows = [
        f'<tr data-role="{escape(r.role, quote=True)}">{td(fmt.printable(r.role) + f"  x{r.processes}", cls="name")}'
        f"{td(fmt.size(r.peak_bytes), r.peak_bytes)}"
        f"{td(fmt.byte_change_per_hour(r.trend_bytes_per_s), r.trend_bytes_per_s)}</tr>"
        for r in memory.roles
    ]
    if memory.total_bins:
        rows.append(f'<tr data-key="all">{td("all processes (PSS)", cls="name")}'
                    f"{td(fmt.size(max(memory.total_bins)), max(memory.total_bins))}{td('')}</tr>")
    tab = table("memory", ("", "peak", "trend"), rows)
    chart = ""
    colours = {r.role: svg.colour(i) for i, r in enumerate(memory.roles)}
    bands, enveloped = rss_bands(memory, colours)
    if bands and header is not None:
        toggles = '<div class="toggles">' + "".join(
            f'<label><input type="checkbox" checked data-toggle="rss:{escape(r, quote=True)}"> {name(r)}</label>'
            for r in colours
        ) + "</div>"
        chart = toggles + svg.over_time("rss", bands, "RSS per process over time", start_ns=header.start_ns,
                                        runtime_ns=header.runtime_ns, unit=fmt.size)
        chart += svg.legend([(fmt.printable(r), c) for r, c in colours.items()])
        if enveloped:
            chart += para(f"Drawn as one band from the lowest to the highest process, with the largest process on "
                          f"its own: {', '.join(enveloped)} (more than {RSS_BANDS_PER_ROLE} processes).")
    notes = para(wording.largest_text(memory)) + para(wording.memory_trend_note(memory))
    return section("memory", "Memory (RSS, sampled)", tab + chart + notes)


def gpu_html(gpu: GpuSummary, header: Header | None) -> str:
    if not gpu.nvml_available and gpu.vram_allocated_peak is None:
        return section("gpu", "GPU", para(f"absent: {fmt.printable(gpu.nvml_reason or '')}"))
    body = []
    if not gpu.nvml_available:
        body.append(para(f"utilisation not measured: {fmt.printable(gpu.nvml_reason or '')}"))
    elif not gpu.devices:
        body.append(para("utilisation not measured: NVML was available but no sample was recorded"))
    else:
        hosts = len({d.host for d in gpu.devices})
        rows = []
        for d in gpu.devices:
            label = wording.gpu_device_label(d.host, d.index, hosts)
            rows.append(
                f'<tr data-device="{escape(label, quote=True)}">{td(label, cls="name")}'
                f"{td(fmt.percent(_fraction(d.busy)), d.busy)}{td(fmt.percent(_fraction(d.this_run)), d.this_run)}"
                f"{td(fmt.percent(_fraction(d.idle)), d.idle)}{td(fmt.printable(d.name or ''))}</tr>"
            )
        body.append(table("gpu", ("", "busy", "this run", "idle", "device"), rows))
        for d in gpu.devices:
            bands = []
            if d.busy_series is not None:
                tip = f"busy (any process): mean {fmt.percent(_fraction(d.busy))}"
                bands.append(svg.Band("busy", d.busy_series, "#9c755f", tip))
            if d.this_run_series is not None:
                bands.append(svg.Band("this run", d.this_run_series, "#59a14f",
                                      f"this run: mean {fmt.percent(_fraction(d.this_run))}"))
            if bands and header is not None:
                body.append(f"<h3>{escape(wording.gpu_device_label(d.host, d.index, hosts))}: busy vs this run</h3>")
                body.append(svg.over_time("gpu", bands, "GPU busy and this run over time", start_ns=header.start_ns,
                                          runtime_ns=header.runtime_ns, unit=lambda v: fmt.percent(v / 100),
                                          fixed_top=100.0, height=140))
                body.append(svg.legend([(b.label, b.colour) for b in bands]))
    if gpu.vram_allocated_peak is not None:
        for label, peak, total in (("VRAM allocated (peak)", gpu.vram_allocated_peak, gpu.vram_allocated_sum),
                                   ("VRAM reserved (peak)", gpu.vram_reserved_peak, gpu.vram_reserved_sum)):
            line = f"{label} {fmt.size(peak)}"
            if gpu.vram_processes > 1 and total is not None:
                line += f": largest of {gpu.vram_processes} processes; {fmt.size(total)} summed"
            body.append(para(line))
    else:
        body.append(para(f"VRAM not measured: {fmt.printable(gpu.vram_reason or '')}"))
    body.extend(para(n) for n in wording.gpu_notes(gpu))
    return section("gpu", "GPU", "".join(body))


def _fraction(percent: float | None) -> float | None:
    return None if percent is None else percent / 100.0


def lanes_html(lanes: Sequence[Lane], header: Header | None) -> str:
    if not lanes or header is None:
        return ""
    paths = sorted({s.path for lane in lanes for s in lane.spans})
    colours = {p: svg.colour(i) for i, p in enumerate(paths)}
    rows = [
        (lane.process.label, [(s.start_ns - header.start_ns, s.end_ns - header.start_ns, s.path,
                               f"{fmt.printable(s.path)}: {fmt.duration(s.end_ns - s.start_ns)}") for s in lane.spans])
        for lane in lanes
    ]
    chart = svg.lanes("lanes", rows, "phases open per process over time", runtime_ns=header.runtime_ns,
                      colours=colours)
    legend = svg.legend([(fmt.printable(p), c) for p, c in colours.items()])
    return section("timeline", "Phases over time", chart + legend)


__all__ = [
    "alerts_html",
    "counters_html",
    "dominant_html",
    "gpu_html",
    "header_html",
    "io_by_phase_html",
    "io_html",
    "iterations_html",
    "lanes_html",
    "memory_html",
    "roles_html",
]
