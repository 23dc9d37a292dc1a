"""The keys of a worker file's ``auto_torch.process_group`` object, checked: the collectives
``auto="torch"``'s wrappers did not time (DistributedDataParallel's gradient all-reduce), per op,
from torch's flight recorder. docs/accounting.md describes every key.

The object is optional (a file written before it existed, by a process that never imported torch,
or without ``auto="torch"`` has none); one that is there must hold what its schema says, or the
file is refused with a one-line reason naming the key (:func:`check`).
"""

from __future__ import annotations

from .validation import NONE, Checker, Field, is_text

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run reads its file
if TYPE_CHECKING:
    from typing import Any

_PROCESS_GROUP = (
    Field("source", (str,)),
    Field("ops", (dict,)),
    Field("in_phases", (int,), required=False, non_negative=True),
    Field("dropped", (int,), non_negative=True),
    Field("unavailable_reason", (str, NONE), required=False),
)
#: One op's row (``ops["all_reduce"]``).
_OP = (
    Field("calls", (int,), non_negative=True),
    Field("bytes", (int,), non_negative=True),
    Field("unsized_calls", (int,), required=False, non_negative=True),
    Field("duration_ns", (int, NONE), required=False, non_negative=True),
    Field("timed_calls", (int,), required=False, non_negative=True),
)
WHERE = "auto_torch.process_group"


def check(auto_torch: Any, path: object, checker: Checker) -> None:
    """Raise ``checker``'s error (one line: the file and the key) when ``auto_torch.process_group``
    holds what its schema does not allow; absent or null is fine."""
    if auto_torch is None:
        return
    if not isinstance(auto_torch, dict):
        checker.fail(checker.wording.not_object, path, "auto_torch")
    group = auto_torch.get("process_group")
    if group is None:
        return
    checker.check(group, WHERE, _PROCESS_GROUP, path)
    for op, row in group["ops"].items():
        if not is_text(op) or not op:
            checker.fail(checker.wording.bad_text, path, WHERE, "ops", op)
        checker.check(row, f"{WHERE}.ops[{op!r}]", _OP, path)
