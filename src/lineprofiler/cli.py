"""The ``lineprofiler`` command: ``report``, ``compare``, ``export``, ``trace`` and ``top`` over run directories;
``run`` (a script or module, line-profiled), ``view`` (saved line profiles) and ``attach`` (a
running process, for a window).

Exit status: 0 when a report was printed (even with CAVEATS), 2 when nothing could be reported
or the command line was wrong, 1 for an internal error, 3 when ``--fail-over PCT`` found a finding
costing more than PCT % of the run (the report is written first). Errors are one line on stderr, never a
traceback (set ``LINEPROFILER_DEBUG=1`` to see one for an internal error).

Everything printed here goes through :func:`~lineprofiler._terminal.printable`, line by line:
the reports, the paths of the files written and the errors (which name run directories, files
and arguments) hold text from files and from the command line, whose control characters must
show as escapes, never act on the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Any, NoReturn

from . import __version__
from ._terminal import printable

PROG = "lineprofiler"
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
#: ``--fail-over``: a finding cost more than the given share of the run.
EXIT_FAIL_OVER = 3


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr, like every other error here."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _print_text(text: str, *, end: str = "\n") -> None:
    """A report on stdout, each of its lines escaped (text its renderer escaped is unchanged)."""
    print("\n".join(printable(line) for line in text.split("\n")), end=end)


def _print_line(text: str, *, file: IO[str] | None = None) -> None:
    """One line (a path written, an error): a newline inside it is shown escaped too."""
    print(printable(text), file=file)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description=(
            "Report on runs recorded by lineprofiler.accounting (report, compare); run a script line-profiled "
            "and read saved line profiles (run, view)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    report = commands.add_parser(
        "report",
        help="print the merged, role-grouped report of a run directory",
        description=(
            "Merge the worker files of the newest attempt under RUN_DIR/workers/ and print the report: "
            "roles, dominant phases with counters, iterations, resource blocks, caveats."
        ),
    )
    report.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (the Profiler's run_dir)")
    report.add_argument(
        "--no-samples",
        action="store_true",
        help="phases only: do not load resource samples and skip the blocks built from them (for large runs)",
    )
    _add_attempt_option(report, "report")
    report.add_argument(
        "--lines",
        action="store_true",
        help="add LINES: the top lines of each role from its backend=\"lines\" windows (RUN_DIR/lines/), "
        "hits and time summed over the role's processes",
    )
    report.add_argument(
        "--lines-top", type=_int_at_least(1), default=10, metavar="N", help="with --lines: N lines per role (10)"
    )
    report_output = report.add_mutually_exclusive_group()
    report_output.add_argument(
        "--html",
        nargs="?",
        const="",
        metavar="PATH",
        help="write the report as one self-contained HTML file (default RUN_DIR/report.html) and print its path",
    )
    report_output.add_argument(
        "--json", action="store_true", help="print the whole report as one JSON document (schema in docs/report.md)"
    )
    _add_format_options(report, "the report")
    _add_quiet_option(report)
    _add_fail_over_option(report)
    _add_trace_parser(commands)

    compare = commands.add_parser(
        "compare",
        help="compare two runs per role and phase: time share, p50 and p99",
        description=(
            "Compare run A with run B per role and phase: share of phase time, p50 and p99, with the change. "
            "p50/p99 changes are marked only beyond the histograms' bucket error."
        ),
    )
    compare.add_argument("run_a", metavar="A", help="the first (baseline) run directory")
    compare.add_argument("run_b", metavar="B", help="the second run directory")
    compare.add_argument("--attempt-a", metavar="ID", help="the attempt of A to compare (default: A's newest)")
    compare.add_argument("--attempt-b", metavar="ID", help="the attempt of B to compare (default: B's newest)")
    compare_output = compare.add_mutually_exclusive_group()
    compare_output.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    compare_output.add_argument(
        "--html", metavar="PATH", help="write the comparison as one self-contained HTML file and print its path"
    )
    _add_format_options(compare, "the comparison")
    _add_quiet_option(compare)

    export = commands.add_parser(
        "export",
        help="export a run for other viewers: a Chrome trace-event file for Perfetto",
        description=(
            "Export the newest attempt under RUN_DIR (or the one --attempt names) for another viewer. --perfetto "
            "writes Chrome trace-event JSON (open it in ui.perfetto.dev or chrome://tracing): one process track "
            "per worker, counter tracks for RSS, read/write rates and GPU columns from the resource samples."
        ),
    )
    export.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (the Profiler's run_dir)")
    export.add_argument("--perfetto", metavar="PATH", required=True, help="write Chrome trace-event JSON here")
    _add_attempt_option(export, "export")
    _add_quiet_option(export)
    top = commands.add_parser(
        "top",
        help="a live terminal view of a running job, from its live files",
        description=(
            "Show a running job live: per role, each phase's share of the phase time, entries per second and "
            "mean duration over the last interval, counter rates, and processes whose live file stopped "
            "changing (stalled). q or Ctrl-C quits."
        ),
    )
    top.add_argument("run_dir", metavar="RUN_DIR", help="the run directory of the running job")
    top.add_argument(
        "--interval", type=_seconds, default=1.0, metavar="S", help="seconds between refreshes (default 1)"
    )
    top.add_argument("--once", action="store_true", help="print one frame (rates since each process started) and exit")
    _add_run_parser(commands)
    _add_view_parser(commands)
    _add_attach_parser(commands)
    return parser


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a percentage is from 0 to 100, not {text}")
    return value


def _add_fail_over_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--fail-over",
        type=_percent,
        metavar="PCT",
        help=f"exit with status {EXIT_FAIL_OVER} when a finding of a traced run costs more than PCT %% of the run "
        "(after writing the report): a regression gate",
    )


def _add_trace_parser(commands: Any) -> None:
    trace = commands.add_parser(
        "trace",
        help="the story of a traced run: its critical path, findings, lanes and links",
        description=(
            "Read the exact spans and links of a run recorded with Profiler(trace=True) and print what set "
            "its length: the critical path, the findings ranked by what they cost, the step skew; "
            "--html draws the lanes (zoom, pan, hover)."
        ),
    )
    trace.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (the Profiler's run_dir)")
    _add_attempt_option(trace, "trace")
    trace.add_argument(
        "--max-spans",
        type=_int_at_least(1),
        metavar="N",
        help="draw at most N spans (the longest; default 20,000): the page says how many it left out",
    )
    _add_fail_over_option(trace)
    _add_quiet_option(trace)
    trace_output = trace.add_mutually_exclusive_group()
    trace_output.add_argument(
        "--html", nargs="?", const="", metavar="PATH",
        help="write the story as one HTML file (default RUN_DIR/trace.html) and print its path",
    )
    trace_output.add_argument("--json", action="store_true", help="print the story as one JSON document")
    _add_format_options(trace, "the story")


def _add_attempt_option(sub: argparse.ArgumentParser, verb: str) -> None:
    # One definition, so report and export take the same IDs and refuse a wrong one alike.
    sub.add_argument(
        "--attempt",
        metavar="ID",
        help=f"{verb} this attempt instead of the newest: a run id (RUN_ID or RUN_ID#N) the report's header names "
        "as superseded, concurrent or newest",
    )


def _add_quiet_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line on stderr (shown only on a terminal, once the command has run for a second)",
    )


def _progress(args: argparse.Namespace) -> Any:
    from .report.progress import for_terminal

    return for_terminal(quiet=args.quiet)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0.05 and 3600 seconds: {text!r}")
    return value


_SORT_KEYS = ("time", "hits", "line")


def _int_at_least(low: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}: {text!r}")
        return value

    return parse


def _microseconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
    return value


def _add_table_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--top", type=_int_at_least(1), default=20, metavar="N", help="the top N lines (default 20)")
    sub.add_argument(
        "--functions",
        type=_int_at_least(0),
        default=10,
        metavar="N",
        help="the line tables of the N slowest functions first (default 10; 0 for none)",
    )
    sub.add_argument(
        "--min-us", type=_microseconds, default=0.0, metavar="US", help="only lines and functions of at least US µs"
    )
    sub.add_argument("--sort", choices=_SORT_KEYS, default="time", help="order by time (default), hits or line")


def _add_run_parser(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="run a script or module as python would, line-profiled, and print its slowest lines",
        usage=f"{PROG} run [options] (script.py | -m module) [args ...]",
        description=(
            "Run script.py (or -m module) exactly as python would, with the line profiler on for the code of "
            "the project folder (default: the script's git root, else its folder), then print the tables. "
            "Everything after the script or module name is passed to it."
        ),
    )
    run.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="module", help="run a module, as python -m")
    run.add_argument("--project", metavar="DIR", help="the project folder whose code is profiled")
    run.add_argument(
        "--include", action="append", default=[], metavar="GLOB", help="also profile files matching GLOB (repeatable)"
    )
    run.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="leave out files matching GLOB")
    _add_table_options(run)
    run.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="also save the line stats: a file, or a directory (then one file per process)",
    )
    run.add_argument(
        "--children",
        action="store_true",
        help="also line-profile every Python child process (multiprocessing, subprocess); "
        "-o then names the directory they write to",
    )
    run.add_argument(
        "--html", metavar="PATH", help="also write the profiled source, annotated and heat-coloured, as one HTML file"
    )
    run.add_argument("target", nargs=argparse.REMAINDER, metavar="script.py [args ...]", help=argparse.SUPPRESS)


def _add_view_parser(commands: Any) -> None:
    view = commands.add_parser(
        "view",
        help="print saved line profiles, merged over the processes that wrote them",
        description=(
            "Print a line-stats file, or every process file of a directory (lineprofiler run -o DIR, "
            "LineProfiler(children=True)) merged: the same file, function and line summed over processes. "
            "Processes that left nothing are named."
        ),
    )
    view.add_argument("path", metavar="PATH", help="a line-stats file or a directory of them")
    view.add_argument("--by-role", action="store_true", help="one set of tables per role (or process kind)")
    _add_quiet_option(view)
    view.add_argument(
        "--html",
        metavar="PATH",
        help="write the merged profile as annotated, heat-coloured source in one HTML file and print its path",
    )
    _add_table_options(view)


def _pid(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return value


def _add_attach_parser(commands: Any) -> None:
    attach = commands.add_parser(
        "attach",
        help="line-profile a running Python 3.14+ process for a while (sys.remote_exec), then print its slowest lines",
        description=(
            "Turn the line profiler on in the running Python process PID for --duration seconds, through "
            "sys.remote_exec (Python 3.14+, the same version here and there; the target must be able to import "
            "lineprofiler), then save the line stats and print the tables. The process goes on as it was; "
            "nothing of the profiler stays on in it after the window. Its main thread starts the profiler the "
            "next time it runs Python code: one blocked in a call into C starts it when that call returns."
        ),
    )
    attach.add_argument("pid", type=_pid, metavar="PID", help="the process to attach to")
    attach.add_argument("--duration", type=_seconds, default=5.0, metavar="S", help="seconds to record (default 5)")
    attach.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to save the line stats: a file, or a directory (default profile/lines/)",
    )
    attach.add_argument(
        "--project-folder",
        "--project",
        dest="project_folder",
        metavar="DIR",
        help="the folder whose code is profiled (default: the git root of the target's working directory)",
    )
    attach.add_argument(
        "--include", action="append", default=[], metavar="GLOB", help="also profile files matching GLOB (repeatable)"
    )
    attach.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="leave out files matching GLOB")
    attach.add_argument(
        "--start-timeout",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="give up when the target has not started the profiler after S seconds (default 10)",
    )
    _add_table_options(attach)


def _attach(args: argparse.Namespace) -> int:
    from .lines.attach import AttachOptions, attach

    options = AttachOptions(
        pid=args.pid,
        duration=args.duration,
        output=args.output,
        project_folder=args.project_folder,
        include=args.include,
        exclude=args.exclude,
        start_timeout=args.start_timeout,
        top=args.top,
        functions=args.functions,
        min_us=args.min_us,
        sort=args.sort,
    )
    return attach(options)


def _run(args: argparse.Namespace) -> int:
    from .lines.runner import RunOptions, run

    target = list(args.target or [])
    if target and target[0] == "--":
        target = target[1:]
    module: list[str] = list(args.module or [])
    if args.module is not None and not module:
        raise _UsageError(f"{PROG} run: -m needs a module name (see {PROG} run --help)")
    if module and target:
        raise _UsageError(f"{PROG} run: give a script or -m module, not both (see {PROG} run --help)")
    if not module and not target:
        raise _UsageError(f"{PROG} run: give a script to run, or -m module (see {PROG} run --help)")
    opts = RunOptions(
        script=None if module else target[0],
        module=module[0] if module else None,
        args=module[1:] if module else target[1:],
        project=args.project,
        include=args.include,
        exclude=args.exclude,
        top=args.top,
        functions=args.functions,
        min_us=args.min_us,
        sort=args.sort,
        output=args.output,
        children=args.children,
        html=None if args.html is None else os.path.abspath(args.html),
    )
    return run(opts)


def _view(args: argparse.Namespace) -> int:
    from .lines.saved import SavedProfile
    from .lines.view import ViewOptions, render_view

    progress = _progress(args)
    progress.update(f"reading the line profiles in {args.path}")
    try:
        saved = SavedProfile.load(args.path)
    finally:
        progress.close()
    if args.html is not None:
        return _view_html(args, saved)
    options = ViewOptions(
        top=args.top, functions=args.functions, min_us=args.min_us, sort=args.sort, by_role=args.by_role
    )
    _print_text(render_view(saved, options), end="")
    return EXIT_OK


def _view_html(args: argparse.Namespace, saved: Any) -> int:
    from .lines.annotate import render_annotated
    from .lines.annotate.sources import file_hashes
    from .lines.view import render_processes

    if args.by_role:
        raise _UsageError(f"{PROG} view: --by-role has no HTML page yet; give --html or --by-role")
    text = render_annotated(
        saved.get_stats(),
        title=f"lineprofiler view {args.path}",
        root=saved.project_folder,
        hashes=file_hashes(saved.processes, saved.merged.conflicts),
        wall_ns=saved.wall_time_ns if len(saved.processes) == 1 else None,
        preamble=render_processes(saved),
    )
    _print_line(_write(args.html, text))
    return EXIT_OK


#: What ``open(path, "w")`` gives a new file (less the umask): the reports are the user's files.
_REPORT_FILE_MODE = 0o666


def _write(path: str, text: str) -> str:
    """Write ``text`` to ``path`` whole (a temporary file renamed over it); returns the path.
    An unwritable path is the user's to fix: one line, exit status 2."""
    from .report.merge import ReportError
    from .runfiles.layout import write_atomic

    target = os.path.abspath(path)
    try:
        if os.path.isdir(target):
            raise IsADirectoryError(21, "Is a directory")
        write_atomic(target, text.encode("utf-8"), mode=_REPORT_FILE_MODE)
    except OSError as error:
        raise ReportError(f"cannot write {path}: {error.strerror or error}") from None
    return path


def _add_format_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--format`` and ``-o``: the spelling of 0.10.0 (and of most tools) beside ours."""
    parser.add_argument(
        "--format", choices=("text", "json", "html"), help=f"{what}'s format (the same as --json or --html)"
    )
    parser.add_argument("-o", "--output", metavar="PATH", help=f"write {what} to PATH (any format) and print its path")


def _output_format(args: argparse.Namespace, default_html: str | None) -> tuple[str, str | None]:
    """(format, path to write or None to print) from --json/--html and --format/-o, which agree
    or are refused in one line."""
    from .report.merge import ReportError

    chosen = "json" if args.json else "html" if args.html is not None else None
    if args.format is not None and chosen is not None and args.format != chosen:
        raise ReportError(f"--format {args.format} and --{chosen} ask for two formats: give one")
    fmt = args.format or chosen or "text"
    html_path = args.html or None
    if args.output is not None and html_path is not None and args.output != html_path:
        raise ReportError("--html PATH and -o PATH name two files: give one")
    path = args.output or html_path
    if fmt == "html" and path is None:
        path = default_html
        if path is None:
            raise ReportError("an HTML comparison needs a file: add -o PATH")
    return fmt, path


def _emit(fmt: str, path: str | None, text: str) -> None:
    """A rendered report or comparison: to ``path`` (whose name is then printed), else to
    stdout, text escaped line by line and JSON as it is (json.dumps escaped it already)."""
    if path is not None:
        _print_line(_write(path, text if fmt == "html" or text.endswith("\n") else text + "\n"))
    elif fmt == "json":
        print(text)
    else:
        _print_text(text)


def _report(args: argparse.Namespace) -> int:
    from .report.build import build_report
    from .report.merge import load_run
    from .report.text import RenderOptions, render_report

    fmt, path = _output_format(args, os.path.join(args.run_dir, "report.html"))
    progress = _progress(args)
    try:
        run = load_run(args.run_dir, no_samples=args.no_samples, attempt=args.attempt, progress=progress)
        options = RenderOptions(no_samples=args.no_samples, lines=args.lines, lines_top=args.lines_top)
        progress.update(f"building the report of {len(run.workers)} workers")
        report = build_report(run, options)
    finally:
        progress.close()
    if fmt == "json":
        from .report import json as report_json

        # json.dumps escapes every control and non-ASCII character: nothing here needs escaping.
        text = report_json.dumps(report_json.document(report, run.caveats))
    elif fmt == "html":
        from .report.html import render_html

        text = render_html(report)
    else:
        text = render_report(report)
    _emit(fmt, path, text)
    return _gate(getattr(report, "story", None), args.fail_over)


def _gate(story: Any, fail_over: float | None) -> int:
    """``--fail-over``: after the report is written, the status it asks for, with one line on
    stderr per finding over it."""
    if fail_over is None:
        return EXIT_OK
    if story is None:
        _print_line(f"{PROG}: --fail-over: no worker of this run recorded a trace: no finding to gate", file=sys.stderr)
        return EXIT_OK
    over = [f for f in story.findings if f.cost_fraction is not None and f.cost_fraction * 100 > fail_over]
    for finding in over:
        _print_line(
            f"{PROG}: a finding costs {finding.cost_fraction * 100:.1f}% of the run, over --fail-over "
            f"{fail_over:g}%: {finding.text}",
            file=sys.stderr,
        )
    return EXIT_FAIL_OVER if over else EXIT_OK


def _trace(args: argparse.Namespace) -> int:
    from .report.blocks.story import story_lines
    from .report.merge import ReportError, load_run
    from .report.story.assemble import story

    fmt, path = _output_format(args, os.path.join(args.run_dir, "trace.html"))

    progress = _progress(args)
    try:
        run = load_run(args.run_dir, no_samples=True, attempt=args.attempt, progress=progress)
        progress.update(f"reading the traces of {len(run.workers)} workers")
        result, notes = story(run)
    finally:
        progress.close()
    if result is None:
        # One line: the first reason, and how many more (a thousand workers could each give one).
        reason = f": {notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else "") if notes else ""
        raise ReportError(f"no worker of this run recorded a usable trace (Profiler(trace=True)){reason}")
    caveats = list(run.caveats) + [n for n in notes if n not in run.caveats]
    if fmt == "json":
        from .report import json as report_json

        text = report_json.dumps(
            {"kind": "lineprofiler-story", "version": 1, "story": report_json.plain(result), "caveats": caveats}
        )
    elif fmt == "html":
        from .report.html.story import render_story_html

        text = render_story_html(result, caveats, title=f"lineprofiler trace: {run.name}", max_spans=args.max_spans)
    else:
        from .report.text import caveats_lines

        text = "\n\n".join("\n".join(chunk) for chunk in (story_lines(result), caveats_lines(caveats)) if chunk)
    _emit(fmt, path, text)
    return _gate(result, args.fail_over)


def _compare(args: argparse.Namespace) -> int:
    from .report.compare import compare_runs, render_compare
    from .report.merge import ReportError, load_run

    fmt, out = _output_format(args, None)
    runs = []
    progress = _progress(args)
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
    if fmt == "json":
        text = json.dumps(document, indent=2, allow_nan=False)  # ASCII, controls escaped
    elif fmt == "html":
        from .report.html import render_compare_html

        text = render_compare_html(document)
    else:
        text = render_compare(document)
    _emit(fmt, out, text)
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from .report.merge import ReportError, load_run
    from .report.perfetto import iter_trace_json
    from .runfiles.layout import Replacement

    progress = _progress(args)
    try:
        run = load_run(args.run_dir, attempt=args.attempt, progress=progress)
        progress.update(f"writing the trace of {len(run.workers)} workers")
        # Written as it is made (a temporary file renamed over the name): a traced run's spans
        # are never held all at once.
        target = os.path.abspath(args.perfetto)
        try:
            if os.path.isdir(target):
                raise IsADirectoryError(21, "Is a directory")
            dir_fd = os.open(os.path.dirname(target), os.O_RDONLY | os.O_DIRECTORY)
            try:
                replacement = Replacement(dir_fd, os.path.basename(target), mode=_REPORT_FILE_MODE)
                try:
                    for chunk in iter_trace_json(run):
                        replacement.write(chunk.encode("utf-8"))
                    replacement.commit()
                except BaseException:
                    replacement.discard()
                    raise
            finally:
                os.close(dir_fd)
        except OSError as error:
            raise ReportError(f"cannot write {args.perfetto}: {error.strerror or error}") from None
    finally:
        progress.close()
    _print_line(args.perfetto)
    return EXIT_OK


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "view":
        return _view(args)
    if args.command == "report":
        return _report(args)
    if args.command == "export":
        return _export(args)
    if args.command == "trace":
        return _trace(args)
    if args.command == "top":
        from .report.top import run_top

        return run_top(args.run_dir, args.interval, once=args.once)
    if args.command == "attach":
        return _attach(args)
    return _compare(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    # Text from worker files reaches the terminal: never fail on an encoding the terminal lacks.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    from .errors import InputError

    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            return _run(args)
        status = _dispatch(args)
        # Flushed here, where a reader that left is caught below: a report that fits in the
        # buffer (128 KiB from 3.14 on) would otherwise first meet the closed pipe at exit.
        sys.stdout.flush()
        return status
    except _UsageError as error:
        _print_line(str(error), file=sys.stderr)
        return EXIT_BAD_INPUT
    except InputError as error:
        _print_line(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `lineprofiler report run/ | head`: the reader left; not an error of ours.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        if os.environ.get("LINEPROFILER_DEBUG"):
            raise
        _print_line(
            f"{PROG}: internal error: {error.__class__.__name__}: {error} "
            f"(set LINEPROFILER_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL

