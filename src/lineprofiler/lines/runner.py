"""``lineprofiler run``: run a script or module as ``python`` would, line-profiled, then print.

The target runs in this process exactly as ``python script.py args`` / ``python -m mod args``
runs it: a fresh ``__main__`` module, ``sys.argv`` as Python sets it, ``sys.path[0]`` the
script's folder (the working directory for ``-m``), ``if __name__ == "__main__":`` true, and the
exit status Python would give (``sys.exit(n)``, 1 for an uncaught exception, 130 for Ctrl-C).
Non-daemon threads are waited for, as at interpreter exit, before the tables are printed;
``atexit`` handlers run after them, unprofiled.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import os
import runpy
import shutil
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..runfiles import linesfile
from .project import find_project_root
from .render import HINT_CLI, render_report

__all__ = ["RunError", "RunOptions", "run"]

_OWN_PACKAGE = str(Path(__file__).resolve().parent.parent)


class RunError(InputError):
    """Bad input to ``run``: one line for stderr, exit status 2."""


@dataclass
class RunOptions:
    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)
    project: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    top: int = 20
    functions: int | None = 10
    min_us: float = 0.0
    sort: str = "time"
    output: str | None = None
    children: bool = False


@dataclass
class _Target:
    run: Callable[[], Any]
    argv0: str
    path0: str
    default_project: Path


def _script_target(script: str) -> _Target:
    path = Path(script)
    if not path.exists():
        raise RunError(f"can't open file {os.path.abspath(script)!r}: no such file or directory")
    real = Path(os.path.realpath(script))
    if real.is_dir() or (real.suffix != ".py" and _is_zip(real)):
        # A folder or zip with __main__.py, as `python folder/` runs it.
        if real.is_dir() and not (real / "__main__.py").exists():
            raise RunError(f"can't find '__main__' module in {os.path.abspath(script)!r}")
        folder = real if real.is_dir() else real.parent
        return _Target(
            run=lambda: runpy.run_path(str(path), run_name="__main__"),
            argv0=script,
            path0=str(path),
            default_project=find_project_root(folder),
        )
    try:
        source = real.read_bytes()
    except OSError as error:
        raise RunError(f"can't open file {os.path.abspath(script)!r}: {error.strerror or error}") from None
    filename = os.path.abspath(script)

    def execute() -> None:
        code = compile(source, filename, "exec", dont_inherit=True)
        main = types.ModuleType("__main__")
        main.__dict__.update(
            __file__=filename,
            __builtins__=builtins,
            __loader__=importlib.machinery.SourceFileLoader("__main__", filename),
            __spec__=None,
            __package__=None,
            __cached__=None,
        )
        sys.modules["__main__"] = main
        exec(code, main.__dict__)

    return _Target(run=execute, argv0=script, path0=str(real.parent), default_project=find_project_root(real.parent))


def _is_zip(path: Path) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _module_target(module: str) -> _Target:
    if not module or module.startswith(".") or not all(part.isidentifier() for part in module.split(".")):
        raise RunError(f"no module named {module!r}")
    cwd = os.getcwd()
    top = module.split(".")[0]
    # Where the top package lies, found without importing anything: the default project.
    spec = importlib.machinery.PathFinder.find_spec(top, [cwd, *sys.path[1:]])
    default = find_project_root(cwd)
    if spec is not None:
        if spec.submodule_search_locations:
            where = Path(list(spec.submodule_search_locations)[0])
            root = find_project_root(where)
            default = root if (root / ".git").exists() else where
        elif spec.origin:
            where = Path(spec.origin).parent
            root = find_project_root(where)
            default = root if (root / ".git").exists() else where

    def execute() -> None:
        runpy.run_module(module, run_name="__main__", alter_sys=True)

    return _Target(run=execute, argv0=module, path0=cwd, default_project=default)


def _check_module(module: str) -> None:
    """RunError when ``python -m module`` would not find it (parents are imported, as there)."""
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(module + ".__main__")
            if spec is None:
                raise RunError(f"no module named {module}.__main__; {module!r} is a package and cannot be run")
    except (ImportError, ValueError) as error:
        raise RunError(f"no module named {module!r} ({error})") from None
    if spec is None:
        raise RunError(f"no module named {module!r}")


def _check_output(opts: RunOptions) -> tuple[Path | None, bool]:
    """(path, is_directory) for -o, after checking it can be written; RunError if not."""
    if opts.output is None:
        return None, False
    path = Path(os.path.abspath(opts.output))
    as_dir = opts.children or path.is_dir() or opts.output.endswith(("/", os.sep))
    if as_dir:
        if path.exists() and not path.is_dir():
            raise RunError(f"-o {opts.output}: --children writes one file per process, so -o must be a directory")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunError(f"-o {opts.output}: cannot create the directory: {error.strerror or error}") from None
        probe_dir = path
    else:
        probe_dir = path.parent
        if not probe_dir.is_dir():
            raise RunError(f"-o {opts.output}: the folder {str(probe_dir)!r} does not exist")
        if path.is_dir():
            raise RunError(f"-o {opts.output}: is a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".tmp_probe_", dir=probe_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise RunError(f"-o {opts.output}: cannot write there: {error.strerror or error}") from None
    return path, as_dir


def _trim(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without the runner's own frames at its start."""
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename).startswith(_OWN_PACKAGE + os.sep):
        tb = tb.tb_next
    return tb


def _print_exception(error: BaseException) -> None:
    """As Python prints an uncaught exception (through sys.excepthook), without our frames."""
    tb = _trim(error.__traceback__)
    error.__traceback__ = tb  # the default hook prints the exception's own traceback
    try:
        sys.excepthook(type(error), error, tb)
    except Exception:
        import traceback

        traceback.print_exception(type(error), error, tb)


def _exit_status(error: SystemExit) -> int:
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _wait_for_threads() -> None:
    """As the interpreter does at exit: wait for the non-daemon threads the program started."""
    me = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not me and not thread.daemon and thread.is_alive():
            thread.join()


def run(opts: RunOptions) -> int:
    """Run the target profiled and print; returns the exit status. RunError for bad input."""
    from .profiler import LineProfiler

    target = _script_target(opts.script) if opts.script is not None else _module_target(opts.module or "")
    out_path, out_is_dir = _check_output(opts)
    project = opts.project if opts.project is not None else target.default_project
    try:
        profiler = LineProfiler(project, include=opts.include or None, exclude=opts.exclude or None)
    except (ValueError, TypeError) as error:
        raise RunError(str(error)) from None
    profiler._yields = True  # the program's own LineProfiler, if it has one, takes precedence
    temp_dir: str | None = None
    if opts.children and out_path is None:
        temp_dir = tempfile.mkdtemp(prefix="lineprofiler-run-")
        out_path, out_is_dir = Path(temp_dir), True
    session = None
    if out_is_dir:
        from .children import Config, Session

        assert out_path is not None
        config = Config(
            output_dir=str(out_path),
            project_folder=str(profiler.project_folder),
            include=profiler._filter.include,
            exclude=profiler._filter.exclude,
            root_pid=os.getpid(),
        )
        session = Session(profiler, config, root=True, label="main", export_env=opts.children)
    saved_argv, saved_path0, saved_main = list(sys.argv), (sys.path[0] if sys.path else None), sys.modules["__main__"]
    sys.argv[:] = [target.argv0, *opts.args]
    if sys.path:
        sys.path[0] = target.path0
    else:
        sys.path.insert(0, target.path0)
    status = 0
    ran = False
    written: Path | None = None
    runner_pid = os.getpid()
    try:
        profiler.enable()
        if opts.module is not None:
            _check_module(opts.module)  # imports its parent packages, as python -m does: profiled
        if session is not None:
            session.begin()
        ran = True
        try:
            target.run()
        except SystemExit as error:
            status = _exit_status(error)
        except KeyboardInterrupt as error:
            _print_exception(error)
            status = 130
        except BaseException as error:
            _print_exception(error)
            status = 1
        try:
            _wait_for_threads()
        except KeyboardInterrupt:
            status = 130
    finally:
        profiler._stop_all()
        try:  # written while sys.argv is still the program's: the file records it
            if session is not None:
                written = session.end("exited", exit_code=status)
            elif out_path is not None and ran and os.getpid() == runner_pid:
                written = _write_one(profiler, out_path, status)
        finally:
            sys.argv[:] = saved_argv
            if saved_path0 is not None and sys.path:
                sys.path[0] = saved_path0
            sys.modules["__main__"] = saved_main
    if os.getpid() != runner_pid:
        # A child the program forked (os.fork) that ran on to the end of the program: it exits
        # as Python would; the tables and the saved file are the runner's, in the parent.
        return status
    sys.stdout.flush()
    _print_result(profiler, opts, out_path if out_is_dir else None)
    if written is not None and temp_dir is None:
        where = out_path if out_is_dir else written
        print(f"lineprofiler: saved to {where} (lineprofiler view {where})", file=sys.stderr)
    if temp_dir is not None:
        shutil.rmtree(temp_dir, ignore_errors=True)
    return status


def _write_one(profiler: Any, path: Path, status: int) -> Path | None:
    from .saved import document_from_stats, process_info

    errors: list[str] = []
    try:
        stats = profiler._collect_quietly(errors)
        process = process_info("exited", start_unix_ns=profiler._created_unix_ns, label="main", exit_code=status)
        document = document_from_stats(stats, process=process, profile=profiler._profile_info(), errors=errors)
        linesfile.write_lines_file(path, document)
        return path
    except OSError as error:
        print(f"lineprofiler: could not save to {path}: {error.strerror or error}", file=sys.stderr)
        return None


def _print_result(profiler: Any, opts: RunOptions, folder: Path | None) -> None:
    out = sys.stdout
    errors: list[str] = []
    if opts.children and folder is not None:
        from .saved import SavedProfile
        from .view import ViewOptions, render_processes, render_view

        try:
            saved = SavedProfile.load(folder)
        except linesfile.LinesFileError as error:
            print(f"lineprofiler: {error}", file=sys.stderr)
            return
        nothing = profiler.nothing_recorded(hint=HINT_CLI) if not saved.get_stats() else None
        if nothing is not None:
            out.write("\n" + render_processes(saved) + "\n" + nothing)
            return
        view = ViewOptions(top=opts.top, functions=opts.functions, min_us=opts.min_us, sort=opts.sort)
        out.write("\n" + render_view(saved, view))
        return
    stats = profiler._collect_quietly(errors)
    for message in errors:
        print(f"lineprofiler: {message}", file=sys.stderr)
    nothing = profiler.nothing_recorded(hint=HINT_CLI) if not stats else None
    if nothing is not None:
        out.write("\n" + nothing)
        return
    out.write(
        "\n"
        + render_report(
            stats,
            functions=opts.functions,
            top_n=opts.top,
            min_time_us=opts.min_us,
            sort_by=opts.sort,
            root=profiler.project_folder,
            total_ns=profiler.wall_time_ns,
        )
    )
