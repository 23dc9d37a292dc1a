"""The ``lineprofiler`` command: ``report``, ``compare``, ``export`` and ``top`` over run directories; ``run``
(a script or module, line-profiled) and ``view`` (saved line profiles).

Exit status: 0 when a report was printed (even with CAVEATS), 2 when nothing could be reported
or the command line was wrong, 1 for an internal error. Errors are one line on stderr, never a
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
    return parser


def _add_attempt_option(sub: argparse.ArgumentParser, verb: str) -> None:
    # One definition, so report and export take the same IDs and refuse a wrong one alike.
    sub.add_argument(
        "--attempt",
        metavar="ID",
        help=f"{verb} this attempt instead of the newest: a run id (RUN_ID or RUN_ID#N) the report's header names "
        "as superseded, concurrent or newest",
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
    _add_table_options(view)


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
    )
    return run(opts)


def _view(args: argparse.Namespace) -> int:
    from .lines.saved import SavedProfile
    from .lines.view import ViewOptions, render_view

    saved = SavedProfile.load(args.path)
    options = ViewOptions(
        top=args.top, functions=args.functions, min_us=args.min_us, sort=args.sort, by_role=args.by_role
    )
    _print_text(render_view(saved, options), end="")
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
    run = load_run(args.run_dir, no_samples=args.no_samples, attempt=args.attempt)
    options = RenderOptions(no_samples=args.no_samples, lines=args.lines, lines_top=args.lines_top)
    report = build_report(run, options)
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
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from .report.compare import compare_runs, render_compare
    from .report.merge import ReportError, load_run

    fmt, out = _output_format(args, None)
    runs = []
    for label, path, attempt in (("A", args.run_a, args.attempt_a), ("B", args.run_b, args.attempt_b)):
        try:
            runs.append(load_run(path, no_samples=True, attempt=attempt))
        except ReportError as error:
            raise ReportError(f"{label}: {error}") from None
    document = compare_runs(*runs)
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
    from .report.merge import load_run
    from .report.perfetto import trace_json

    run = load_run(args.run_dir, attempt=args.attempt)
    _print_line(_write(args.perfetto, trace_json(run)))
    return EXIT_OK


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "view":
        return _view(args)
    if args.command == "report":
        return _report(args)
    if args.command == "export":
        return _export(args)
    if args.command == "top":
        from .report.top import run_top

        return run_top(args.run_dir, args.interval, once=args.once)
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

