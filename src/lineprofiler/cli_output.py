"""What the ``lineprofiler`` commands share: exit statuses, the one-line usage error, printing
through :func:`~lineprofiler._terminal.printable`, the progress line, and writing or printing a
rendered report in the format asked for."""

from __future__ import annotations

import argparse
from typing import IO, TYPE_CHECKING

from ._terminal import printable

if TYPE_CHECKING:
    from .report.read.progress import Progress

PROG = "lineprofiler"
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
#: ``--fail-over``: a finding's removable cost was more than the given share of the run.
EXIT_FAIL_OVER = 3


class UsageError(Exception):
    pass


def print_text(text: str, *, end: str = "\n") -> None:
    """A report on stdout, each of its lines escaped (text its renderer escaped is unchanged)."""
    print("\n".join(printable(line) for line in text.split("\n")), end=end)


def print_line(text: str, *, file: IO[str] | None = None) -> None:
    """One line (a path written, an error): a newline inside it is shown escaped too."""
    print(printable(text), file=file)


def progress_for(args: argparse.Namespace) -> Progress:
    """The command's progress line (``-q`` turns it off; see :mod:`.report.progress`)."""
    from .report.read.progress import for_terminal

    return for_terminal(quiet=args.quiet)


def write(path: str, text: str, fmt: str) -> str:
    """Write ``text``, rendered as ``fmt``, to ``path`` through the report's one way out
    (:func:`~.report.render.write`: ended by a newline); returns the path. An unwritable
    path is the user's to fix: one line, exit status 2."""
    from .report.read.merge import ReportError
    from .report.render import write as write_text

    try:
        write_text(path, text, fmt)
    except OSError as error:
        raise ReportError(f"cannot write {path}: {error.strerror or error}") from None
    return path


#: ``-o PATH`` with no format asked for: the format its suffix names (any other suffix: text).
SUFFIX_FORMATS = {".html": "html", ".htm": "html", ".json": "json"}


def output_format(args: argparse.Namespace, default_html: str | None) -> tuple[str, str | None]:
    """(format, path to write or None to print) from --json/--html and --format/-o, which agree
    or are refused in one line.

    As in 0.10.0, ``-o page.html`` alone writes HTML (and ``-o x.json`` JSON): the suffix says the
    format when no flag does. ``--format html`` alone prints the page, as 0.10.0 did; ``--html``
    alone writes ``default_html``."""
    from .report.read.merge import ReportError

    chosen = "json" if args.json else "html" if args.html is not None else None
    if args.format is not None and chosen is not None and args.format != chosen:
        raise ReportError(f"--format {args.format} and --{chosen} ask for two formats: give one")
    fmt = args.format or chosen or _suffix_format(args.output) or "text"
    html_path = args.html or None
    if args.output is not None and html_path is not None and args.output != html_path:
        raise ReportError("--html PATH and -o PATH name two files: give one")
    path = args.output or html_path
    if fmt == "html" and path is None and args.html is not None:
        path = default_html
        if path is None:
            raise ReportError("an HTML comparison needs a file: add -o PATH")
    return fmt, path


def _suffix_format(path: str | None) -> str | None:
    if path is None:
        return None
    import os.path

    return SUFFIX_FORMATS.get(os.path.splitext(path)[1].lower())


def emit(fmt: str, path: str | None, text: str) -> None:
    """A rendered report or comparison: to ``path`` (whose name is then printed), else to
    stdout, text escaped line by line and JSON as it is (json.dumps escaped it already)."""
    if path is not None:
        print_line(write(path, text, fmt))
    elif fmt == "json":
        print(text)
    else:
        print_text(text)
