"""The IPython extension: ``%load_ext lineprofiler``, then ``%lprofile`` and ``%%lprofile``.

``%lprofile [options] statement`` runs the statement with a fresh LineProfiler on and prints
the tables; ``%%lprofile [options]`` does the same for the whole cell, whose own code is
profiled too (a statement's own line is not: it only drives the code it calls). Both work as
``%time`` does: the value of the statement (of the cell's last expression) is the magic's, so
``x = %lprofile f(3)`` assigns it, and an exception is raised again once the tables are printed,
so the cell fails with it. ``-f FUNC`` shows the tables of the functions it names, as
line_profiler's ``%lprun -f`` does. Notebook cells have file names outside any project folder (``<ipython-input-N-…>``
in a terminal IPython, ``/tmp/ipykernel_<pid>/<hash>.py`` under ipykernel): both kinds are
included automatically, here and in any LineProfiler made under IPython (see
:mod:`lineprofiler.lines.notebook`).
"""

from __future__ import annotations

import ast
import glob
import linecache
import os
from types import CodeType
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
  -f FUNC   the table of FUNC instead (an expression: f, obj.method, module.func; repeatable),
            recorded wherever its file lies
  -m US     only lines and functions of at least US microseconds
  -s KEY    sort by time, self, hits or line (default time)
  -o PATH   also save the result as a line-stats file (a file, or a directory)
  -r        return the profiler (its get_stats(), print_stats(), dump() ...)
"""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _own_file_globs(code: CodeType) -> list[str]:
    """Include globs that name exactly the file of ``code`` (as CPython reports it, and with
    symlinks resolved), so a function named by ``-f`` is recorded wherever it lies."""
    names = [code.co_filename]
    if not (code.co_filename.startswith("<") and code.co_filename.endswith(">")):
        names.append(os.path.realpath(code.co_filename))
    return list(dict.fromkeys(glob.escape(name) for name in names))


class _Prepared:
    """The statement or cell, transformed as IPython transforms a cell (magics, ``!`` escapes)
    and compiled before profiling starts: its body, then its last expression (whose value the
    magic returns), if it ends with one."""

    def __init__(self, shell: Any, code: str, filename: str | None) -> None:
        source = shell.transform_cell(code)
        tree = shell.transform_ast(shell.compile.ast_parse(source))
        if filename is None:  # a cell: named and cached as IPython names its cells
            filename = shell.compile.cache(source, shell.execution_count)
        else:  # a statement: a name of its own, outside the cells, so its line is not profiled
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        self.namespace = shell.user_ns
        self.body = shell.compile(tree, filename, "exec")
        self.last = None if last is None else shell.compile(last, filename, "eval")

    def run(self) -> Any:
        __tracebackhide__ = True  # noqa: F841  (IPython leaves this frame out of tracebacks)
        exec(self.body, self.namespace)
        return None if self.last is None else eval(self.last, self.namespace)


def _make_magics() -> Any:
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    from .._terminal import printable
    from ..lines.decorate import code_of
    from ..lines.render import HINT_MAGIC, SORT_KEYS, render_global, render_report, render_stats
    from ..lines.stats import StatsKey

    @magics_class
    class LineProfilerMagics(Magics):
        @line_cell_magic
        def lprofile(self, line: str, cell: str | None = None) -> Any:
            """Line-profile a statement (%lprofile) or a cell (%%lprofile)."""
            __tracebackhide__ = True  # noqa: F841  (the user's exception shows the user's frames)
            from ..lines import LineProfiler

            shell = self.shell
            assert shell is not None
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
            min_us = one("m", 0.0, float)
            counts = [_unquote(v) for v in opts.get("f", []) if _unquote(v).isdigit()]
            names = [_unquote(v) for v in opts.get("f", []) if not _unquote(v).isdigit()]
            if counts and names:
                raise UsageError("-f takes a number of functions or functions to show, not both\n" + USAGE)
            functions = int(counts[-1]) if counts else 10
            if top_n < 1 or min_us < 0:
                raise UsageError("-t must be >= 1, -f and -m >= 0\n" + USAGE)
            chosen = [self._function(name, UsageError) for name in names]
            include = [_unquote(g) for g in opts.get("i", [])]
            include += [g for chosen_code in chosen for g in _own_file_globs(chosen_code)]
            try:
                prepared = _Prepared(shell, code, f"<lprofile-{shell.execution_count}>" if cell is None else None)
            except SyntaxError as error:
                raise UsageError(f"%lprofile: {error}") from None
            try:
                profiler = LineProfiler(
                    one("p", None, str),
                    include=include or None,
                    exclude=[_unquote(g) for g in opts.get("x", [])] or None,
                )
                profiler.enable()
            except (ValueError, TypeError, RuntimeError) as error:
                raise UsageError(str(error)) from None
            failure: BaseException | None = None
            value = None
            try:
                value = prepared.run()
            except BaseException as error:  # the user's: raised again once the tables are out
                failure = error
            finally:
                profiler.stop_recording()
            errors: list[str] = []
            stats = profiler.collect_stats(errors)
            text = profiler.nothing_recorded(hint=HINT_MAGIC)
            if text is None and chosen:
                keys = [StatsKey.of(c) for c in chosen]
                shown = {key: stats[key] for key in keys if key in stats}
                parts = [render_stats(shown, min_time_us=min_us, sort_by=sort_by, root=profiler.project_folder)]
                parts = parts if shown else []
                for c in chosen:
                    if StatsKey.of(c) not in stats:
                        where = f"{printable(c.co_filename)}:{c.co_firstlineno}"
                        parts.append(f"Function: {printable(c.co_qualname)} at {where}: did not run\n\n")
                text = "".join(parts) + render_global(
                    stats,
                    top_n=top_n,
                    min_time_us=min_us,
                    sort_by=sort_by,
                    root=profiler.project_folder,
                    total_ns=profiler.wall_time_ns,
                )
            elif text is None:
                text = render_report(
                    stats,
                    functions=functions,
                    top_n=top_n,
                    min_time_us=min_us,
                    sort_by=sort_by,
                    root=profiler.project_folder,
                    total_ns=profiler.wall_time_ns,
                )
            print(text, end="")
            for message in errors:
                print(f"lineprofiler: {printable(message)}")
            if "o" in opts:
                path = profiler.dump(_unquote(opts["o"][-1]))
                print(f"Saved to {printable(str(path))}")
            if failure is not None:
                raise failure
            if "r" in opts:
                return profiler
            return value

        def _function(self, name: str, usage_error: Any) -> CodeType:
            """The code of the function ``-f name`` names (an expression in the user's namespace)."""
            shell = self.shell
            assert shell is not None
            try:
                obj = eval(name, shell.user_ns)
            except Exception as error:
                raise usage_error(f"-f {name}: {type(error).__name__}: {error}") from None
            code = code_of(obj)
            if code is None:
                raise usage_error(f"-f {name}: not a function or method ({type(obj).__name__})")
            return code

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
