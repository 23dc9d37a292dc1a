"""The findings: one sentence each, with the figures it came from, ranked by what it cost the run.

What a finding claims it must show: a process "set the run's length" only for the time the
critical path spent in it; a thread that was off-CPU is "waiting" only where a ``wait_on`` link
names what for, and otherwise its cause is said to be unknown (being blocked is not being a
queue: a sleep, a lock or a disk read look the same from outside), unless its process measured
why its threads were not running (:mod:`.waits`: waiting for a CPU, throttled, blocked). A
finding whose cost cannot be measured says "unknown" and ranks last.

One finding per (process, phase): a phase on the critical path that was also mostly off-CPU is
one finding (the off-CPU one, which says its time on the path too), not two. Each finding says
which part of its cost someone can remove (``removable_ns``, what ``--fail-over`` gates on): the
time others waited for a process on the path, a late wake-up, a late arrival at a collective,
off-CPU time on the path; a process that is on the path because it is the only one, running its
own phases, is where the time went, not a cost to remove.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ... import format as fmt
from ..cpu_use import RunCpu
from .model import CriticalPath, Finding, SkewPhase
from .spans import WorkerTrace
from .waits import BLOCKED_FROM, CPU_WAIT_FROM, measured_finding, split_of

#: Path shares of at least this much of the run are findings.
PATH_SHARE_FROM = 0.05
#: A phase off-CPU for at least this share of its wall time (:data:`.waits.BLOCKED_FROM`), and at
#: least this share of the run.
BLOCKED_RUN_SHARE = 0.05
#: At most this many findings of each kind.
PER_KIND = 5


def _pct(fraction: float | None) -> str:
    return fmt.percent(fraction)


def findings(
    traces: Sequence[WorkerTrace],
    path: CriticalPath | None,
    skews: Sequence[SkewPhase],
    run_ns: int,
    cpu: RunCpu | None = None,
) -> list[Finding]:
    """``cpu``: what each process measured of why its threads waited (None: nothing)."""
    out: list[Finding] = []
    if path is not None:
        out.extend(_path_findings(traces, path, run_ns))
    out = _one_per_phase(out, _blocked_findings(traces, path, run_ns, cpu))
    out.extend(_skew_findings(traces, skews, run_ns))
    for finding in out:
        if finding.removable_ns is not None and run_ns > 0:
            finding.removable_fraction = finding.removable_ns / run_ns
    out.sort(key=lambda f: (f.cost_ns is None, -(f.cost_ns or 0)))
    return out


def _path_findings(traces: Sequence[WorkerTrace], path: CriticalPath, run_ns: int) -> list[Finding]:
    out: list[Finding] = []
    # Where the path came from each process: the channels its signals were followed on.
    channels: dict[int, Counter[str]] = {}
    for before, after in zip(path.segments, path.segments[1:], strict=False):
        if after.kind == "wake" and after.channel is not None and before.process != after.process:
            channels.setdefault(before.process, Counter())[after.channel] += 1
    for share in path.shares[:PER_KIND]:
        if share.fraction < PATH_SHARE_FROM:
            break
        trace = traces[share.process]
        phase = fmt.printable(share.phase) if share.phase else "no phase"
        fed = channels.get(share.process)
        via = ""
        figures: dict[str, float | int | str | None] = {
            "path_ns": share.duration_ns, "run_ns": run_ns, "phase": share.phase, "pid": trace.worker.pid
        }
        if fed:
            name, count = fed.most_common(1)[0]
            via = f"; {_woke(count, name)}"
            figures["channel"], figures["signals"] = name, count
        out.append(
            Finding(
                kind="critical_path",
                text=(
                    f"{trace.worker.label} set {_pct(share.fraction)} of the run's length: "
                    f"{fmt.duration(share.duration_ns)} of {fmt.duration(run_ns)} on the critical path, in {phase}{via}"
                ),
                cost_ns=share.duration_ns,
                cost_fraction=share.fraction,
                process=share.process,
                figures=figures,
                # The next process on the path waited for this one: a faster or wider feeder removes it.
                removable_ns=share.duration_ns if fed else None,
            )
        )
    wake = [s for s in path.segments if s.kind == "wake"]
    wake_ns = sum(s.duration_ns for s in wake)
    if wake and run_ns > 0 and wake_ns / run_ns >= PATH_SHARE_FROM:
        out.append(
            Finding(
                kind="wake_latency",
                text=(
                    f"waking up after a signal took {fmt.duration(wake_ns)} of the critical path "
                    f"({_pct(wake_ns / run_ns)} of the run) over {len(wake)} wait(s)"
                ),
                cost_ns=wake_ns,
                cost_fraction=wake_ns / run_ns,
                figures={"wake_ns": wake_ns, "waits": len(wake), "run_ns": run_ns},
                removable_ns=wake_ns,
            )
        )
    return out


def _woke(count: object, channel: object) -> str:
    return f"{count} of its signal(s) on {fmt.printable(str(channel))!r} woke the next process on the path"


def _one_per_phase(on_path: list[Finding], blocked: list[Finding]) -> list[Finding]:
    """One finding per (process, phase): a phase on the critical path that was mostly off-CPU is
    its off-CPU finding (which gives its time on the path), told which process it woke, and with
    the larger of the two removable costs."""
    twins = {(f.process, f.figures["phase"]): f for f in on_path if f.kind == "critical_path"}
    for finding in blocked:
        twin = twins.get((finding.process, finding.figures["phase"]))
        if twin is None:
            continue
        on_path.remove(twin)
        if "channel" in twin.figures:
            finding.text += f"; {_woke(twin.figures['signals'], twin.figures['channel'])}"
            finding.figures["channel"], finding.figures["signals"] = twin.figures["channel"], twin.figures["signals"]
        if twin.removable_ns is not None:
            finding.removable_ns = max(finding.removable_ns or 0, twin.removable_ns)
    return on_path + blocked


def _on_path_ns(path: CriticalPath | None, process: int, phase: str) -> int:
    """The time ``process`` spent in ``phase`` (or below it) on the critical path: from the path's
    shares, which split each running segment by the spans in it, as the path's own lines show it
    (a segment is named after one phase only)."""
    if path is None:
        return 0
    return sum(
        s.duration_ns
        for s in path.shares
        if s.process == process and s.phase is not None and (s.phase == phase or s.phase.startswith(phase + "/"))
    )


def _blocked_findings(
    traces: Sequence[WorkerTrace], path: CriticalPath | None, run_ns: int, cpu: RunCpu | None
) -> list[Finding]:
    found: list[Finding] = []
    for trace in traces:
        found.extend(_deepest(_blocked_phases(trace, path, run_ns, cpu)))
    found.sort(key=lambda f: (-(f.cost_ns or 0), -float(f.figures["wall_ns"] or 0)))
    return found[:PER_KIND]


def _deepest(candidates: list[Finding]) -> list[Finding]:
    """Of nested phases that were all off-CPU, the innermost: it says more, and counts once."""
    names = [str(f.figures["phase"]) for f in candidates]
    return [f for f, name in zip(candidates, names, strict=True) if not any(n.startswith(name + "/") for n in names)]


def _blocked_phases(trace: WorkerTrace, path: CriticalPath | None, run_ns: int, cpu: RunCpu | None) -> list[Finding]:
    found: list[Finding] = []
    # A wait tells about the phase it was made in, and about the one that had just closed before
    # it (the get had a phase of its own, and wait_on came right after it returned).
    linked = {trace.phase_name(link.phase_id) for link in trace.links if link.kind == "wait"}
    linked |= {trace.phase_name(link.after_phase_id) for link in trace.links if link.after_phase_id >= 0}
    for phase in trace.worker.document["phases"]:
        wall, cpu_ns = phase["wall_ns"], phase.get("cpu_ns")
        if cpu_ns is None or wall <= 0 or run_ns <= 0 or wall / run_ns < BLOCKED_RUN_SHARE:
            continue
        off = max(0, wall - cpu_ns) / wall
        name = phase["path"]
        if off < CPU_WAIT_FROM:
            continue  # mostly on a CPU: neither a CPU wait nor a sleep worth a finding
        has_link = any(p is not None and (p == name or p.startswith(name + "/")) for p in linked)
        split = split_of(cpu, trace, name)
        if split is not None:
            on_path = _on_path_ns(path, trace.index, name)
            host = cpu.host(trace.worker.host) if cpu is not None else None
            measured = measured_finding(
                trace, name, wall=wall, cpu_ns=cpu_ns, split=split, linked=has_link, on_path=on_path, run_ns=run_ns,
                host=host,
            )
            if measured is not None:
                found.append(measured)
            continue
        if off <= BLOCKED_FROM:
            continue
        if has_link:
            continue  # a wait_on link says what it waited for: the path and its findings tell
        on_path = _on_path_ns(path, trace.index, name)
        where = (
            f"it was on the critical path for {fmt.duration(on_path)}" if on_path else "it was not on the critical path"
        )
        found.append(
            Finding(
                kind="blocked_unknown",
                text=(
                    f"{trace.worker.label} was off-CPU for {_pct(off)} of {fmt.printable(name)} "
                    f"({fmt.duration(wall - cpu_ns)} of {fmt.duration(wall)} wall, CPU {fmt.duration(cpu_ns)}); "
                    f"what it waited on is unknown (no wait_on link was recorded in it); {where}"
                ),
                cost_ns=on_path,
                cost_fraction=on_path / run_ns,
                process=trace.index,
                figures={"wall_ns": wall, "cpu_ns": cpu_ns, "off_cpu": off, "on_path_ns": on_path, "phase": name},
                # Its off-CPU share of its time on the path: the wait that, removed, shortens the run.
                removable_ns=round(off * on_path) if on_path else None,
            )
        )
    return found


def _skew_findings(traces: Sequence[WorkerTrace], skews: Sequence[SkewPhase], run_ns: int) -> list[Finding]:
    out: list[Finding] = []
    for row in skews:
        if row.straggler_process is None or row.steps == 0:
            continue
        trace = traces[row.straggler_process]
        figures: dict[str, float | int | str | None] = {
            "steps": row.steps,
            "straggler_steps": row.straggler_steps,
            "late_ns": row.late_ns,
            "mean_spread_ns": row.mean_spread_ns,
            "uncertainty_ns": row.uncertainty_ns,
            "phase": row.phase,
        }
        if row.uncertainty_ns is None or row.mean_spread_ns <= row.uncertainty_ns:
            bound = "unbounded" if row.uncertainty_ns is None else fmt.duration(row.uncertainty_ns)
            out.append(
                Finding(
                    kind="skew",
                    text=(
                        f"who arrives last at {fmt.printable(row.phase)} is unknown: the arrivals of "
                        f"{row.ranks} ranks spread {fmt.duration(row.mean_spread_ns)} a step, within the hosts' "
                        f"clock uncertainty ({bound})"
                    ),
                    cost_ns=None,
                    cost_fraction=None,
                    figures=figures,
                )
            )
            continue
        share = row.late_ns / run_ns if run_ns else None
        out.append(
            Finding(
                kind="skew",
                text=(
                    f"rank {row.straggler_rank} ({trace.worker.label}) arrived last at {fmt.printable(row.phase)} "
                    f"in {row.straggler_steps} of {row.steps} steps; the last arrival came "
                    f"{fmt.duration(row.late_ns)} after the median one in all ({_pct(share)} "
                    f"of the run), {fmt.duration(row.mean_spread_ns)} first-to-last a step"
                ),
                cost_ns=row.late_ns,
                cost_fraction=share,
                process=row.straggler_process,
                figures=figures,
                removable_ns=row.late_ns,
            )
        )
    return out
