"""The fields each object of a worker file must have, with their types: the tables
:func:`.workerfile.validate` checks a document against (its module docstring describes the
format)."""

from __future__ import annotations

from .validation import NONE, Field

IDENTITY = (
    Field("run_id", (str,)),
    Field("role", (str,)),
    Field("host", (str,)),
    Field("pid", (int,), non_negative=True),
    Field("uuid", (str,)),
    Field("attempt", (int,), required=False, non_negative=True),
    Field("rank", (int, NONE), required=False),
    Field("local_rank", (int, NONE), required=False),
    Field("node_rank", (int, NONE), required=False),
    Field("world_size", (int, NONE), required=False),
    Field("job_id", (str, NONE), required=False),
    Field("launcher", (str, NONE), required=False),
)
TIMES = (
    Field("start_unix_ns", (int,), non_negative=True),
    Field("last_flush_unix_ns", (int,), non_negative=True),
    Field("elapsed_ns", (int,), non_negative=True),
    Field("status", (str,)),
    Field("end_unix_ns", (int, NONE), required=False, non_negative=True),
    Field("signal", (str, NONE), required=False),
)
SNAPSHOT = (
    Field("interval_s", (int, float, NONE), required=False, non_negative=True),
    Field("writes", (int,), required=False, non_negative=True),
    Field("failures", (int,), required=False, non_negative=True),
    Field("last_error", (str, NONE), required=False),
    Field("last_success_unix_ns", (int, NONE), required=False, non_negative=True),
)
HISTOGRAM = (
    Field("scheme", (str,)),
    Field("n_buckets", (int,), required=False, non_negative=True),
)
CONFIG = (
    Field("measure_cpu", (bool,), required=False),
    Field("window_phase", (str, NONE), required=False),
    Field("backend", (str, NONE), required=False),
    Field("annotate", (bool,), required=False),
)
CAPS = (
    Field("max_paths", (int,), required=False, non_negative=True),
    Field("paths_overflowed", (int,), required=False, non_negative=True),
    Field("max_counters", (int,), required=False, non_negative=True),
    Field("counters_overflowed", (int,), required=False, non_negative=True),
)
REPAIRS = (Field("mismatched_exits", (int,), required=False, non_negative=True),)
PHASE = (
    Field("path", (str,)),
    Field("entries", (int,), non_negative=True),
    Field("wall_ns", (int,), non_negative=True),
    # Self and CPU time are differences of clocks the writer read: a repaired mismatched exit
    # can leave them slightly off, which the report clamps rather than refuses.
    Field("self_ns", (int,)),
    Field("cpu_ns", (int, NONE), required=False),
    Field("min_ns", (int, NONE), required=False, non_negative=True),
    Field("max_ns", (int, NONE), required=False, non_negative=True),
    Field("hist", (list,)),
    Field("io", (bool,), required=False),
    Field("sync", (bool,), required=False),
    Field("overflow", (bool,), required=False),
    Field("io_bytes", (dict, NONE), required=False),
)
COUNTER = (
    Field("phase", (str,)),
    Field("name", (str,)),
    Field("total", (int,)),
    Field("calls", (int,), required=False, non_negative=True),
    Field("min", (int,), required=False),
    Field("max", (int,), required=False),
)
SOURCE = (
    Field("commit", (str, NONE), required=False),
    Field("dirty_files", (int, NONE), required=False, non_negative=True),
    Field("diff_sha", (str, NONE), required=False),
    Field("root", (str, NONE), required=False),
    Field("unavailable_reason", (str, NONE), required=False),
)
