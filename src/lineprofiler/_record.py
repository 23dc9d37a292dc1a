"""``Record``: the base of the small value classes a profiler builds while it starts.

Importing :mod:`dataclasses` loads :mod:`inspect`, and with it ``ast``, ``dis``, ``tokenize`` and
``linecache``: about 10 ms of CPU on 3.11, paid again by every process of a run that constructs
a profiler. The value classes on that path (the profiler's options, a process's identity, a
capability, a sample file's counts) derive from :class:`Record` instead: their ``__slots__``
name their fields, and equality, hashing and ``repr`` follow the fields in that order, as a
dataclass's would.
"""

from __future__ import annotations


class Record:
    """Equality, hash and ``repr`` over the fields named by a subclass's ``__slots__``."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
