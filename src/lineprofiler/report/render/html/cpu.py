"""The HTML page's CPU: the off-CPU split of each DOMINANT PHASES row, drawn as one small stacked
bar (on CPU, cpu queue, throttled, blocked), and the CPU section (cores used against the CPUs
there were, per host and role). The words are the text report's (:mod:`..cpu_text`)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ... import format as fmt
from ...model import DominantPhase
from ...model_cpu import CpuBlock, OffCpuSplit
from .. import cpu_text
from . import svg
from .markup import name, para, section, table, td

#: The split's parts' colours: on CPU green, the CPU queue orange, throttled red, blocked grey.
COLOURS = {"on_cpu_ns": "#59a14f", "runqueue_ns": "#f28e2b", "throttled_ns": "#e15759", "blocked_ns": "#9aa3ae"}
BAR_WIDTH = 96
BAR_HEIGHT = 12


def split_bar(split: OffCpuSplit) -> str:
    """One stacked bar of the split's four parts (a part not measured is left out)."""
    body = []
    x = 0.0
    for key, label in cpu_text.PARTS:
        share = split.share(getattr(split, key))
        if not share:
            continue
        width = BAR_WIDTH * share
        part = fmt.duration(getattr(split, key))
        tip = f"{label}: {fmt.percent(share, 0)} ({part} of {fmt.duration(split.sampled_ns)})"
        body.append(svg.mark("rect", tip, x=x, y=0, width=width, height=BAR_HEIGHT, fill=COLOURS[key]))
        x += width
    return svg.chart("off-cpu", BAR_WIDTH, BAR_HEIGHT, body, f"off-CPU split: {cpu_text.split_words(split)}")


def split_cell(phase: DominantPhase) -> str:
    """The row's ``waited`` cell: the bar (sorted by the cpu queue's share), or why not measured."""
    split = phase.off_cpu
    if split is None:
        return f'<td data-v="" data-tip="{escape(cpu_text.row_words(phase), quote=True)}">n/a</td>'
    queue = split.share(split.runqueue_ns) or 0.0
    tip = escape(cpu_text.split_words(split), quote=True)
    return f'<td class="bar" data-v="{queue:.4f}" data-tip="{tip}">{split_bar(split)}</td>'


def split_legend(phases: Sequence[DominantPhase]) -> str:
    """The bars' legend and how the split was measured."""
    items = [(label, COLOURS[key]) for key, label in cpu_text.PARTS]
    return svg.legend(items) + para(cpu_text.split_note(phases))


def _cpus(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def cpu_html(block: CpuBlock) -> str:
    """CPU: per host, its CPUs and what the run used, with a row per role under it."""
    rows = []
    for host in block.hosts:
        key = f'data-host="{escape(host.host, quote=True)}"'
        rows.append(
            f"<tbody><tr {key}>{td(fmt.printable(host.host), cls='name')}"
            f"{td(_cpus(host.capacity_cpus), host.capacity_cpus)}{td(_cpus(host.affinity), host.affinity)}"
            f"{td(_cpus(host.online), host.online)}{td(_cpus(host.quota_cpus), host.quota_cpus)}"
            f"{td(fmt.count(host.processes), host.processes)}{td(cpu_text.cores(host.cores_used), host.cores_used)}"
            f"{td(fmt.count(host.threads_max), host.threads_max)}</tr>"
            + "".join(
                f'<tr class="sub" data-role="{escape(r.role, quote=True)}"><td class="name">{name(r.role)}</td>'
                f"<td></td><td></td><td></td><td></td>{td(fmt.count(r.processes), r.processes)}"
                f"{td(cpu_text.cores(r.cores_per_process) + ' each', r.cores_per_process)}"
                f"{td(fmt.count(r.threads_max), r.threads_max)}</tr>"
                for r in host.roles
            )
            + "</tbody>"
        )
    columns = ("host / role", "CPUs", "affinity", "online", "quota", "processes", "cores used", "threads")
    tab = table("cpu", columns, rows, groups=True)
    notes = [
        para(
            "CPUs: what the run could use, the most CPUs any process's affinity allowed (else the CPUs online), "
            "lowered to the cgroup's quota. Cores used: a host's processes' CPU time (every thread's) over the "
            "host's span of the run; a role's, one process's CPU time over its lifetime. Threads: each "
            "process's most at once, summed."
        )
    ]
    notes += [para(f"not measured in {fmt.count(r.processes)}: {fmt.printable(r.reason)}") for r in block.reasons]
    notes += [para(line.strip()) for line in cpu_text.split_reasons(block)]
    return section("cpu", "CPU", tab + "".join(notes))


__all__ = ["COLOURS", "cpu_html", "split_bar", "split_cell", "split_legend"]
