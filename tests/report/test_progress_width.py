"""The progress line fits a narrow terminal: a line that wrapped would leave its first rows on the
screen when the carriage return rewrites only the last one.

Each command runs as a real process whose stderr is a pseudo-terminal 20 columns wide (set with
TIOCSWINSZ, as a terminal emulator sets it); every line drawn between two erasures must take at
most 19 cells (39 at 40 columns), counted as a terminal counts them (two for a wide character), whatever the run
directory's name holds: wide characters, or characters the terminal's encoding lacks.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import unicodedata
from pathlib import Path

import pytest
from lp_report_builders import SimWorker

COLUMNS = 20
WORKERS = 12
ERASE = "\r\x1b[K"
#: A control sequence (CSI or OSC) the line might hold: none takes a cell.
ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A long name of wide characters: each takes two cells, so cutting by characters overflows.
    folder = tmp_path_factory.mktemp("width") / ("运行数据" * 6) / "run"
    for i in range(WORKERS):
        worker = SimWorker("actor" if i else "learner", pid=1000 + i)
        with worker.phase("iteration"):
            worker.work(5_000_000)
        worker.write(folder)
    return folder


def on_terminal(
    args: list[object], env_extra: dict[str, str], *, columns: int = COLUMNS, cwd: Path | None = None
) -> tuple[int, str]:
    """(exit status, what reached the terminal) of a command whose stderr is a pty ``columns``
    wide."""
    env = {**os.environ, "LINEPROFILER_PROGRESS_AFTER_S": "0", **env_extra}
    env.pop("LINEPROFILER_DEBUG", None)
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        child = subprocess.Popen(
            [sys.executable, "-m", "lineprofiler", *map(str, args)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
            env=env,
            cwd=cwd,
        )
        os.close(slave)
        slave = -1
        seen = b""
        while select.select([master], [], [], 60)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        return child.wait(timeout=120), seen.decode("utf-8", "replace")
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def cells(text: str) -> int:
    """The cells a terminal gives ``text``: two for a wide character, none for a combining one."""
    text = ESCAPE.sub("", text)
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text
    )


@pytest.mark.parametrize(
    "command",
    [["report"], ["compare", None], ["export", "--perfetto", None]],
    ids=["report", "compare", "export"],
)
@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
@pytest.mark.parametrize("columns", [COLUMNS, 40])
def test_no_line_drawn_is_wider_than_the_terminal(run_dir, tmp_path, command, encoding, columns):
    # The run directory named from its parent's parent: at 40 columns the line shows some of its
    # wide characters (or, in ASCII, their escapes), which a cut by characters lets overflow.
    where = run_dir.relative_to(run_dir.parent.parent)
    args: list[object] = [command[0], where]
    for extra in command[1:]:
        args.append(extra if extra is not None else where if command[0] == "compare" else tmp_path / "t.json")
    env = {"PYTHONIOENCODING": encoding, "PYTHONUTF8": "1"}
    status, shown = on_terminal(args, env, columns=columns, cwd=run_dir.parent.parent)
    assert status == 0, shown
    lines = [line for line in shown.replace("\r\n", "\n").split(ERASE) if line]
    drawn = [line for line in lines if "\n" not in line]  # the progress line, not an error's
    assert any(line.startswith("reading the") for line in drawn), shown
    too_wide = [(cells(line), line) for line in drawn if cells(line) >= columns]
    assert too_wide == []
    assert shown.endswith(ERASE)  # erased before the command printed its result
    # Cut, and said to be: a reader sees the line goes on.
    ellipsis = "\u2026" if encoding == "utf-8" else "..."
    assert any(line.endswith(ellipsis) for line in drawn)
    if encoding == "ascii":  # what the terminal cannot show is an escape, counted as drawn
        assert all(line.isascii() for line in drawn)


def test_a_wide_terminal_shows_the_whole_line(run_dir):
    """The cut is the terminal's width, read from it: at 300 columns nothing is cut."""
    status, shown = on_terminal(["report", run_dir], {"PYTHONUTF8": "1"}, columns=300)
    assert status == 0
    assert f"reading the worker files of {run_dir}: {WORKERS}/{WORKERS}" in shown
    assert "\u2026" not in shown
