"""Checking the objects of a document against the fields its schema gives them: one way for every
JSON file kind of a run directory (the worker file, the line-stats file).

A schema lists each object's :class:`Field` s and words each kind of problem its own way
(:class:`Wording`: readers and tests quote those lines); a :class:`Checker` raises the schema's
own error with that wording. A document that passes holds integers that fit an int64 (and are not
negative where a field says so), finite floats and text that is valid Unicode.

This module runs in every process that reads its parent's worker file: it imports nothing heavy.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from typing import Any, NoReturn

#: Every integer of a run directory's files fits the C writers' int64: a larger one is corruption,
#: and letting it through would make the report's float arithmetic overflow.
INT_LIMIT = 2**63
NONE = type(None)
_ABSENT = object()


class Field:
    """One key of an object of a schema: its types, whether it must be there, whether a number
    may be negative (counts, durations, timestamps may not), and for a list, the type of every
    item (only ``str`` is checked: a list of text)."""

    __slots__ = ("key", "types", "exact", "required", "non_negative", "items")

    def __init__(
        self,
        key: str,
        types: tuple[type, ...],
        required: bool = True,
        non_negative: bool = False,
        items: type | None = None,
    ) -> None:
        self.key = key
        self.types = types
        #: The types a JSON value may have here, exactly (what a parsed document holds), for
        #: the fast path of :meth:`Checker.check`; a list whose items are checked takes the other.
        self.exact = frozenset(types) if items is None else frozenset()
        self.required = required
        self.non_negative = non_negative
        self.items = items


class Wording:
    """A schema's line for each problem, a format string of ``path`` (the file), ``where`` (the
    object's place in the document: ``phases[3]``), ``key`` and ``value`` (the value found)."""

    __slots__ = ("not_object", "missing", "wrong_type", "out_of_range", "bad_text")

    def __init__(self, *, not_object: str, missing: str, wrong_type: str, out_of_range: str, bad_text: str) -> None:
        self.not_object = not_object
        self.missing = missing
        self.wrong_type = wrong_type
        self.out_of_range = out_of_range
        self.bad_text = bad_text


def text_ok(value: str) -> bool:
    """False for text with a lone surrogate (legal in JSON's ``\\u`` escapes), which cannot be
    printed or encoded as UTF-8."""
    if value.isascii():  # the usual case, answered without encoding
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_text(value: object) -> bool:
    return isinstance(value, str) and text_ok(value)


def is_text_list(value: object) -> bool:
    return isinstance(value, list) and all(is_text(item) for item in value)


def is_count(value: object, low: int = 0) -> bool:
    """An int (not a bool) from ``low`` up to, not including, :data:`INT_LIMIT`."""
    return type(value) is int and low <= value < INT_LIMIT


class Checker:
    """Checks objects of one schema, raising ``error`` worded by ``wording``."""

    __slots__ = ("error", "wording")

    def __init__(self, error: type[Exception], wording: Wording) -> None:
        self.error = error
        self.wording = wording

    def fail(self, template: str, path: object, where: str, key: str = "", value: object = None) -> NoReturn:
        raise self.error(template.format(path=path, where=where, key=key, value=value))

    def check(self, obj: Any, where: str, fields: tuple[Field, ...], path: object) -> dict[str, Any]:
        """``obj`` when it is an object whose every field is as ``fields`` say; else raise."""
        if not isinstance(obj, dict):
            self.fail(self.wording.not_object, path, where)
        for field in fields:
            value = obj.get(field.key, _ABSENT)
            kind = type(value)
            # The fast path, for what a parsed document holds (a value of exactly one of the
            # types): the same checks as below, with one type lookup instead of several isinstance.
            if kind in field.exact:
                if kind is int:
                    if not (0 if field.non_negative else -INT_LIMIT) <= value < INT_LIMIT:
                        self.fail(self.wording.out_of_range, path, where, field.key, value)
                elif kind is str:
                    if not text_ok(value):
                        self.fail(self.wording.bad_text, path, where, field.key, value)
                elif kind is float and (not math.isfinite(value) or (field.non_negative and value < 0)):
                    self.fail(self.wording.out_of_range, path, where, field.key, value)
                continue
            if value is _ABSENT:
                if field.required:
                    self.fail(self.wording.missing, path, where, field.key)
                continue
            self._check_slowly(field, value, path, where)
        return obj

    def _check_slowly(self, field: Field, value: Any, path: object, where: str) -> None:
        """A value of a subclass of the field's types, or of none of them."""
        words = self.wording
        # bool is an int in Python: refuse it where a number is wanted.
        if isinstance(value, bool) and bool not in field.types:
            self.fail(words.wrong_type, path, where, field.key, value)
        if not isinstance(value, field.types):
            self.fail(words.wrong_type, path, where, field.key, value)
        if isinstance(value, int) and not isinstance(value, bool):
            low = 0 if field.non_negative else -INT_LIMIT
            if not low <= value < INT_LIMIT:
                self.fail(words.out_of_range, path, where, field.key, value)
        elif isinstance(value, float):
            if not math.isfinite(value) or (field.non_negative and value < 0):
                self.fail(words.out_of_range, path, where, field.key, value)
        elif isinstance(value, str) and not text_ok(value):
            self.fail(words.bad_text, path, where, field.key, value)
        elif isinstance(value, list) and field.items is str and not all(is_text(item) for item in value):
            self.fail(words.wrong_type, path, where, field.key, value)
