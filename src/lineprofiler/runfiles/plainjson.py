"""Compact JSON of plain values without importing :mod:`json`.

``json`` imports ``re`` and, through it, ``enum``: several milliseconds that every process of a
run would pay while its profiler starts, only to write a start file of a few hundred bytes.
This writes what ``json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))``
writes, byte for byte, for documents made of dicts with text keys, lists, tuples, text, ints,
finite floats, booleans and None; for anything else it answers None and the caller uses ``json``.
Strings are escaped by the C function ``json`` itself uses.
"""

from __future__ import annotations

import _json  # json's C half, which loads no re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_escape = _json.encode_basestring
_INF = float("inf")
#: Deeper documents go to json, which reports a cycle the way it always has.
_MAX_DEPTH = 64


class _NotPlain(Exception):
    pass


def dumps(obj: Any) -> str | None:
    """The compact JSON text of ``obj``, or None when ``obj`` is not made of plain values."""
    out: list[str] = []
    try:
        _emit(obj, out, 0)
    except _NotPlain:
        return None
    return "".join(out)


def _emit(obj: Any, out: list[str], depth: int) -> None:
    kind = type(obj)
    if kind is str:
        out.append(_escape(obj))
    elif kind is int:
        out.append(int.__repr__(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif kind is float:
        if obj != obj or obj in (_INF, -_INF):
            raise _NotPlain  # json raises its own ValueError for these
        out.append(float.__repr__(obj))
    elif depth >= _MAX_DEPTH:
        raise _NotPlain
    elif kind is dict:
        out.append("{")
        first = True
        for key, value in obj.items():
            if type(key) is not str:
                raise _NotPlain  # json turns int, float, bool and None keys into text
            if not first:
                out.append(",")
            first = False
            out.append(_escape(key))
            out.append(":")
            _emit(value, out, depth + 1)
        out.append("}")
    elif kind is list or kind is tuple:
        out.append("[")
        for index, value in enumerate(obj):
            if index:
                out.append(",")
            _emit(value, out, depth + 1)
        out.append("]")
    else:
        raise _NotPlain
