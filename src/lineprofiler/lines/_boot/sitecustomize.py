"""Started by lineprofiler in the child processes of a profiled run, through PYTHONPATH.

``LineProfiler(children=True)`` and ``lineprofiler run --children`` put this folder first on
PYTHONPATH and describe the run in ``LINEPROFILER_LINES``. Python imports ``sitecustomize`` at
startup, so every Python child of the run comes here first. What it does:

1. runs the ``sitecustomize`` this one shadows, if there is one further on ``sys.path``;
2. takes this folder off ``sys.path`` (the variable stays, for grandchildren);
3. starts the child's line profiler (``lineprofiler.lines.child_start.start_from_env``), or, when
   this interpreter cannot import lineprofiler, leaves a file that says so in the output folder.

Under ``lineprofiler record`` (``LINEPROFILER_RECORD`` set) it starts the child's accounting
profiler instead (``lineprofiler.accounting.record.start_from_env``).

It never raises: a child that cannot be profiled runs unprofiled.
"""

import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))


def _is_here(entry):
    return os.path.realpath(entry or os.curdir) == _HERE


def _run_shadowed():
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if not _is_here(p)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    if spec.origin and os.path.dirname(os.path.realpath(spec.origin)) == _HERE:
        return  # ourselves under another name: nothing to chain to
    module = importlib.util.module_from_spec(spec)
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module  # `import sitecustomize` gives theirs from now on
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        # What site.py itself prints for a failing sitecustomize.
        sys.stderr.write(
            "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(error).__name__, error)
        )


def _leave_note(reason):
    """A "started" file saying why this process is not profiled, written with the standard
    library alone, in the format of lineprofiler.runfiles.linesfile (schema 1)."""
    import json
    import re
    import socket
    import time
    import uuid

    config = json.loads(os.environ["LINEPROFILER_LINES"])
    folder = str(config["output_dir"])
    host = os.environ.get("LINEPROFILER_HOST") or socket.gethostname() or "localhost"
    safe_host = re.sub(r"[^A-Za-z0-9._-]+", "_", host).strip("._")[:64] or "unknown"
    name = "l_%s_%d_%s.json" % (safe_host, os.getpid(), uuid.uuid4().hex[:8])
    argv = [str(a).encode("utf-8", "backslashreplace").decode("utf-8") for a in sys.argv]
    document = {
        "schema_version": 1,
        "kind": "lineprofiler-lines",
        "process": {
            "pid": os.getpid(),
            "parent_pid": os.getppid(),
            "host": host,
            "argv": argv,
            "python": ".".join(str(v) for v in sys.version_info[:3]),
            "role": os.environ.get("LINEPROFILER_ROLE") or None,
            "label": os.path.basename(argv[0]) if argv and argv[0] not in ("", "-c") else "python -c",
            "start_unix_ns": time.time_ns(),
            "end_unix_ns": None,
            "status": "started",
            "signal": None,
            "exit_code": None,
        },
        "profile": {"project_folder": str(config.get("project_folder", "")), "clock": "none", "wall_ns": 0},
        "files": {},
        "functions": [],
        "errors": ["not profiled: %s (interpreter %s)" % (reason, sys.executable)],
    }
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, ".tmp_" + name)
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    os.replace(tmp, os.path.join(folder, name))


def _boot():
    try:
        _run_shadowed()
    except Exception:
        pass
    sys.path[:] = [p for p in sys.path if not _is_here(p)]
    if os.environ.get("LINEPROFILER_RECORD"):  # lineprofiler record: an accounting profiler
        try:
            from lineprofiler.accounting import record

            record.start_from_env()
        except Exception:
            pass
    if not os.environ.get("LINEPROFILER_LINES"):
        return
    try:
        from lineprofiler.lines import child_start
    except Exception as error:
        try:
            _leave_note("lineprofiler cannot be imported (%s: %s)" % (type(error).__name__, error))
        except Exception:
            pass
        return
    try:
        child_start.start_from_env()
    except Exception:
        pass


_boot()
