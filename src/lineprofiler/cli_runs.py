"""The commands over run directories: ``report``, ``trace``, ``compare`` and ``export``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .cli_output import EXIT_FAIL_OVER, EXIT_OK, PROG, emit, output_format, print_line, progress_for, write


def report_command(args: argparse.Namespace) -> int:
    from .report.compute.blocks import RenderOptions
    from .report.compute.build import build_report
    from .report.read.merge import load_run
    from .report.render import render

    if args.lines_html is not None:
        return sampled_lines_page_command(args)
    fmt, path = output_format(args, os.path.join(args.run_dir, "report.html"))
    progress = progress_for(args)
    try:
        run = load_run(args.run_dir, no_samples=args.no_samples, attempt=args.attempt, progress=progress)
        options = RenderOptions(no_samples=args.no_samples, lines=args.lines, lines_top=args.lines_top)
        progress.update(f"building the report of {len(run.workers)} workers")
        report = build_report(run, options)
    finally:
        progress.close()
    emit(fmt, path, render(report, fmt, caveats=run.caveats))
    return _gate(getattr(report, "story", None), args.fail_over)


def sampled_lines_page_command(args: argparse.Namespace) -> int:
    """``report RUN --lines-html [PATH]``: the sampled lines as annotated source per role and
    phase. A run none of whose processes sampled a line is bad input: one line, status 2."""
    from .report.compute.blocks import RenderOptions
    from .report.compute.blocks.sampled_lines import sampled_lines_block
    from .report.read.merge import ReportError, load_run
    from .report.render.html.sampled_source import render_sampled_source

    given = [name for name, value in (("-o", args.output), ("--format", args.format)) if value is not None]
    if args.fail_over is not None:
        given.append("--fail-over")
    if given:
        raise ReportError(f"--lines-html writes only its page (--lines-html PATH names it): drop {', '.join(given)}")
    path = args.lines_html or os.path.join(args.run_dir, "sampled-lines.html")
    progress = progress_for(args)
    try:
        run = load_run(args.run_dir, no_samples=True, attempt=args.attempt, progress=progress)
        progress.update(f"merging the sampled lines of {len(run.workers)} workers")
        options = RenderOptions(no_samples=True, lines=True)
        block = sampled_lines_block(run, options, every_line=True)
    finally:
        progress.close()
    if block is None:
        raise ReportError(
            f"{args.run_dir}: no process of this run sampled lines (Profiler(line_sampling=0.02) or "
            "LINEPROFILER_LINE_SAMPLING=0.02 turns it on): no page written"
        )
    if not block.roles:
        more = f" (and {len(block.unreadable) - 1} more)" if len(block.unreadable) > 1 else ""
        raise ReportError(f"no line_sampling section could be read: {block.unreadable[0]}{more}")
    if not any(role.phases for role in block.roles):
        windows = sum(role.windows for role in block.roles)
        raise ReportError(
            f"{args.run_dir}: {windows:,} sampled windows, but no line of the project ran inside them: no page written"
        )
    title = f"lineprofiler: sampled lines of {run.name}"
    print_line(write(path, render_sampled_source(block, title=title, caveats=[*run.caveats, *options.caveats]), "html"))
    return EXIT_OK


def _gate(story: Any, fail_over: float | None) -> int:
    """``--fail-over``: after the report is written, the status it asks for, with one line on
    stderr per finding whose removable cost is over it. Only a cost someone can remove gates
    (``Finding.removable_ns``: others waiting for a process on the critical path, a late wake-up,
    a late arrival at a collective, off-CPU time on the path); a phase that is merely big never does."""
    if fail_over is None:
        return EXIT_OK
    if story is None:
        print_line(f"{PROG}: --fail-over: no worker of this run recorded a trace: no finding to gate", file=sys.stderr)
        return EXIT_OK
    over = [f for f in story.findings if f.removable_fraction is not None and f.removable_fraction * 100 > fail_over]
    for finding in over:
        print_line(
            f"{PROG}: a finding costs {finding.removable_fraction * 100:.1f}% of the run, over --fail-over "
            f"{fail_over:g}%: {finding.text}",
            file=sys.stderr,
        )
    return EXIT_FAIL_OVER if over else EXIT_OK


def trace_command(args: argparse.Namespace) -> int:
    from .report.compute.story.assemble import run_story
    from .report.read.merge import ReportError, load_run
    from .report.render import render

    fmt, path = output_format(args, os.path.join(args.run_dir, "trace.html"))
    if args.max_spans is not None and fmt == "text":
        # 0.10.0 drew the page by default: here --max-spans alone would change nothing, silently.
        raise ReportError("--max-spans N limits the spans of the HTML page: add --html (or -o PATH.html)")
    progress = progress_for(args)
    try:
        run = load_run(args.run_dir, no_samples=True, attempt=args.attempt, progress=progress)
        progress.update(f"reading the traces of {len(run.workers)} workers")
        result, caveats = run_story(run)
    finally:
        progress.close()
    text = render(result, fmt, caveats=caveats, title=f"lineprofiler trace: {run.name}", max_spans=args.max_spans)
    emit(fmt, path, text)
    return _gate(result, args.fail_over)


def compare_command(args: argparse.Namespace) -> int:
    from .report.read.merge import ReportError, load_run
    from .report.render import render
    from .report.render.compare import compare_runs

    fmt, out = output_format(args, None)
    runs = []
    progress = progress_for(args)
    try:
        for label, path, attempt in (("A", args.run_a, args.attempt_a), ("B", args.run_b, args.attempt_b)):
            try:
                runs.append(load_run(path, no_samples=True, attempt=attempt, progress=progress))
            except ReportError as error:
                raise ReportError(f"{label}: {error}") from None
        progress.update("comparing")
        document = compare_runs(*runs)
    finally:
        progress.close()
    emit(fmt, out, render(document, fmt))
    return EXIT_OK


def export_command(args: argparse.Namespace) -> int:
    from .report.read.merge import ReportError, load_run
    from .report.render import write
    from .report.render.perfetto import iter_trace_json

    progress = progress_for(args)
    try:
        run = load_run(args.run_dir, attempt=args.attempt, progress=progress)
        progress.update(f"writing the trace of {len(run.workers)} workers")
        # Written as it is made (into a temporary file renamed over the name, or into a FIFO or
        # a device): a traced run's spans are never held all at once.
        try:
            write(args.perfetto, iter_trace_json(run), "json")
        except OSError as error:
            raise ReportError(f"cannot write {args.perfetto}: {error.strerror or error}") from None
    finally:
        progress.close()
    print_line(args.perfetto)
    return EXIT_OK
