"""``lineprofiler record``: run a script or module as ``python`` would, with an accounting
:class:`~.profiler.Profiler` on in it and in every Python process it starts.

The program runs in this process by the machinery of ``lineprofiler run``
(:mod:`lineprofiler.lines.runner`): a fresh ``__main__``, ``sys.argv`` and ``sys.path[0]`` as
Python sets them, its output untouched, and the exit status Python would give (``sys.exit(n)``,
1 for an uncaught exception, and an end by SIGINT after Ctrl-C). The profiler's role is
``--role``, else the script's stem (the module's last part); it steps aside for a profiler the
program makes itself, as a fork child's inherited one does.

Children: a fork child keeps the profiler (it becomes the child's own, as always; a DataLoader
worker's takes role ``dataloader`` under ``--auto torch``). A spawned Python child (a
multiprocessing ``spawn``/``forkserver`` child, ``subprocess`` running Python) finds
``LINEPROFILER_RECORD`` and the boot folder first on ``PYTHONPATH`` (the one ``run --children``
uses): its ``sitecustomize`` calls :func:`start_from_env`, which starts a profiler in that run
(the run directory and id come through the environment every enabled profiler exports). Not
reached: interpreters started with ``-I``, ``-E`` or ``-S``, or given an environment of their own.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: What a spawned child of a recorded program reads: ``{"role": ..., "auto": ...}``.
ENV_RECORD = "LINEPROFILER_RECORD"
#: The profiler a child started from the environment made (kept alive for the process's life).
_child_profiler: Any = None


def _role_of(script: str | None, module: str | None) -> str:
    if module is not None:
        return module.rsplit(".", 1)[-1] or "main"
    stem = os.path.splitext(os.path.basename(os.path.normpath(script or "")))[0]
    return stem or "main"


def _export_children_env(role: str, auto: str | None) -> dict[str, str | None]:
    """Set what a spawned child needs; returns the variables' values before, to restore."""
    from ..lines.children import BOOT_DIR

    saved = {name: os.environ.get(name) for name in (ENV_RECORD, "PYTHONPATH")}
    os.environ[ENV_RECORD] = json.dumps({"role": role, "auto": auto})
    path = os.environ.get("PYTHONPATH", "")
    if BOOT_DIR not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = BOOT_DIR + (os.pathsep + path if path else "")
    return saved


def _restore_env(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def record(
    script: str | None, module: str | None, args: list[str], *, run_dir: str | None, role: str | None,
    auto: str | None,
) -> int:
    """Run the program recorded; returns its exit status. ``InputError`` for bad input."""
    from ..lines import runner
    from .profiler import Profiler

    target = runner._script_target(script) if script is not None else runner._module_target(module or "")
    role = role or _role_of(script, module)
    output = runner._Output()
    saved_env = _export_children_env(role, auto)
    profiler = Profiler(run_dir, role, enabled=True, auto=auto)
    profiler._inherited = True  # a profiler the program makes itself takes its place, unused
    saved_argv, saved_path0, saved_main = list(sys.argv), (sys.path[0] if sys.path else None), sys.modules["__main__"]
    sys.argv[:] = [target.argv0, *args]
    if sys.path:
        sys.path[0] = target.path0
    else:
        sys.path.insert(0, target.path0)
    status, interrupted = 0, False
    pid = os.getpid()
    try:
        if module is not None:
            runner._check_module(module)
        try:
            target.run()
        except SystemExit as error:
            status = runner._exit_status(error, output)
        except KeyboardInterrupt as error:
            runner._print_exception(error)
            status, interrupted = 130, True
        except BaseException as error:
            runner._print_exception(error)
            status = 1
        try:
            runner._wait_for_threads()
        except KeyboardInterrupt:
            status, interrupted = 130, True
    finally:
        if os.getpid() == pid:
            profiler.close()
            _restore_env(saved_env)
        sys.argv[:] = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        sys.modules["__main__"] = saved_main
    if os.getpid() != pid:
        return status  # a child the program forked that ran on to the end: it exits as Python would
    where = profiler.run_dir
    output.say(f"lineprofiler: recorded into {where} (lineprofiler report {where})")
    if interrupted:
        runner.end_by_sigint()
    return status


def _child_role(parent_role: str) -> str:
    """A spawned child runs a script of its own (its stem) or multiprocessing's ``-c`` (the
    parent's role)."""
    argv = list(getattr(sys, "orig_argv", []))[1:]
    while argv and argv[0].startswith("-") and argv[0] not in ("-c", "-m"):
        argv.pop(0)
    if not argv or argv[0] == "-c":
        return parent_role
    if argv[0] == "-m":
        return _role_of(None, argv[1]) if len(argv) > 1 else parent_role
    return _role_of(argv[0], None)


def start_from_env() -> None:
    """Called at interpreter startup by the boot ``sitecustomize`` where ``LINEPROFILER_RECORD``
    is set: this process is recorded for its whole life. Never raises."""
    text = os.environ.get(ENV_RECORD)
    if not text:
        return
    try:
        config = json.loads(text)
        from ..lines.child_start import _mp_helper_kind

        kind = _mp_helper_kind()
        if kind == "helper":
            return  # multiprocessing's resource tracker: no program code runs there
        if kind == "forkserver":
            from .. import _lifecycle

            # The server runs no program code; each child it forks is recorded from its start.
            _lifecycle.at_fork(after_in_child=lambda: _start_child(config))
            return
        _start_child(config)
    except Exception as error:  # noqa: BLE001 - a child that cannot be recorded runs unrecorded
        print(f"lineprofiler: pid {os.getpid()} is not recorded: {error}", file=sys.stderr)


def _start_child(config: dict[str, Any]) -> None:
    global _child_profiler  # noqa: PLW0603 - one per process
    if _child_profiler is not None and _child_profiler.identity is not None:
        if _child_profiler.identity.pid == os.getpid():
            return
    try:
        from .profiler import Profiler

        profiler = Profiler(role=_child_role(str(config.get("role") or "main")), auto=config.get("auto"))
        profiler._inherited = True  # as in the recorded program: the program's own takes its place
        _child_profiler = profiler
    except Exception as error:  # noqa: BLE001 - a child that cannot be recorded runs unrecorded
        print(f"lineprofiler: pid {os.getpid()} is not recorded: {error}", file=sys.stderr)
