"""The commands of the line layer: ``run`` (a script line-profiled), ``view`` (saved profiles)
and ``attach`` (a running process, for a window)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .cli_output import EXIT_OK, PROG, UsageError, print_line, print_text, progress_for, write


def attach_command(args: argparse.Namespace) -> int:
    from .lines.attach import AttachOptions, attach

    options = AttachOptions(
        pid=args.pid,
        duration=args.duration,
        output=args.output,
        project_folder=args.project_folder,
        include=args.include,
        exclude=args.exclude,
        start_timeout=args.start_timeout,
        top=args.top,
        functions=args.functions,
        min_us=args.min_us,
        sort=args.sort,
    )
    return attach(options)


def _program(args: argparse.Namespace, command: str) -> tuple[str | None, str | None, list[str]]:
    """(script, module, args) from ``script.py args`` or ``-m module args``; UsageError if neither."""
    target = list(args.target or [])
    if target and target[0] == "--":
        target = target[1:]
    module: list[str] = list(args.module or [])
    if args.module is not None and not module:
        raise UsageError(f"{PROG} {command}: -m needs a module name (see {PROG} {command} --help)")
    if module and target:
        raise UsageError(f"{PROG} {command}: give a script or -m module, not both (see {PROG} {command} --help)")
    if not module and not target:
        raise UsageError(f"{PROG} {command}: give a script to run, or -m module (see {PROG} {command} --help)")
    if module:
        return None, module[0], module[1:]
    return target[0], None, target[1:]


def record_command(args: argparse.Namespace) -> int:
    from .accounting.record import record

    script, module, program_args = _program(args, "record")
    return record(script, module, program_args, run_dir=args.run_dir, role=args.role, auto=args.auto)


def run_command(args: argparse.Namespace) -> int:
    from .lines.runner import RunOptions, run

    script, module, program_args = _program(args, "run")
    opts = RunOptions(
        script=script,
        module=module,
        args=program_args,
        project=args.project,
        include=args.include,
        exclude=args.exclude,
        top=args.top,
        functions=args.functions,
        min_us=args.min_us,
        sort=args.sort,
        output=args.output,
        children=args.children,
        html=None if args.html is None else os.path.abspath(args.html),
    )
    return run(opts)


def view_command(args: argparse.Namespace) -> int:
    from .lines.saved import SavedProfile
    from .lines.view import ViewOptions, render_view

    progress = progress_for(args)
    progress.update(f"reading the line profiles in {args.path}")
    try:
        saved = SavedProfile.load(args.path)
    finally:
        progress.close()
    if args.html is not None:
        return _view_html(args, saved)
    options = ViewOptions(
        top=args.top, functions=args.functions, min_us=args.min_us, sort=args.sort, by_role=args.by_role
    )
    print_text(render_view(saved, options), end="")
    return EXIT_OK


def _view_html(args: argparse.Namespace, saved: Any) -> int:
    from .lines.annotate import render_annotated
    from .lines.annotate.sources import file_hashes
    from .lines.view import render_processes

    if args.by_role:
        raise UsageError(f"{PROG} view: --by-role has no HTML page yet; give --html or --by-role")
    text = render_annotated(
        saved.get_stats(),
        title=f"lineprofiler view {args.path}",
        root=saved.project_folder,
        hashes=file_hashes(saved.processes, saved.merged.conflicts),
        wall_ns=saved.wall_time_ns if len(saved.processes) == 1 else None,
        preamble=render_processes(saved),
        shade=args.shade,
    )
    print_line(write(args.html, text, "html"))
    return EXIT_OK
