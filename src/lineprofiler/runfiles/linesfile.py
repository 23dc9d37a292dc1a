"""The line-stats file: what one process's line profile holds, written and read only here.

A line-stats file is the saved result of one :class:`lineprofiler.LineProfiler` in one process:
``profiler.dump(path)`` writes one, ``lineprofiler run -o`` writes one, and every child process
profiled with ``children=True`` writes its own into the output directory. This module builds,
validates and reads them (:mod:`.linesmerge` merges them); it imports no C module and nothing
from the profilers, so ``lineprofiler view`` and the report read these files where only the
files are.

Schema version 2, a JSON object (UTF-8); version 1 files (no self time, calls or regions) are
read as well. Keys marked * are required; readers ignore keys they
do not know, so later versions may add keys without a schema break. A file whose
``schema_version`` is newer than :data:`SCHEMA_VERSION` is refused with a clear reason. Times
are integer nanoseconds.

``schema_version``\\* (int), ``kind``\\* (``"lineprofiler-lines"``)

``process``\\* object, who wrote the file:
    ``pid``\\* int, ``parent_pid``\\* int, ``host``\\* str, ``argv``\\* list of str,
    ``python``\\* str (``"3.12.1"``), ``role``: str or null (``LINEPROFILER_ROLE``, or set by
    the program), ``label``: str or null (what the process is when it has no role: ``"main"``
    for the process that started profiling, a multiprocessing process kind such as
    ``"SpawnPoolWorker"``, or the script a subprocess ran), ``start_unix_ns``\\* int,
    ``end_unix_ns``: int or null, ``status``\\* str: ``"started"`` (written when a child began,
    and by ``lineprofiler run -o`` when the run began, before there was anything to say; a file
    still saying so was left by a process that ended without writing: see
    :data:`UNFINISHED_REASON`), ``"exited"`` (written at exit, in ``os._exit`` or before an
    exec), ``"signalled"`` (written from a signal: one whose default action ended the process,
    or a snapshot on SIGTERM, SIGUSR1 or SIGHUP handled by the program), ``"dumped"`` (an
    explicit ``dump()``) or ``"stopped"`` (the profiler was switched off); ``signal``: str or
    null; ``exit_code``: int or null (the status the process exited with, when known: the
    runner's, ``os._exit``'s; null at an exec).
    A file written by an accounting ``Profiler(backend="lines")`` window also has ``run_id``:
    str, ``attempt``: int and ``uuid``: str (those of the worker file of the same process, so
    a report keeps only the files of the attempt it shows), and ``rank``: int or null.

``profile``\\* object, how it was profiled:
    ``project_folder``\\* str, ``include`` / ``exclude``: list of str, ``clock``\\* str
    (``"tsc"`` or ``"monotonic"``), ``wall_ns``\\* int (time the profiler was enabled),
    ``codes_outside``: int or null (code objects that ran outside the project while enabled),
    ``children``: bool (child processes were profiled too). ``max_regions``: int, the cap of
    distinct region names the profiler kept, and ``regions_overflowed``: int, the entries of
    names past it, which are in the region ``"(overflow)"`` (both added within version 2).
    ``window``: object, present when an accounting ``backend="lines"`` window wrote the file:
    ``phase``\\* str (the phase whose entries open and close it), ``start``\\* and ``stop``\\*
    int (``backend_window``: entries ``start`` to ``stop - 1`` are profiled),
    ``started_entry`` / ``stopped_entry``: int or null, ``entries``: int or null (entries
    that ran with the window open, a partial window's last one cut short), ``started_unix_ns`` /
    ``stopped_unix_ns``: int or null, ``partial``\\* bool (the process ended, was signalled or
    closed its profiler while the window was open: fewer entries than asked for).

``files``\\* object: source file name (as in ``co_filename``) -> object with ``sha256``: str or
    null (the hash of the source text the process saw; null when it had none). Two processes
    whose hashes of one file differ ran different code under the same line numbers: the merge
    keeps them apart rather than adding them. ``changed``: true when the file changed after the
    process first ran code from it: its lines' ``source`` is null and readers say "source
    changed since the run" (added within version 2: absent in older files, ignored by older
    readers).

``functions``\\* list of objects, one per function (code object key) that recorded a line:
    ``file``\\* str, ``first_line``\\* int, ``qualname``\\* str, ``lines``\\* list of
    ``[line, hits, time_ns, source, self_ns]`` (``source`` is the line's text, or null when it
    could not be read; ``self_ns``, since version 2, is the line's time less that of the
    project's functions it called, or null when not measured; version 1 rows have four
    items), ``calls``: int or null (since version 2: how many times the function ran).

``regions``: list of objects (since version 2), one per region that recorded a line
    (``LineProfiler.region(name)``): ``name``\\* str, ``functions``\\* list as ``functions``
    above, holding what ran while that region was the innermost open one on its thread;
    ``entries``: int or null, how many times it was entered while recording.

``errors``: list of str, failures inside the profiler that were recorded instead of raised.

Files of a profiled process tree are named ``l_<host>_<pid>_<uuid8>.json`` (an accounting run
directory keeps its windows' files as ``lines/<host>/l_<run>_<pid>_<uuid8>.json``) (see
:func:`lines_file_name`) and are written by temp file + rename, so a reader sees a whole file or
none. A read file is a :class:`~.linesrecords.LinesFile`; :func:`~.linesmerge.merge_lines` adds a
list of them together by (file, function, line). Both are importable from here too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._bounded_read import read_regular
from ..errors import InputError
from . import tree, validation
from .layout import sanitize_component, write_atomic
from .linesmerge import MergedFunction, MergedLine, MergedLines, SourceConflict, merge_lines
from .linesrecords import MAX_REGIONS, REGIONS_OVERFLOW, FunctionRecord, LineRecord, LinesFile, RegionRecord
from .output import write_output
from .validation import INT_LIMIT, NONE, Field, is_count, is_text, is_text_list

__all__ = [
    "KIND",
    "MAX_REGIONS",
    "REGIONS_OVERFLOW",
    "SCHEMA_VERSION",
    "STATUSES",
    "UNFINISHED_REASON",
    "FunctionRecord",
    "LineRecord",
    "LinesFile",
    "LinesFileError",
    "MergedFunction",
    "RegionRecord",
    "MergedLine",
    "MergedLines",
    "NewerSchemaError",
    "SourceConflict",
    "build_document",
    "find_lines_files",
    "lines_file_name",
    "load_lines",
    "merge_lines",
    "parse_lines_bytes",
    "read_lines_file",
    "validate",
    "write_lines_file",
]

SCHEMA_VERSION = 2
KIND = "lineprofiler-lines"
STATUSES = ("started", "exited", "signalled", "dumped", "stopped")
#: Why a process may have left only its ``"started"`` file, for readers to say so: every ending
#: that Python sees writes the file (exit, an exception, ``os._exit``, an exec, a signal whose
#: default action ends the process), so what is left is what no process can catch.
UNFINISHED_REASON = (
    "it ended without writing its file: killed by SIGKILL (the OOM killer sends it too), crashed "
    "(a segfault, abort()), ended by a signal whose handler was put back to the default outside "
    "Python's signal module, or is still running"
)
#: A line-stats file larger than this is not read (``view``, ``load``); the report's limit is
#: :data:`lineprofiler.report.compute.blocks.lines.MAX_FILE_BYTES`.
MAX_FILE_BYTES = 256 * 1024 * 1024
_FILE_RE = re.compile(r"^l_.+_\d+_[0-9a-f]{8}\.json$")
#: How many levels of folders below a directory find_lines_files looks in (an accounting run
#: directory keeps them in ``lines/<host>/``).
_LEVELS_BELOW = 2


class LinesFileError(InputError):
    """A line-stats file that cannot be used; ``str()`` is a one-line reason with the path."""


class NewerSchemaError(LinesFileError):
    """A line-stats file written by a newer lineprofiler than this one."""


# -- writing ------------------------------------------------------------------------------


def _text(value: object) -> str:
    """Any str as text a JSON reader accepts: lone surrogates (undecodable file names and
    arguments) become backslash escapes."""
    s = str(value)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


#: One function for build_document: ``(file, first_line, qualname, lines[, calls])``, each line
#: ``(line, hits, time_ns, source[, self_ns])``; a left-out or None ``calls``/``self_ns`` is null.
FunctionRows = tuple[Any, ...]


def _optional_count(value: object) -> int | None:
    return None if value is None else max(0, int(value))  # type: ignore[call-overload]


def _function_objects(
    functions: Iterable[FunctionRows], hashes: Mapping[str, str | None], names: dict[str, str | None]
) -> list[dict[str, Any]]:
    funcs: list[dict[str, Any]] = []
    for file, first_line, qualname, lines, *more in functions:
        name = _text(file)
        names.setdefault(name, hashes.get(file))
        rows = [
            [
                int(row[0]),
                int(row[1]),
                max(0, int(row[2])),
                None if row[3] is None else _text(row[3]),
                _optional_count(row[4] if len(row) > 4 else None),
            ]
            for row in lines
        ]
        if rows:
            fn = {"file": name, "first_line": int(first_line), "qualname": _text(qualname), "lines": rows}
            fn["calls"] = _optional_count(more[0] if more else None)
            funcs.append(fn)
    return funcs


def build_document(
    *,
    process: Mapping[str, Any],
    profile: Mapping[str, Any],
    functions: Iterable[FunctionRows],
    files: Mapping[str, str | None] | None = None,
    errors: Iterable[str] = (),
    regions: Mapping[str, Iterable[FunctionRows]] | None = None,
    region_entries: Mapping[str, int] | None = None,
    changed: Iterable[str] = (),
) -> dict[str, Any]:
    """The document for one process. ``functions`` yields ``(file, first_line, qualname, lines,
    calls)`` with ``lines`` as ``(line, hits, time_ns, source, self_ns)`` (``calls`` and
    ``self_ns`` may be left out or None: not measured); ``files`` maps a file name to the sha256
    of its source (a file named by a function but missing here is written with a null hash);
    ``regions`` maps a region's name to its functions, in the same shape, and ``region_entries``
    to how often it was entered; ``changed`` names the files that changed since the run. Text is
    made safe for JSON; the result passes :func:`validate`."""
    names: dict[str, str | None] = {}
    hashes = dict(files or {})
    funcs = _function_objects(functions, hashes, names)
    region_list = []
    for region_name, region_functions in (regions or {}).items():
        region_funcs = _function_objects(region_functions, hashes, names)
        if region_funcs:
            entries = _optional_count((region_entries or {}).get(region_name))
            region_list.append({"name": _text(region_name), "entries": entries, "functions": region_funcs})
    changed_names = {_text(name) for name in changed}
    file_objects: dict[str, dict[str, Any]] = {}
    for name, digest in names.items():
        file_objects[name] = {"sha256": digest, "changed": True} if name in changed_names else {"sha256": digest}
    proc = {k: (_text(v) if isinstance(v, str) else v) for k, v in process.items()}
    proc["argv"] = [_text(a) for a in process.get("argv", [])]
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "process": proc,
        "profile": dict(profile),
        "files": file_objects,
        "functions": funcs,
        "regions": region_list,
        "errors": [_text(e) for e in errors],
    }


def lines_file_name(host: str, pid: int, uuid8: str) -> str:
    """``l_<host>_<pid>_<uuid8>.json``: unique per process even when pids repeat across hosts."""
    return f"l_{sanitize_component(host)}_{int(pid)}_{uuid8}.json"


def write_lines_file(
    path: str | os.PathLike[str],
    document: Mapping[str, Any],
    *,
    root: str | os.PathLike[str] | None = None,
    fsync: bool = False,
    named: bool = False,
) -> int:
    """Write ``document`` to ``path`` atomically (temp file + rename in the same folder); returns
    the bytes written. ``root``: the run directory, below which no link is followed and the
    folders are made (see :func:`~.layout.write_atomic`). ``named``: a path the user named
    (``run -o``, :meth:`~lineprofiler.LineProfiler.dump`), which may be a FIFO or a device to
    write into (:func:`~.output.write_output`). Raises OSError when it cannot be written."""
    data = json.dumps(document, separators=(",", ":"), allow_nan=False).encode("utf-8")
    if named:
        write_output(path, data)
    else:
        write_atomic(Path(path), data, root=root, fsync=fsync)
    return len(data)


# -- checking -----------------------------------------------------------------------------


#: The line-stats file's checks of its objects' fields: one line for any wrong value.
_CHECKER = validation.Checker(
    LinesFileError,
    validation.Wording(
        not_object="{path}: '{where}' is missing or not an object",
        missing="{path}: '{where}.{key}' is missing",
        wrong_type="{path}: '{where}.{key}' has the wrong type or is out of range",
        out_of_range="{path}: '{where}.{key}' has the wrong type or is out of range",
        bad_text="{path}: '{where}.{key}' has the wrong type or is out of range",
    ),
)
_INT = (int,)
_OPTIONAL_INT = (int, NONE)
_TEXT = (str,)
_OPTIONAL_TEXT = (str, NONE)
_FLAG = (bool,)

_PROCESS = (
    Field("pid", _INT, non_negative=True),
    Field("parent_pid", _INT, non_negative=True),
    Field("host", _TEXT),
    Field("argv", (list,), items=str),
    Field("python", _TEXT),
    Field("start_unix_ns", _INT, non_negative=True),
    Field("status", _TEXT),
    Field("role", _OPTIONAL_TEXT, required=False),
    Field("label", _OPTIONAL_TEXT, required=False),
    Field("end_unix_ns", _OPTIONAL_INT, required=False, non_negative=True),
    Field("signal", _OPTIONAL_TEXT, required=False),
    Field("exit_code", _OPTIONAL_INT, required=False),
    Field("run_id", _OPTIONAL_TEXT, required=False),
    Field("attempt", _OPTIONAL_INT, required=False, non_negative=True),
    Field("uuid", _OPTIONAL_TEXT, required=False),
    Field("rank", _OPTIONAL_INT, required=False),
)
_PROFILE = (
    Field("project_folder", _TEXT),
    Field("clock", _TEXT),
    Field("wall_ns", _INT, non_negative=True),
    Field("include", (list,), required=False, items=str),
    Field("exclude", (list,), required=False, items=str),
    Field("codes_outside", _OPTIONAL_INT, required=False, non_negative=True),
    Field("children", _FLAG, required=False),
    Field("max_regions", _OPTIONAL_INT, required=False, non_negative=True),
    Field("regions_overflowed", _OPTIONAL_INT, required=False, non_negative=True),
)
_WINDOW = (
    Field("phase", _TEXT),
    Field("start", _INT, non_negative=True),
    Field("stop", _INT, non_negative=True),
    Field("partial", _FLAG),
    Field("started_entry", _OPTIONAL_INT, required=False, non_negative=True),
    Field("stopped_entry", _OPTIONAL_INT, required=False, non_negative=True),
    Field("entries", _OPTIONAL_INT, required=False, non_negative=True),
    Field("started_unix_ns", _OPTIONAL_INT, required=False, non_negative=True),
    Field("stopped_unix_ns", _OPTIONAL_INT, required=False, non_negative=True),
)


def _optional_text(value: object) -> bool:
    return value is None or is_text(value)


def _shown(value: object, limit: int = 60) -> str:
    if isinstance(value, (str, int, float, bool, type(None))):
        return ascii(value)[:limit]
    return type(value).__name__


def validate(document: Any, path: object = "<document>") -> dict[str, Any]:
    """Check a document; raise LinesFileError (one line naming ``path``) when it is unusable,
    NewerSchemaError when a newer lineprofiler wrote it. Returns the document."""
    if not isinstance(document, dict):
        raise LinesFileError(f"{path}: not a line-stats file (the top level is not an object)")
    if document.get("kind") != KIND:
        raise LinesFileError(f"{path}: not a line-stats file (kind is {_shown(document.get('kind'))})")
    version = document.get("schema_version")
    if type(version) is not int or version < 1:
        raise LinesFileError(f"{path}: invalid schema_version {_shown(version, 40)}")
    if version > SCHEMA_VERSION:
        shown = version if version < INT_LIMIT else "too large"
        raise NewerSchemaError(
            f"{path}: written with schema version {shown}, this lineprofiler reads up to "
            f"{SCHEMA_VERSION}; upgrade lineprofiler to read it"
        )
    process = _CHECKER.check(document.get("process"), "process", _PROCESS, path)
    if process["status"] not in STATUSES:
        raise LinesFileError(f"{path}: 'process.status' is {_shown(process['status'])}, not one of {STATUSES}")
    profile = _CHECKER.check(document.get("profile"), "profile", _PROFILE, path)
    if "window" in profile:
        _CHECKER.check(profile["window"], "profile.window", _WINDOW, path)
    files = document.get("files")
    if not isinstance(files, dict):
        raise LinesFileError(f"{path}: 'files' is missing or not an object")
    for name, entry in files.items():
        if not is_text(name) or not isinstance(entry, dict) or not _optional_text(entry.get("sha256")):
            raise LinesFileError(f"{path}: 'files' holds a malformed entry ({_shown(name)})")
    _check_functions(document.get("functions"), "functions", version, path)
    regions = document.get("regions", [])
    if not isinstance(regions, list):
        raise LinesFileError(f"{path}: 'regions' is not a list")
    for i, region in enumerate(regions):
        if (
            not isinstance(region, dict)
            or not is_text(region.get("name"))
            or not _optional_count_ok(region.get("entries"))
        ):
            raise LinesFileError(f"{path}: 'regions[{i}]' is malformed (name, functions)")
        _check_functions(region.get("functions"), f"regions[{i}].functions", version, path)
    errors = document.get("errors", [])
    if not is_text_list(errors):
        raise LinesFileError(f"{path}: 'errors' is not a list of text")
    return document


def _optional_count_ok(value: object) -> bool:
    return value is None or is_count(value)


def _check_functions(functions: object, where: str, version: int, path: object) -> None:
    """LinesFileError unless ``functions`` is a list of function objects of schema ``version``
    (rows of four items in version 1, five from version 2)."""
    if not isinstance(functions, list):
        raise LinesFileError(f"{path}: '{where}' is missing or not a list")
    row_len = 4 if version == 1 else 5
    for i, fn in enumerate(functions):
        at = f"{where}[{i}]"
        if (
            not isinstance(fn, dict)
            or not is_text(fn.get("file"))
            or not is_count(fn.get("first_line"))
            or not is_text(fn.get("qualname"))
            or not isinstance(fn.get("lines"), list)
            or not _optional_count_ok(fn.get("calls"))
        ):
            raise LinesFileError(f"{path}: '{at}' is malformed (file, first_line, qualname, lines)")
        for row in fn["lines"]:
            if (
                type(row) is not list
                or len(row) != row_len
                or not is_count(row[0])
                or not is_count(row[1])
                or not is_count(row[2])
                or not _optional_text(row[3])
                or (row_len == 5 and not _optional_count_ok(row[4]))
            ):
                raise LinesFileError(f"{path}: '{at}.lines' holds a malformed row ({_shown(row)})")


def _function_records(functions: list[dict[str, Any]]) -> tuple[FunctionRecord, ...]:
    return tuple(
        FunctionRecord(
            fn["file"],
            fn["first_line"],
            fn["qualname"],
            tuple(LineRecord(r[0], r[1], r[2], r[3], r[4] if len(r) > 4 else None) for r in fn["lines"]),
            fn.get("calls"),
        )
        for fn in functions
    )


# -- reading ------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a line-stats file may hold")


def parse_lines_bytes(raw: bytes, path: str | os.PathLike[str] | None = None) -> LinesFile:
    """Parse and check the bytes of one file; raise LinesFileError when unusable."""
    shown = path if path is not None else "<bytes>"
    if not raw:
        raise LinesFileError(f"{shown}: empty file")
    try:
        document = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise LinesFileError(f"{shown}: corrupt or truncated JSON ({error.__class__.__name__})") from None
    document = validate(document, shown)
    functions = _function_records(document["functions"])
    regions = tuple(
        RegionRecord(region["name"], _function_records(region["functions"]), region.get("entries"))
        for region in document.get("regions", [])
    )
    files = {name: entry.get("sha256") for name, entry in document["files"].items()}
    changed = frozenset(name for name, entry in document["files"].items() if entry.get("changed") is True)
    for fn in (*functions, *(f for region in regions for f in region.functions)):
        files.setdefault(fn.file, None)
    return LinesFile(
        path=Path(path) if path is not None else None,
        process=document["process"],
        profile=document["profile"],
        files=files,
        functions=functions,
        errors=tuple(document.get("errors", ())),
        regions=regions,
        changed=changed,
    )


def read_lines_file(path: str | os.PathLike[str]) -> LinesFile:
    """Read and check one file; raise LinesFileError (one line) when it is unusable: also a
    FIFO, a device or a file larger than :data:`MAX_FILE_BYTES`, which are never read."""
    path = Path(path)
    try:
        raw = read_regular(path, MAX_FILE_BYTES)
    except IsADirectoryError:
        raise LinesFileError(f"{path}: is a directory") from None
    except OSError as error:
        raise LinesFileError(f"{path}: cannot read: {error.strerror or error}") from None
    return parse_lines_bytes(raw, path)


def find_lines_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The process files (``l_<host>_<pid>_<uuid8>.json``) in ``folder`` and up to two levels
    below it, sorted; temp files of a write in progress are not included. Raises LinesFileError
    when ``folder`` cannot be listed."""
    root = Path(folder)
    try:
        listed = list(tree.walk(root, _LEVELS_BELOW))
    except OSError as error:
        raise LinesFileError(f"{root}: cannot list: {error.strerror or error}") from None
    return [Path(entry.path) for _, entry, _ in listed if _FILE_RE.match(entry.name) and _is_file(entry)]


def _is_file(entry: os.DirEntry[str]) -> bool:
    """A regular file, or a link to one; False for what cannot be told (a loop of links)."""
    try:
        return entry.is_file()
    except OSError:
        return False


def load_lines(path: str | os.PathLike[str]) -> tuple[list[LinesFile], list[str]]:
    """Every usable file at ``path`` (one file, or a directory searched with
    :func:`find_lines_files`) and one line per file that could not be used.

    A single file that cannot be used raises LinesFileError, and so does a directory without
    any usable file. In a directory a bad file costs that process, not the whole view; a file
    from a newer lineprofiler raises NewerSchemaError all the same, since what it says about
    the run is unknown.
    """
    path = Path(path)
    if not path.exists():
        raise LinesFileError(f"{path}: no such file or directory")
    if not path.is_dir():
        return [read_lines_file(path)], []
    names = find_lines_files(path)
    loaded: list[LinesFile] = []
    problems: list[str] = []
    for name in names:
        try:
            loaded.append(read_lines_file(name))
        except NewerSchemaError:
            raise
        except LinesFileError as error:
            problems.append(str(error))
    if not loaded:
        if problems:
            raise LinesFileError(f"{path}: no usable line-stats file ({problems[0]})")
        raise LinesFileError(f"{path}: no line-stats files (l_<host>_<pid>_<uuid8>.json) in this directory")
    return loaded, problems
