"""The ``lineprofiler`` command: ``report``, ``compare``, ``export``, ``trace`` and ``top`` over run directories;
``record`` (a script or module with the accounting profiler on), ``run`` (a script or module, line-profiled),
``view`` (saved line profiles) and ``attach`` (a running process, for a window).

Exit status: 0 when a report was printed (even with CAVEATS), 2 when nothing could be reported
or the command line was wrong, 1 for an internal error, 3 when ``--fail-over PCT`` found a finding
whose removable cost is more than PCT % of the run (the report is written first). Errors are one line on stderr, never a
traceback (set ``LINEPROFILER_DEBUG=1`` to see one for an internal error).

Everything printed here goes through :func:`~lineprofiler._terminal.printable`, line by line:
the reports, the paths of the files written and the errors (which name run directories, files
and arguments) hold text from files and from the command line, whose control characters must
show as escapes, never act on the terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from . import __version__
from .cli_lines import attach_command, record_command, run_command, view_command
from .cli_output import EXIT_BAD_INPUT, EXIT_FAIL_OVER, EXIT_INTERNAL, EXIT_OK, PROG, UsageError, print_line
from .cli_runs import compare_command, export_command, report_command, trace_command


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr, like every other error here."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description=(
            "Report on runs recorded by lineprofiler.accounting (report, compare, trace, export, top); run a "
            "script line-profiled, attach to a running one and read saved line profiles (run, attach, view)."
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
    report_output.add_argument(
        "--lines-html",
        nargs="?",
        const="",
        metavar="PATH",
        help="instead of the report, write the lines of Profiler(line_sampling=...) as annotated, heat-coloured "
        "source, one view per role and phase, in one self-contained HTML file (default "
        "RUN_DIR/sampled-lines.html) and print its path; exit status 2 when no line was sampled",
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
    _add_record_parser(commands)
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
        help=f"exit with status {EXIT_FAIL_OVER} when a finding of a traced run names a cost someone can remove "
        "of more than PCT %% of the run (after writing the report): a regression gate. Only these gate: a process "
        "others waited for on the critical path, wake-up latency after a signal, a late arrival at a collective "
        "(skew), off-CPU time on the critical path; a phase that is merely big does not",
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


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0.05 and 3600 seconds: {text!r}")
    return value


_SORT_KEYS = ("time", "self", "hits", "line")


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
    sub.add_argument(
        "--sort", choices=_SORT_KEYS, default="time", help="order by time (default), self time, hits or line"
    )


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


def _add_record_parser(commands: Any) -> None:
    record = commands.add_parser(
        "record",
        help="run a script or module as python would, with the accounting profiler on in it and its children",
        usage=f"{PROG} record [-d RUN_DIR] [--role ROLE] [--auto torch] (script.py | -m module) [args ...]",
        description=(
            "Run script.py (or -m module) exactly as python would (its output, exit status and signals "
            "unchanged), with an accounting Profiler on in it and in every Python process it starts, then say "
            "on stderr where the run directory is (read it with lineprofiler report). --auto torch records a "
            "PyTorch loop's step, data_wait, forward, backward, optimizer, the DataLoader workers' fetch (role "
            "dataloader) and checkpoints with no change to the program. Everything after the script or module "
            "name is passed to it."
        ),
    )
    record.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="module", help="run a module")
    record.add_argument(
        "-d", "--run-dir", metavar="RUN_DIR", help="the run directory (default LINEPROFILER_RUN_DIR, else profile)"
    )
    record.add_argument("--role", metavar="ROLE", help="the program's role (default: the script's stem)")
    record.add_argument(
        "--auto", choices=("torch",), help="record a library's loop with no phase() calls: torch (docs/accounting.md)"
    )
    record.add_argument("target", nargs=argparse.REMAINDER, metavar="script.py [args ...]", help=argparse.SUPPRESS)


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
    view.add_argument(
        "--shade",
        choices=("self", "inclusive"),
        default="self",
        help="--html's heat colour: by self time (default: the hot lines) or by time with calls (the callers)",
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


def _add_format_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--format`` and ``-o``: the spelling of 0.10.0 (and of most tools) beside ours."""
    parser.add_argument(
        "--format", choices=("text", "json", "html"),
        help=f"{what}'s format (as --json or --html, but html without -o is printed, as in 0.10.0)"
    )
    parser.add_argument(
        "-o", "--output", metavar="PATH",
        help=f"write {what} to PATH and print its path; with no format given, PATH's suffix says it "
        "(.html, .json; else text)",
    )


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "view":
        return view_command(args)
    if args.command == "report":
        return report_command(args)
    if args.command == "export":
        return export_command(args)
    if args.command == "trace":
        return trace_command(args)
    if args.command == "top":
        from .report.render.top import run_top

        return run_top(args.run_dir, args.interval, once=args.once)
    if args.command == "attach":
        return attach_command(args)
    return compare_command(args)


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
            return run_command(args)
        if args.command == "record":
            return record_command(args)
        status = _dispatch(args)
        # Flushed here, where a reader that left is caught below: a report that fits in the
        # buffer (128 KiB from 3.14 on) would otherwise first meet the closed pipe at exit.
        sys.stdout.flush()
        return status
    except UsageError as error:
        print_line(str(error), file=sys.stderr)
        return EXIT_BAD_INPUT
    except InputError as error:
        print_line(f"{PROG}: {error}", file=sys.stderr)
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
        print_line(
            f"{PROG}: internal error: {error.__class__.__name__}: {error} "
            f"(set LINEPROFILER_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL

