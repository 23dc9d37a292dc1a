"""The IPython extension: ``%load_ext lineprofiler``, then ``%lprofile`` and ``%%lprofile``.

``%lprofile [options] statement`` runs the statement with a fresh LineProfiler on and prints
the tables; ``%%lprofile [options]`` does the same for the whole cell, whose own code is
profiled too. Notebook cells have file names outside any project folder (``<ipython-input-N-…>``
in a terminal IPython, ``/tmp/ipykernel_<pid>/<hash>.py`` under ipykernel): both kinds are
included automatically, here and in any LineProfiler made under IPython (see
:mod:`lineprofiler.lines.notebook`).
"""

from __future__ import annotations

from typing import Any

from ..lines.notebook import cell_globs

#: ``LineProfilerMagics`` (the Magics class) is made on first use, so importing this module never
#: imports IPython.
__all__ = ["cell_globs", "load_ipython_extension", "unload_ipython_extension"]

USAGE = """\
Options:
  -p DIR    project folder (default: the git root of the working directory, else it)
  -i GLOB   also profile files matching GLOB (repeatable); cell code is always included
  -x GLOB   leave out files matching GLOB (repeatable)
  -t N      the top N lines (default 20)
  -f N      the tables of the N slowest functions (default 10; 0 for none)
  -m US     only lines and functions of at least US microseconds
  -s KEY    sort by time, hits or line (default time)
  -o PATH   also save the result as a line-stats file (a file, or a directory)
  -r        return the profiler (its get_stats(), print_stats(), dump() ...)
"""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _make_magics() -> Any:
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    from .._terminal import printable
    from ..lines.render import HINT_MAGIC, SORT_KEYS, render_report

    @magics_class
    class LineProfilerMagics(Magics):
        @line_cell_magic
        def lprofile(self, line: str, cell: str | None = None) -> Any:
            """Line-profile a statement (%lprofile) or a cell (%%lprofile)."""
            from ..lines import LineProfiler

            opts, stmt = self.parse_options(line, "p:i:x:t:f:m:s:o:r", list_all=True, posix=False)
            code = stmt if cell is None else (stmt + "\n" + cell if stmt.strip() else cell)
            if not code.strip():
                raise UsageError("%lprofile needs a statement (or %%lprofile a cell)\n" + USAGE)

            def one(key: str, default: Any, convert: Any) -> Any:
                if key not in opts:
                    return default
                raw = _unquote(opts[key][-1])
                try:
                    return convert(raw)
                except ValueError:
                    raise UsageError(f"-{key}: not a valid value: {raw!r}\n" + USAGE) from None

            sort_by = one("s", "time", str)
            if sort_by not in SORT_KEYS:
                raise UsageError(f"-s must be one of {', '.join(SORT_KEYS)}; got {sort_by!r}")
            top_n = one("t", 20, int)
            functions = one("f", 10, int)
            min_us = one("m", 0.0, float)
            if top_n < 1 or functions < 0 or min_us < 0:
                raise UsageError("-t must be >= 1, -f and -m >= 0\n" + USAGE)
            try:
                profiler = LineProfiler(
                    one("p", None, str),
                    include=[_unquote(g) for g in opts.get("i", [])] or None,
                    exclude=[_unquote(g) for g in opts.get("x", [])] or None,
                )
            except (ValueError, TypeError) as error:
                raise UsageError(str(error)) from None
            shell = self.shell
            assert shell is not None
            with profiler:
                shell.run_cell(code, store_history=False)
            text = profiler.nothing_recorded(hint=HINT_MAGIC)
            if text is None:
                text = render_report(
                    profiler.get_stats(),
                    functions=functions,
                    top_n=top_n,
                    min_time_us=min_us,
                    sort_by=sort_by,
                    root=profiler.project_folder,
                    total_ns=profiler.wall_time_ns,
                )
            print(text, end="")
            if "o" in opts:
                path = profiler.dump(_unquote(opts["o"][-1]))
                print(f"Saved to {printable(str(path))}")
            if "r" in opts:
                return profiler
            return None

    LineProfilerMagics.lprofile.__doc__ = (LineProfilerMagics.lprofile.__doc__ or "") + "\n\n" + USAGE
    return LineProfilerMagics


_MAGICS: Any = None


def __getattr__(name: str) -> Any:
    global _MAGICS
    if name == "LineProfilerMagics":
        if _MAGICS is None:
            _MAGICS = _make_magics()
        return _MAGICS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%lprofile`` / ``%%lprofile`` with ``ipython``."""
    ipython.register_magics(__getattr__("LineProfilerMagics"))


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics again."""
    magics = ipython.magics_manager.magics
    for kind in ("line", "cell"):
        magics[kind].pop("lprofile", None)
