"""``lineprofiler compare A B``: two runs side by side, per role and phase.

For each role and phase: the phase's share of the role's phase time (self time over the sum
of the role's self times) in A and B and its change in percentage points; p50 and p99 in A
and B and their relative change.

A p50/p99 change is marked real only beyond the histograms' bucket error. Each side's quantile
is a bucket midpoint within ``histogram.RELATIVE_ERROR`` (5.27 %) of a value really recorded,
so two runs whose true quantiles are nearly equal can still be reported one bucket apart: a
ratio of up to one bucket's width (2 ** (1/8), 9.05 %; 9.1 % for the buckets near 1 us, whose
edges are rounded to whole nanoseconds) in either direction. Changes within that band are printed but not marked, and so
is any change between two values below 1 us (the underflow bucket). The mark says nothing
about run-to-run noise: run twice to learn it.

The ``--json`` document (``kind`` ``"lineprofiler-compare"``, ``version`` 1):

``bucket_relative_error`` (float): the per-side error bound. ``real_change_above`` /
``real_change_below`` (float): relative changes beyond these are real (e.g. 0.0905 / -0.0830).

``a`` / ``b``: the ``run`` object of ``report --json``: ``run_dir``, ``run`` (display name),
``run_id``, ``attempt``, ``runtime_ns``, ``processes``, ``roles`` (role -> process count),
``superseded`` (names of attempts not merged), ``concurrent`` (names of other jobs overlapping
it in time, not merged), ``merged`` (names of the generated run ids merged into it by time),
``caveats`` (the CAVEATS lines merge derived).

``roles``: a list, one per role present on either side, each with ``role``,
``a_processes`` / ``b_processes`` (0 when absent), ``a_imbalance`` / ``b_imbalance`` (float or
null), ``a_busy_ns`` / ``b_busy_ns`` (summed busy time), ``a_off_cpu`` / ``b_off_cpu`` (the
same split over every phase of the role; null with ``a_off_cpu_reason`` / ``b_off_cpu_reason``),
and ``phases``: a list of

    ``path``; ``a`` / ``b``: null when the phase is absent on that side, else ``entries``,
    ``self_ns``, ``share`` (0..1), ``p50_ns``, ``p99_ns`` (float or null), ``off_cpu`` (the
    phase's and its children's thread-time: ``on_cpu_ns``, ``runqueue_ns``, ``throttled_ns``
    (null: the cgroup's counters were unreadable), ``blocked_ns``, ``sampled_ns``; null when
    not measured, with ``off_cpu_reason`` saying why);
    ``share_change`` (b - a, in fractions; null unless both sides have the phase);
    ``p50_change`` / ``p99_change`` (b / a - 1; null unless both sides have a value);
    ``p50_real`` / ``p99_real`` (bool: the change exceeds the bucket error).
"""

from __future__ import annotations

from typing import Any

from ...runfiles import histogram
from .. import format as fmt
from ..compute.blocks import RenderOptions
from ..compute.blocks.roles import header
from ..compute.cpu_use import RunCpu, from_files
from ..read.run import PhaseStats, RoleStats, Run
from ..wording import compare_attempt_notes, compare_off_cpu_line, short_names
from .json import run_object

E = histogram.RELATIVE_ERROR
#: The widest bucket (high edge over low edge). Edges are whole nanoseconds, so the narrow
#: buckets near 1 us are a little wider than 2 ** (1/8).
_WIDEST_BUCKET = max(histogram.EDGES[k] / histogram.EDGES[k - 1] for k in range(1, histogram.LAST_EDGE + 1))
#: Ratios b/a outside [REAL_LOW, REAL_HIGH] are beyond what the two sides' bucket errors allow:
#: true values closer than a bucket's width are reported at most one bucket apart.
REAL_HIGH = _WIDEST_BUCKET
REAL_LOW = 1.0 / REAL_HIGH
KIND = "lineprofiler-compare"
VERSION = 1
#: Rows per role in the text output (the JSON has every phase).
TEXT_ROWS = 20


def _side(run: Run) -> dict[str, Any]:
    """The same ``run`` object ``report --json`` carries."""
    return run_object(header(run, RenderOptions()), run.caveats)


def _off_cpu(cpu: RunCpu, role: RoleStats, path: str | None, processes: int | None = None) -> dict[str, Any]:
    """Why the threads of ``path`` (None: of every phase) were not running, over ``role``."""
    split, why = cpu.split(role.data_workers, path, processes)
    if split is None:
        return {"off_cpu": None, "off_cpu_reason": why}
    return {
        "off_cpu": {
            "on_cpu_ns": split.on_cpu_ns,
            "runqueue_ns": split.runqueue_ns,
            "throttled_ns": split.throttled_ns,
            "blocked_ns": split.blocked_ns,
            "sampled_ns": split.sampled_ns,
        },
        "off_cpu_reason": None,
    }


def _phase_side(phase: PhaseStats | None, total: int, role: RoleStats | None, cpu: RunCpu) -> dict[str, Any] | None:
    """One side of a phase's row; ``total`` is its role's phase time on that side."""
    if phase is None or role is None:
        return None
    return {
        "entries": phase.entries,
        "self_ns": phase.self_ns,
        "share": max(0, phase.self_ns) / total if total > 0 else 0.0,
        "p50_ns": phase.quantile(0.50),
        "p99_ns": phase.quantile(0.99),
        **_off_cpu(cpu, role, phase.path, phase.processes),
    }


def _role_off_cpu(key: str, role: RoleStats | None, cpu: RunCpu) -> dict[str, Any]:
    if role is None:
        return {f"{key}_off_cpu": None, f"{key}_off_cpu_reason": "the role is not in this run"}
    split = _off_cpu(cpu, role, None)
    return {f"{key}_off_cpu": split["off_cpu"], f"{key}_off_cpu_reason": split["off_cpu_reason"]}


def _get(side: dict[str, Any] | None, key: str) -> Any:
    return None if side is None else side[key]


def _share(row: dict[str, Any]) -> float:
    return max(_get(row["a"], "share") or 0.0, _get(row["b"], "share") or 0.0)


def _change(a: float | None, b: float | None) -> tuple[float | None, bool]:
    if a is None or b is None or a <= 0:
        return None, False
    ratio = b / a
    if max(a, b) < histogram.EDGES[0]:
        # Both below the first edge (1 us): the underflow bucket cannot tell them apart.
        return ratio - 1.0, False
    return ratio - 1.0, ratio > REAL_HIGH or ratio < REAL_LOW


def compare_runs(a: Run, b: Run) -> dict[str, Any]:
    """The comparison as one JSON-ready document (keys in this module's docstring)."""
    names = list(a.roles) + [n for n in b.roles if n not in a.roles]
    # The samples are read when a phase's split is first asked for, once per process.
    cpu_a, cpu_b = from_files(a), from_files(b)
    roles = []
    for name in names:
        ra, rb = a.roles.get(name), b.roles.get(name)
        paths = set(ra.phases if ra else ()) | set(rb.phases if rb else ())
        # Once per role, not per phase: the report stays linear in the number of phases.
        total_a = ra.phase_time_ns if ra else 0
        total_b = rb.phase_time_ns if rb else 0
        phases = []
        for path in paths:
            pa = ra.phases.get(path) if ra else None
            pb = rb.phases.get(path) if rb else None
            sa, sb = _phase_side(pa, total_a, ra, cpu_a), _phase_side(pb, total_b, rb, cpu_b)
            p50_change, p50_real = _change(_get(sa, "p50_ns"), _get(sb, "p50_ns"))
            p99_change, p99_real = _change(_get(sa, "p99_ns"), _get(sb, "p99_ns"))
            phases.append(
                {
                    "path": path,
                    "a": sa,
                    "b": sb,
                    "share_change": sb["share"] - sa["share"] if sa and sb else None,
                    "p50_change": p50_change,
                    "p50_real": p50_real,
                    "p99_change": p99_change,
                    "p99_real": p99_real,
                }
            )
        phases.sort(key=lambda row: (-_share(row), str(row["path"])))
        roles.append(
            {
                "role": name,
                # forked, not profiled: not processes of the role (the report says so)
                "a_processes": len(ra.workers) - len(ra.unprofiled_workers) if ra else 0,
                "b_processes": len(rb.workers) - len(rb.unprofiled_workers) if rb else 0,
                "a_imbalance": ra.imbalance if ra else None,
                "b_imbalance": rb.imbalance if rb else None,
                "a_busy_ns": ra.busy_ns if ra else 0,
                "b_busy_ns": rb.busy_ns if rb else 0,
                **_role_off_cpu("a", ra, cpu_a),
                **_role_off_cpu("b", rb, cpu_b),
                "phases": phases,
            }
        )
    return {
        "kind": KIND,
        "version": VERSION,
        "bucket_relative_error": E,
        "real_change_above": REAL_HIGH - 1.0,
        "real_change_below": REAL_LOW - 1.0,
        "a": _side(a),
        "b": _side(b),
        "roles": roles,
    }


def render_compare(doc: dict[str, Any]) -> str:
    """The comparison document as text."""
    lines = []
    for key in ("a", "b"):
        side = doc[key]
        label = "COMPARE  " if key == "a" else "         "
        lines.append(
            f"{label}{key.upper()}  {fmt.printable(side['run_dir'])}  run {fmt.printable(side['run'])}, "
            f"{fmt.duration(side['runtime_ns'])}, {side['processes']} processes"
        )
    lines.append(
        f"p50/p99 changes are marked * only beyond the histograms' bucket error: each side is within "
        f"\u00b1{fmt.percent(E)} (one bucket),"
    )
    lines.append(
        f"so changes between {fmt.signed_percent(doc['real_change_below'])} and "
        f"{fmt.signed_percent(doc['real_change_above'])} "
        f"are not marked: they may be bucket rounding, not a change."
    )
    head = (
        f"{'phase':<28}{'share A':>8}{'share B':>9}{'change':>9}{'p50 A':>10}{'p50 B':>9}{'change':>10}"
        f"{'p99 A':>11}{'p99 B':>9}{'change':>10}"
    )
    for role in doc["roles"]:
        lines.append("")
        about = []
        for key in ("a", "b"):
            n = role[f"{key}_processes"]
            imbalance = role[f"{key}_imbalance"]
            about.append(
                f"{key.upper()} {n} process{'es' if n != 1 else ''}"
                + (f", imbalance {fmt.ratio(imbalance)}" if n else "")
            )
        lines.append(f"{fmt.printable(role['role'].upper())}  ({'; '.join(about)})")
        lines.append("\u2500" * len(head))
        lines.append(head)
        rows = [r for r in role["phases"] if (r["a"] and r["a"]["self_ns"] > 0) or (r["b"] and r["b"]["self_ns"] > 0)]
        names = short_names([r["path"] for r in rows])
        for row in rows[:TEXT_ROWS]:
            sa, sb = row["a"], row["b"]
            p50 = f"{fmt.signed_percent(row['p50_change'])}{' *' if row['p50_real'] else '  '}"
            p99 = f"{fmt.signed_percent(row['p99_change'])}{' *' if row['p99_real'] else '  '}"
            lines.append(
                f"{fmt.clip_left(fmt.printable(names[row['path']]), 27):<28}"
                f"{fmt.percent(sa and sa['share']):>8}{fmt.percent(sb and sb['share']):>9}"
                f"{fmt.points(row['share_change']):>9}"
                f"{fmt.duration(sa and sa['p50_ns']):>10}{fmt.duration(sb and sb['p50_ns']):>9}{p50:>12}"
                f"{fmt.duration(sa and sa['p99_ns']):>9}{fmt.duration(sb and sb['p99_ns']):>9}{p99:>12}"
            )
        if len(rows) > TEXT_ROWS:
            lines.append(f"({fmt.count(len(rows) - TEXT_ROWS)} more phases; --json lists every one)")
        if not rows:
            lines.append("(no time recorded in phases on either side)")
        off_cpu = compare_off_cpu_line(role)
        if off_cpu:
            lines.append(off_cpu)
    notes = []
    for key in ("a", "b"):
        side = doc[key]
        notes.extend(compare_attempt_notes(key, side))
        if side["caveats"]:
            notes.append(
                f"{key.upper()}: {len(side['caveats'])} caveat(s); `lineprofiler report {side['run_dir']}` lists them"
            )
    if notes:
        lines.append("")
        lines.append("NOTES")
        lines.extend(f"  - {fmt.printable(n)}" for n in notes)
    return "\n".join(line.rstrip() for line in lines)
