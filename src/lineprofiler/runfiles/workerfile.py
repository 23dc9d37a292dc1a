"""The worker file: one schema, built, written, validated and read in this module alone.

Every process of a run writes ``<run_dir>/workers/<host>/w_<run_id>_<pid>_<uuid8>.json``
by write-to-temp + rename, so a reader sees either the previous complete snapshot or the
new one, never half a file. The report reads these files and nothing else: this module
imports no C module, so the report runs where only the files are.

Schema version 1 (a JSON object). Keys marked * are required; readers ignore keys they do
not know, so later versions may add keys without a schema break. A file whose
``schema_version`` is newer than :data:`SCHEMA_VERSION` is refused with a clear reason.

``schema_version``\\* (int), ``kind``\\* (``"lineprofiler-worker"``)

``identity``\\* object:
    ``run_id``\\* str, ``attempt`` int (0 for a first run; a requeue of the same job counts up),
    ``role``\\* str, ``host``\\* str, ``pid``\\* int, ``uuid``\\* str (8 hex digits),
    ``rank`` / ``local_rank`` / ``node_rank`` / ``world_size``: int or null,
    ``job_id``: str or null, ``launcher``: str or null (``"slurm"``, ``"torchrun"``,
    ``"mpi"``, ``"pmi"``...), ``python``: str, ``argv``: list of str, ``parent_pid``: int.

``times``\\* object:
    ``start_unix_ns``\\* int, ``last_flush_unix_ns``\\* int, ``elapsed_ns``\\* int (monotonic
    time from start to this flush), ``end_unix_ns``: int or null (set by the final flush),
    ``status``\\* str: ``"started"`` (the file written at construction, before any data),
    ``"running"`` (a periodic snapshot), ``"exited"`` (the final flush at exit) or
    ``"signalled"`` (flushed from SIGTERM/SIGUSR1/SIGHUP), ``signal``: str or null.

``snapshot``\\* object:
    ``interval_s`` float or null (no periodic snapshots), ``writes`` int (successful), ``failures`` int,
    ``last_error`` str or null, ``last_success_unix_ns`` int or null.

``config`` object: ``measure_cpu`` bool, ``window_phase`` str or null, ``backend`` str or null, ``annotate`` bool...

``histogram``\\* object: ``scheme`` (``"log2x8-31.25ns"``; files written before 0.2 say ``"log2x8-1us"``,
read as the new scheme, see :mod:`.histogram`), ``n_buckets`` int.

``phases``\\* list of objects, one per phase path seen in this process:
    ``path``\\* str (``"iteration/self_play/mcts"``), ``entries``\\* int, ``wall_ns``\\* int,
    ``self_ns``\\* int (wall minus the wall of child phases), ``cpu_ns`` int or null (thread
    CPU time; null when not measured), ``min_ns`` / ``max_ns`` int or null,
    ``hist``\\* list of ``[bucket_index, count]`` pairs (sparse), ``io`` bool and ``sync`` bool (how the
    phase was opened), ``io_bytes``: object or null (exact per-phase I/O, filled by the sampler work),
    ``overflow`` bool (the node that takes entries past the cap).

``counters``\\* list: ``phase``\\* str (the open path, ``""``: none), ``name``\\* str, ``total``\\* int.

``caps`` object: ``max_paths`` int, ``paths_overflowed`` int (entries sent to the overflow node), ``max_counters`` int,
    ``counters_overflowed`` int. ``repairs`` object: ``mismatched_exits`` int (exits out of order, repaired).

``samples``: null or an object describing the resource samples (it may name a sidecar file in
    the same folder; its CPU keys: :mod:`.cpufields`). ``gpu``: null or an object (the GPU work defines it;
    ``gpu.phase_time``, each ``gpu=True`` phase's GPU time: :mod:`.gpuphasefields`).
``auto_torch``: absent, null or an object (``auto="torch"``'s hooks; ``auto_torch.process_group``,
    the collectives its wrappers did not time, from torch's flight recorder: :mod:`.processgroupfields`).

``errors`` list of str: failures inside the profiler that were recorded instead of raised.
``trace``: absent or null unless ``trace=True``; else the spans, open entries, links, threads and
clock pairs (docs/report.md, "The story of a traced run"; the spans in a file beside, :mod:`.spanfile`),
checked only when read (:func:`.tracesection.read_trace`). Written before ``samples`` (layout
``"trace-samples-last"``): a reader that skips samples skips it (``document["trace"]``: :data:`TRACE_SKIPPED`).

``layout``: ``"samples-last"`` when :func:`write_worker_file` wrote the document (it puts
``samples`` last), so that a reader that does not want the samples can stop before them
(:func:`read_worker_file` with ``skip_samples=True``) instead of parsing a 12-hour history.
The writer adds it and the reader removes it: ``read_worker_file(p)`` after
``write_worker_file(p, d)`` equals ``d`` (when ``d`` holds no lone surrogate: below).

What the writer accepts, the reader reads (:func:`encode_json`, :func:`build_document`):

* Text is UTF-8. A lone surrogate cannot be: ``os.fsdecode`` makes one of every byte of a file
  name that is not UTF-8, and ``os.environ`` of every such byte of a variable, so a phase named
  after a file, or a ``SLURM_JOB_ID`` in Latin-1, carries them. The writer writes each as the
  characters ``\\xNN`` (for U+DC80..U+DCFF, the byte ``NN`` it stands for) or ``\\uDNNN`` (any
  other): the name ``data_\\udcff.bin`` is read back as ``data_\\xff.bin``. Every string of
  the document gets the same treatment, keys included.
* An integer of ``identity`` that does not fit 64 bits (a ``RANK`` of 2**63) is written as
  null (``attempt``: clamped to 2**63 - 1), with a line in ``errors`` saying what it was.
"""

from __future__ import annotations

import os
import sys

from . import cpufields, gpuphasefields, plainjson, processgroupfields, reading, spanfile, validation
from . import histogram as _histogram
from .layout import WORKERS_DIR, write_atomic

# Names of the run directory's layout, still importable from here.
from .layout import sanitize_component as sanitize_component
from .layout import worker_dir as worker_dir
from .layout import worker_file_name as worker_file_name
from .validation import INT_LIMIT, NONE, Field
from .workerfields import (
    CAPS,
    CONFIG,
    COUNTER,
    HISTOGRAM,
    IDENTITY,
    PHASE,
    REPAIRS,
    SNAPSHOT,
    SOURCE,
    TIMES,
)

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator, Mapping
    from pathlib import Path
    from typing import Any

SCHEMA_VERSION = 1
KIND = "lineprofiler-worker"
LAYOUT_SAMPLES_LAST = "samples-last"
#: The layout of a document with a trace: ``trace`` right before ``samples``, both last.
LAYOUT_TRACE_SAMPLES_LAST = "trace-samples-last"
#: What ``document["trace"]`` holds after a read with ``skip_samples=True`` when the file has a
#: trace not parsed (:func:`.tracesection.skipped`: a pool's copy is equal, not the same object).
TRACE_SKIPPED: dict[str, Any] = {"skipped": True}
_TRACE_KEY = b',"trace":'
#: What ``document["samples"]`` holds after a read with ``skip_samples=True`` when the file has
#: samples that were not parsed (compare with ``is``). Null samples stay None.
SAMPLES_SKIPPED: dict[str, Any] = {"skipped": True}
_SAMPLES_KEY = b',"samples":'
#: Samples up to this size are parsed by a reader that skips samples (see
#: :func:`parse_worker_bytes`): the object that names a sample file is about 1.5 kB.
SMALL_SAMPLES_BYTES = 64 * 1024
#: How many nested ``"samples"`` keys the skipping reader steps over before parsing everything.
_SKIP_ATTEMPTS = 8
_FILE_RE = r"^w_.+_\d+_[0-9a-f]{8}\.json$"  # patterns are compiled on first use (re's cache)
#: The most a reader reads of one worker file. The largest phase tree the profiler can write
#: (10,000 paths at about 2.3 kB each) is about 23 MB; a larger file is refused, named under
#: CAVEATS, and the rest of the run is still reported.
MAX_FILE_BYTES = 64 * 1024 * 1024


class WorkerFileError(Exception):
    """A worker file that cannot be used; ``str()`` is a one-line reason with the path."""


class NewerSchemaError(WorkerFileError):
    """A worker file written by a newer lineprofiler than this one."""


_SURROGATE = "[\ud800-\udfff]"


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def escape_text(text: str) -> str:
    """``text`` as the writer writes it: each lone surrogate as ``\\xNN`` or ``\\uDNNN``."""
    import re  # here: a profiled process writes its files without ever loading re

    return re.sub(_SURROGATE, _escape_surrogate, text)


def encode_json(obj: Any, *, indent: int | None = None, sort_keys: bool = False) -> bytes:
    """``obj`` as the UTF-8 JSON of a run directory's files, lone surrogates escaped
    (:func:`escape_text`). NaN and infinities raise ValueError."""
    text = None
    if indent is None and not sort_keys and "json" not in sys.modules:
        # A process's first files are written before anything needs json: the same bytes
        # without its import. Once json is loaded, its C encoder is the faster one.
        text = plainjson.dumps(obj)
    if text is None:
        import json

        separators = (",", ":") if indent is None else None
        text = json.dumps(
            obj, ensure_ascii=False, allow_nan=False, indent=indent, separators=separators, sort_keys=sort_keys
        )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates can only stand inside JSON strings: escape them there, where the
        # backslash of the escape is itself written as two.
        import re

        return re.sub(_SURROGATE, lambda m: "\\" + _escape_surrogate(m), text).encode("utf-8")


def _bounded_identity(identity: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The identity with its integers within int64, and a line for each that was not."""
    bounded, notes = dict(identity), []
    for key, value in identity.items():
        if isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT <= value < INT_LIMIT:
            bounded[key] = (INT_LIMIT - 1 if value > 0 else 0) if key == "attempt" else None
            digits = str(value)
            shown = digits if len(digits) <= 24 else f"{digits[:20]}... ({len(digits)} digits)"
            notes.append(f"identity.{key}: {shown} does not fit 64 bits; written as {bounded[key]}")
    return bounded, notes


def build_document(
    *,
    identity: Mapping[str, Any],
    status: str,
    start_unix_ns: int,
    now_unix_ns: int,
    elapsed_ns: int,
    final: bool,
    signal: str | None,
    interval_s: float | None,
    writes: int,
    failures: int,
    last_error: str | None,
    config: Mapping[str, Any],
    tree: Mapping[str, Any],
    own_io_excluded: Mapping[str, Any] | None,
    trace: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A worker document of this schema, as the profiler writes it at each snapshot.

    ``identity`` is the process's identity object; ``writes`` counts this write (the document
    is only ever read if it succeeds); ``tree`` is the recorder's snapshot (``phases``,
    ``counters``, ``caps``, ``repairs``, ``own_io_subtracted``). ``samples`` and ``gpu`` start
    null and ``errors`` holds what had to be bounded: the profiler's attachments and the
    profiler fill them in. ``trace`` is the recorder's spans and links (``trace=True``), or None:
    the key is left out, as in files from before tracing.
    """
    bounded, notes = _bounded_identity(identity)
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "identity": bounded,
        "times": {
            "start_unix_ns": start_unix_ns,
            "last_flush_unix_ns": now_unix_ns,
            "elapsed_ns": elapsed_ns,
            "end_unix_ns": now_unix_ns if final else None,
            "status": status,
            "signal": signal,
        },
        "snapshot": {
            "interval_s": interval_s,
            "writes": writes,
            "failures": failures,
            "last_error": last_error,
            "last_success_unix_ns": now_unix_ns,
        },
        "config": dict(config),
        "histogram": {"scheme": _histogram.SCHEME, "n_buckets": _histogram.N_BUCKETS},
        "phases": tree["phases"],
        "counters": tree["counters"],
        "caps": tree["caps"],
        "repairs": tree["repairs"],
        "samples": None,
        "gpu": None,
        "own_io_excluded": own_io_excluded,
        "own_io_subtracted": tree.get("own_io_subtracted"),
        "errors": notes,
    }
    if trace is not None:
        document["trace"] = dict(trace)
    return document


def write_worker_file(
    path: str | os.PathLike[str],
    document: dict[str, Any],
    *,
    fsync: bool = False,
    root: str | os.PathLike[str] | None = None,
    notes: list[str] | None = None,
) -> int:
    """Write ``document`` to ``path`` atomically (temp file + rename); returns the bytes written.

    ``root`` is the run directory: nothing below it is followed, and a link replaced at ``path``
    is said in ``notes`` (see :func:`.layout.write_atomic`).
    Raises OSError on failure; the caller (the profiler) counts it and never lets it reach
    user code.
    """
    document, spans_file = spanfile.split_off(path, document, root=root, fsync=fsync, notes=notes)
    # ``samples`` last, after ``layout`` (a reader skips the bulk); a trace right before them.
    ordered = {k: v for k, v in document.items() if k not in ("samples", "layout", "trace")}
    ordered["layout"] = LAYOUT_SAMPLES_LAST if document.get("trace") is None else LAYOUT_TRACE_SAMPLES_LAST
    if "trace" in document:
        ordered["trace"] = document["trace"]
    ordered["samples"] = document.get("samples")
    data = encode_json(ordered)
    write_atomic(path, data, root=root, fsync=fsync, notes=notes)
    spanfile.remove_older(path, spans_file, root=root)
    return len(data)


def scan_worker_files(run_dir: str | os.PathLike[str]) -> tuple[list[Path], list[str]]:
    """The worker files under ``run_dir/workers/<host>/``, sorted, and what could not be listed.

    Returns ``(files, problems)``: ``problems`` holds one line per host folder that could not be
    listed (it costs that host's workers, not the run). Temp files of an in-progress write are
    skipped. Raises WorkerFileError when ``workers/`` itself exists but cannot be listed;
    returns no files when it does not exist.
    """
    from pathlib import Path

    root = Path(run_dir) / WORKERS_DIR
    try:
        host_dirs = sorted(root.iterdir())
    except FileNotFoundError:
        return [], []
    except NotADirectoryError:
        return [], []
    except OSError as error:
        raise WorkerFileError(f"{root}: cannot list: {error.strerror or error}") from None
    found: list[Path] = []
    problems: list[str] = []
    for host_dir in host_dirs:
        try:
            if not host_dir.is_dir():
                continue
            names = sorted(p.name for p in host_dir.iterdir())
        except OSError as error:
            problems.append(f"{host_dir}: cannot list: {error.strerror or error}")
            continue
        found.extend(host_dir / name for name in names if _is_worker_file_name(name))
    return found, problems


def _is_worker_file_name(name: str) -> bool:
    import re  # here: only the report lists worker files

    return re.match(_FILE_RE, name) is not None


def find_worker_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Every worker file under ``run_dir/workers/<host>/``, sorted; temp files and folders that
    cannot be listed are skipped (:func:`scan_worker_files` says which)."""
    try:
        return scan_worker_files(run_dir)[0]
    except WorkerFileError:
        return []


def worker_files_of(run_dir: str | os.PathLike[str], host: str, pid: int) -> Iterator[dict[str, Any]]:
    """The worker files that process ``pid`` wrote under ``run_dir/workers/<host>/``, newest
    first (by modification time), each read without its samples: files that cannot be read, or
    that name another process, are left out. Nothing when the folder cannot be listed."""
    folder = worker_dir(run_dir, host)
    try:
        candidates = sorted(folder.glob(f"w_*_{pid}_*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for path in candidates:
        try:
            document = read_worker_file(path, skip_samples=True)
        except (WorkerFileError, OSError):
            continue
        if document["identity"].get("pid") == pid:
            yield document


#: The worker file's checks of its objects' fields, worded as readers and tests quote them.
_CHECKER = validation.Checker(
    WorkerFileError,
    validation.Wording(
        not_object="{path}: '{where}' is not an object",
        missing="{path}: '{where}.{key}' is missing",
        wrong_type="{path}: '{where}.{key}' has the wrong type",
        out_of_range="{path}: '{where}.{key}' is out of range ({value})",
        bad_text="{path}: '{where}.{key}' is not valid text",
    ),
)


def _check_optional_object(document: dict[str, Any], key: str, fields: tuple[Field, ...], path: Path) -> None:
    value = document.get(key)
    if value is not None:
        _CHECKER.check(value, key, fields, path)


def validate(document: Any, path: Path) -> dict[str, Any]:
    """Check the parts of a document the report relies on; raise WorkerFileError if wrong.

    Beyond the types: integers must fit an int64 (counts, durations and timestamps must not be
    negative), floats must be finite, text must be valid Unicode, histogram buckets must lie in
    the scheme's range, and the histogram scheme must be one this reader knows. A document that
    passes can be merged and printed without any further checks.
    """
    if not isinstance(document, dict):
        raise WorkerFileError(f"{path}: not a worker file (top level is not an object)")
    kind = document.get("kind")
    if kind != KIND:
        shown = kind if isinstance(kind, (str, int, float, bool, type(None))) else type(kind).__name__
        raise WorkerFileError(f"{path}: not a worker file (kind is {ascii(shown)[:80]})")
    version = document.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        shown = ascii(version)[:40] if isinstance(version, (int, str, float, type(None))) else type(version).__name__
        raise WorkerFileError(f"{path}: invalid schema_version {shown}")
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"{path}: written with schema version {version if version < INT_LIMIT else 'too large'}, "
            f"this lineprofiler reads up to {SCHEMA_VERSION}; upgrade lineprofiler to read it"
        )
    _CHECKER.check(document.get("identity"), "identity", IDENTITY, path)
    _CHECKER.check(document.get("times"), "times", TIMES, path)
    _CHECKER.check(document.get("snapshot"), "snapshot", SNAPSHOT, path)
    _CHECKER.check(document.get("histogram"), "histogram", HISTOGRAM, path)
    scheme = document["histogram"]["scheme"]
    if scheme not in (_histogram.SCHEME, _histogram.SCHEME_1US):
        raise WorkerFileError(
            f"{path}: unknown histogram scheme {ascii(scheme)[:60]} "
            f"(this lineprofiler reads {_histogram.SCHEME!r} and {_histogram.SCHEME_1US!r})"
        )
    _check_optional_object(document, "config", CONFIG, path)
    _check_optional_object(document, "caps", CAPS, path)
    _check_optional_object(document, "repairs", REPAIRS, path)
    _check_optional_object(document, "source", SOURCE, path)
    for key in ("samples", "gpu", "trace"):
        if not isinstance(document.get(key), (dict, NONE)):
            raise WorkerFileError(f"{path}: '{key}' is neither an object nor null")
    cpufields.check(document.get("samples"), path, _CHECKER)
    gpuphasefields.check(document.get("gpu"), path, _CHECKER)
    processgroupfields.check(document.get("auto_torch"), path, _CHECKER)
    errors = document.get("errors")
    if errors is not None and not validation.is_text_list(errors):
        raise WorkerFileError(f"{path}: 'errors' is not a list of text")
    phases = document.get("phases")
    counters = document.get("counters")
    if not isinstance(phases, list):
        raise WorkerFileError(f"{path}: 'phases' is not a list")
    if not isinstance(counters, list):
        raise WorkerFileError(f"{path}: 'counters' is not a list")
    old_scheme = scheme == _histogram.SCHEME_1US
    n_buckets = _histogram.N_BUCKETS_1US if old_scheme else _histogram.N_BUCKETS
    for i, phase in enumerate(phases):
        _CHECKER.check(phase, f"phases[{i}]", PHASE, path)
        if not phase["path"]:
            raise WorkerFileError(f"{path}: 'phases[{i}].path' is empty")
        for pair in phase["hist"]:
            if (
                type(pair) is not list
                or len(pair) != 2
                or type(pair[0]) is not int
                or type(pair[1]) is not int
                or not 0 <= pair[0] < n_buckets
                or not 0 <= pair[1] < INT_LIMIT
            ):
                raise WorkerFileError(f"{path}: 'phases[{i}].hist' holds a malformed bucket")
        if old_scheme:
            phase["hist"] = [[_histogram.from_1us_scheme(b), n] for b, n in phase["hist"]]
    if old_scheme:
        # Read as this scheme from here on: every reader after validation sees one scheme.
        document["histogram"] = dict(document["histogram"], scheme=_histogram.SCHEME, n_buckets=_histogram.N_BUCKETS)
    for i, counter in enumerate(counters):
        _CHECKER.check(counter, f"counters[{i}]", COUNTER, path)
    return document


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a worker file may hold")


def _parse_head(raw: bytes) -> tuple[dict[str, Any], bytes] | None:
    """The document without its ``samples`` value, parsed from the bytes before it, and the bytes
    after the key (the value and the closing brace); None when the file does not have the
    samples-last layout.

    Cutting at a nested ``"samples"`` key leaves brackets open, so ``head + "}"`` fails to parse
    and the next occurrence is tried: a parse succeeds only at the top-level key. The head must
    also say it was written samples-last, or keys after ``samples`` could be lost.
    """
    import json

    start = 0
    for _ in range(_SKIP_ATTEMPTS):
        at = raw.find(_SAMPLES_KEY, start)
        if at < 0:
            return None
        try:
            head = json.loads(raw[:at] + b"}", parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            start = at + 1
            continue
        if not isinstance(head, dict) or head.get("layout") != LAYOUT_SAMPLES_LAST or "samples" in head:
            return None
        return head, raw[at + len(_SAMPLES_KEY) :]
    return None


def split_trace(raw: bytes) -> tuple[dict[str, Any], bytes, bytes] | None:
    """For a file written trace-samples-last: the document before its trace, parsed, the trace's
    bytes and the bytes after the samples key; None for any other file. A literal ``,"trace":``
    is a key (quotes inside strings are escaped): the first whose head parses is the top level."""
    import json

    start = 0
    for _ in range(_SKIP_ATTEMPTS):
        at = raw.find(_TRACE_KEY, start)
        if at < 0:
            return None
        start = at + 1
        try:
            head = json.loads(raw[:at] + b"}", parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            continue
        if not isinstance(head, dict) or head.get("layout") != LAYOUT_TRACE_SAMPLES_LAST:
            return None
        if "trace" in head or "samples" in head:
            return None
        samples_at = raw.find(_SAMPLES_KEY, at)
        if samples_at < 0:
            return None
        return head, raw[at + len(_TRACE_KEY) : samples_at], raw[samples_at + len(_SAMPLES_KEY) :]
    return None


def _small_samples(tail: bytes, path: Path) -> Any:
    """The ``samples`` value from the bytes after its key, when they are few (an object that
    names a sample file, or null); :data:`SAMPLES_SKIPPED` for inline rows, or bytes that do not
    parse (a full read judges them)."""
    import json

    if tail.startswith(b"null") and tail[4:].strip() in (b"}", b""):
        return None
    if len(tail) > SMALL_SAMPLES_BYTES:
        return SAMPLES_SKIPPED
    value = tail.rstrip()
    if not value.endswith(b"}"):
        return SAMPLES_SKIPPED
    try:
        samples = json.loads(value[:-1], parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return SAMPLES_SKIPPED
    if not isinstance(samples, dict):
        return SAMPLES_SKIPPED
    cpufields.check(samples, path, _CHECKER)  # what a whole read refuses, this one refuses too
    return samples


def parse_worker_bytes(raw: bytes, path: str | os.PathLike[str], *, skip_samples: bool = False) -> dict[str, Any]:
    """Parse and validate the bytes of one worker file; raise WorkerFileError when unusable.

    With ``skip_samples``, a file written samples-last is parsed only up to its samples, and
    ``samples`` is :data:`SAMPLES_SKIPPED` (or None when it was null); damage inside the
    samples then goes unnoticed until they are read. Samples of at most
    :data:`SMALL_SAMPLES_BYTES` (an object naming the sample file, as the profiler writes) are
    parsed too, so that a reader need not come back for them. Other files are parsed whole.
    """
    import json
    from pathlib import Path

    path = Path(path)
    if not raw:
        raise WorkerFileError(f"{path}: empty file")
    if skip_samples and _TRACE_KEY in raw:
        split = split_trace(raw)
        if split is not None:
            head, trace, tail = split
            try:
                document = validate(head, path)
            except WorkerFileError:
                document = None
            if document is not None:
                document.pop("layout", None)
                document["trace"] = None if trace.strip() == b"null" else TRACE_SKIPPED
                document["samples"] = _small_samples(tail, path)
                return document
    if skip_samples:
        parsed = _parse_head(raw)
        if parsed is not None:
            head, tail = parsed
            try:
                document = validate(head, path)
            except WorkerFileError:
                document = None  # judge the whole file, not a head that may have been cut wrongly
            if document is not None:
                document.pop("layout", None)
                document["samples"] = _small_samples(tail, path)
                return document
    try:
        document = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        # UnicodeDecodeError is a ValueError: bytes that are not UTF-8 land here too.
        raise WorkerFileError(f"{path}: corrupt or truncated JSON ({error.__class__.__name__})") from None
    document = validate(document, path)
    # How the bytes were laid out is not part of the content: read(write(d)) == d.
    document.pop("layout", None)
    return document


def read_worker_file(path: str | os.PathLike[str], *, skip_samples: bool = False) -> dict[str, Any]:
    """Read and validate one worker file; raise WorkerFileError (one line) when it is unusable.

    Only a regular file is opened (a FIFO, a device, a directory or a symbolic link at the
    file's name is refused without blocking), and only up to :data:`MAX_FILE_BYTES`.
    ``skip_samples``: see :func:`parse_worker_bytes`.
    """
    from pathlib import Path

    path = Path(path)
    try:
        raw = reading.read_limited(path, MAX_FILE_BYTES)
    except OSError as error:
        raise WorkerFileError(f"{path}: cannot read: {error.strerror or error}") from None
    return parse_worker_bytes(raw, path, skip_samples=skip_samples)
