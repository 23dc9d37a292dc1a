"""The ``lineprofiler`` command: ``report`` and ``compare`` over run directories.

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
    report.add_argument(
        "--attempt",
        metavar="ID",
        help="report this attempt instead of the newest: a run id (RUN_ID or RUN_ID#N) the header names "
        "as superseded, concurrent or newest",
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
    compare.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    compare.add_argument("--attempt-a", metavar="ID", help="the attempt of A to compare (default: A's newest)")
    compare.add_argument("--attempt-b", metavar="ID", help="the attempt of B to compare (default: B's newest)")
    return parser


def _report(args: argparse.Namespace) -> int:
    from .report.merge import load_run
    from .report.text import RenderOptions, render

    run = load_run(args.run_dir, no_samples=args.no_samples, attempt=args.attempt)
    print(render(run, RenderOptions(no_samples=args.no_samples)))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from .report.compare import compare_runs, render_compare
    from .report.merge import ReportError, load_run

    runs = []
    for label, path, attempt in (("A", args.run_a, args.attempt_a), ("B", args.run_b, args.attempt_b)):
        try:
            runs.append(load_run(path, no_samples=True, attempt=attempt))
        except ReportError as error:
            raise ReportError(f"{label}: {error}") from None
    document = compare_runs(*runs)
    if args.json:
        print(json.dumps(document, indent=2, allow_nan=False))
    else:
        print(render_compare(document))
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

