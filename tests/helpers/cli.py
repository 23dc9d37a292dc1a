"""``lineprofiler ARGS`` from a test: in this process where a process adds nothing (report,
compare, export: read files, print), in a fresh interpreter where it does (``run``, signals,
what a new interpreter imports, a terminal)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from lineprofiler.cli import main

from .env import clean_env


class Result(NamedTuple):
    """The exit status and the text written to stdout and stderr (``code, out, err = ...``)."""

    code: int
    out: str
    err: str

    # subprocess.CompletedProcess's names, for tests that read either kind of result.
    @property
    def returncode(self) -> int:
        return self.code

    @property
    def stdout(self) -> str:
        return self.out

    @property
    def stderr(self) -> str:
        return self.err


def run_cli(*argv: object, cwd: Path | str | None = None) -> Result:
    """``lineprofiler ARGV`` run by ``lineprofiler.cli.main`` in this process, from ``cwd``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or os.getcwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(arg) for arg in argv])
        except SystemExit as exit_:  # argparse's usage errors and --help, as the interpreter ends them
            if isinstance(exit_.code, int) or exit_.code is None:
                code = exit_.code or 0
            else:
                print(exit_.code, file=sys.stderr)
                code = 1
    return Result(code, out.getvalue(), err.getvalue())


def run_cli_process(
    *argv: object,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    **popen: object,
) -> subprocess.CompletedProcess[str]:
    """``python -m lineprofiler ARGV`` in a fresh interpreter, as a user runs it (``env``:
    ``clean_env()`` unless given)."""
    return subprocess.run(
        [sys.executable, "-m", "lineprofiler", *map(str, argv)],
        cwd=cwd,
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,  # type: ignore[call-overload]
    )
