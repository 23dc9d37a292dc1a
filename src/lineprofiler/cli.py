"""The ``lineprofiler`` command: ``report``, ``compare`` and ``export`` over run directories.

Exit status: 0 when a report was printed (even with CAVEATS), 2 when nothing could be reported
or the command line was wrong, 1 for an internal error. Errors are one line on stderr, never a
traceback (set ``LINEPROFILER_DEBUG=1`` to see one for an internal error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__

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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Report on runs recorded by lineprofiler.accounting: where a multi-process run spent its time.",
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
    compare_output = compare.add_mutually_exclusive_group()
    compare_output.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    compare_output.add_argument(
        "--html", metavar="PATH", help="write the comparison as one self-contained HTML file and print its path"
    )

    export = commands.add_parser(
        "export",
        help="export a run for other viewers: a Chrome trace-event file for Perfetto",
        description=(
            "Export the newest attempt under RUN_DIR for another viewer. --perfetto writes Chrome trace-event "
            "JSON (open it in ui.perfetto.dev or chrome://tracing): one process track per worker, counter "
            "tracks for RSS, read/write rates and GPU columns from the resource samples."
        ),
    )
    export.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (the Profiler's run_dir)")
    export.add_argument("--perfetto", metavar="PATH", required=True, help="write Chrome trace-event JSON here")
    return parser


def _write(path: str, text: str) -> str:
    """Write ``text`` to ``path`` whole (a temporary file renamed over it); returns the path.
    An unwritable path is the user's to fix: one line, exit status 2."""
    from .report.merge import ReportError

    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}.tmp")
    try:
        if os.path.isdir(target):
            raise IsADirectoryError(21, "Is a directory")
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, target)
    except OSError as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise ReportError(f"cannot write {path}: {error.strerror or error}") from None
    return path


def _report(args: argparse.Namespace) -> int:
    from .report.build import build_report
    from .report.merge import load_run
    from .report.text import RenderOptions, render_report

    run = load_run(args.run_dir, no_samples=args.no_samples)
    report = build_report(run, RenderOptions(no_samples=args.no_samples))
    if args.json:
        from .report import json as report_json

        print(report_json.dumps(report_json.document(report, run.caveats)))
    elif args.html is not None:
        from .report.html import render_html

        path = args.html or os.path.join(args.run_dir, "report.html")
        print(_write(path, render_html(report)))
    else:
        print(render_report(report))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from .report.compare import compare_runs, render_compare
    from .report.merge import ReportError, load_run

    runs = []
    for label, path in (("A", args.run_a), ("B", args.run_b)):
        try:
            runs.append(load_run(path, no_samples=True))
        except ReportError as error:
            raise ReportError(f"{label}: {error}") from None
    document = compare_runs(*runs)
    if args.json:
        print(json.dumps(document, indent=2, allow_nan=False))
    elif args.html is not None:
        from .report.html import render_compare_html

        print(_write(args.html, render_compare_html(document)))
    else:
        print(render_compare(document))
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from .report.merge import load_run
    from .report.perfetto import trace_json

    run = load_run(args.run_dir)
    print(_write(args.perfetto, trace_json(run)))
    return EXIT_OK


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
    from .report.merge import ReportError

    try:
        args = build_parser().parse_args(argv)
        if args.command == "report":
            return _report(args)
        if args.command == "export":
            return _export(args)
        return _compare(args)
    except _UsageError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    except ReportError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
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
        print(
            f"{PROG}: internal error: {error.__class__.__name__}: {error} "
            f"(set LINEPROFILER_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL

