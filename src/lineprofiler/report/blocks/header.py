"""The header's model: the run's name, span, processes, hosts and ranks, and the attempts it
names without merging them (superseded, concurrent, merged by time)."""

from __future__ import annotations

from ..model import Attempt, Header
from ..run import AttemptSummary, Run
from . import RenderOptions


def attempt(summary: AttemptSummary) -> Attempt:
    """An attempt the header names, as the model holds it."""
    return Attempt(
        name=summary.name,
        run_id=summary.run_id,
        attempt=summary.attempt,
        files=summary.files,
        roles=dict(sorted(summary.roles.items())),
        start_ns=summary.start_ns,
        end_ns=summary.end_ns,
        span_ns=summary.span_ns,
        status=summary.status,
        merged=list(summary.merged),
    )


def header(run: Run, options: RenderOptions) -> Header:
    return Header(
        run_dir=str(run.run_dir),
        run=run.name,
        run_id=run.run_id,
        attempt=run.attempt,
        runtime_ns=run.runtime_ns,
        start_ns=run.start_ns,
        end_ns=run.end_ns,
        processes=len(run.workers),
        roles={role.name: len(role.workers) - len(role.unprofiled_workers) for role in run.roles.values()},
        hosts=run.hosts,
        ranks=run.ranks,
        job_ids=run.job_ids,
        launchers=sorted({w.launcher for w in run.workers if w.launcher}),
        superseded=[attempt(a) for a in run.superseded],
        concurrent=[attempt(a) for a in run.concurrent],
        merged=[attempt(a) for a in run.merged],
        status=run.status,
        newest=attempt(run.newest) if run.newest is not None else None,
        unprofiled={role.name: n for role in run.roles.values() if (n := len(role.unprofiled_workers))},
    )
