"""``@profiler``: a LineProfiler used as a decorator is on while the decorated code runs.

Plain functions and methods: on for the call. Generators, coroutines and async generators: on
while their frame runs (each resume), off while they are suspended, so the code that drives
them, and whatever runs while a coroutine waits, is not recorded through them. The switching
nests with ``with profiler:`` and with other decorated calls (recursion included), and it never
raises into the decorated code: when another LineProfiler is recording, the call runs
unprofiled and is counted in ``profiler.skipped_calls``.

What a wrapper switches is a :class:`CallSwitch`, which the profiler hands to :func:`wrap`: this
module knows nothing else of the profiler.

Here too: kernprof's ``@profile`` builtin, which ``lineprofiler run`` provides
(:class:`ProfileBuiltin`), so that scripts written for kernprof run unchanged.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import os
from collections.abc import Callable, Generator
from types import CodeType
from typing import Any, Protocol, TypeVar

from .stats import StatsKey

__all__ = ["ENV_PROFILE_BUILTIN", "CallSwitch", "ProfileBuiltin", "code_of", "install_from_env", "wrap"]

F = TypeVar("F", bound=Callable[..., Any])

#: Set on every wrapper, so that decorating twice with the same profiler wraps once.
_MARK = "__lineprofiler_wrapped__"


class CallSwitch(Protocol):
    """What a wrapper switches: the profiler on for a call or a step, and its hooks held over
    the steps of a generator or coroutine."""

    def enter(self) -> bool:
        """On for one call (one nesting level more); False when the call is to run unprofiled
        (another LineProfiler records)."""
        ...

    def exit(self) -> None:
        """Undo one :meth:`enter` that returned True; an internal error of the tracer is kept
        for the profiler's next disable() or get_stats(), not raised into the decorated code."""
        ...

    def hold(self) -> None:
        """Keep the hooks from one step of a generator or coroutine to the next: hooking again
        at each step would make CPython re-instrument code, time billed to the line the step
        resumes at."""
        ...

    def unhold(self) -> None:
        """Undo one :meth:`hold`."""
        ...


def _drive(switch: CallSwitch, inner: Any) -> Generator[Any, Any, Any]:
    """Run a generator or coroutine ``inner`` step by step, the profiler on during each step
    (and its hooks held from the first step to the last)."""
    switch.hold()
    try:
        return (yield from _steps(switch, inner))
    finally:
        switch.unhold()


def _steps(switch: CallSwitch, inner: Any) -> Generator[Any, Any, Any]:
    send_value: Any = None
    thrown: BaseException | None = None
    while True:
        on = switch.enter()
        try:
            if thrown is not None:
                error, thrown = thrown, None
                item = inner.throw(error)
            else:
                item = inner.send(send_value)
        except StopIteration as stop:
            return stop.value
        finally:
            if on:
                switch.exit()
        try:
            send_value = yield item
        except GeneratorExit:
            on = switch.enter()
            try:
                inner.close()
            finally:
                if on:
                    switch.exit()
            raise
        except BaseException as error:  # thrown into us: pass it on to the inner frame
            thrown = error
            send_value = None


class _Stepped:
    """An awaitable that awaits ``inner`` with the profiler on during each of its steps."""

    __slots__ = ("_switch", "_inner")

    def __init__(self, switch: CallSwitch, inner: Any) -> None:
        self._switch = switch
        self._inner = inner

    def __await__(self) -> Generator[Any, Any, Any]:
        return _drive(self._switch, self._inner)


def wrap(switch: CallSwitch, func: F) -> F:
    """The decorated form of ``func``, switching ``switch`` (one per profiler: decorating twice
    with the same one wraps once); see the module docstring."""
    if isinstance(func, (classmethod, staticmethod)):
        return type(func)(wrap(switch, func.__func__))
    if not callable(func):
        raise TypeError(f"a LineProfiler decorates functions and methods, not {type(func).__name__}")
    if getattr(func, _MARK, None) is switch:
        return func
    wrapper: Callable[..., Any]

    if inspect.isasyncgenfunction(func):

        @functools.wraps(func)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            agen = func(*args, **kwargs)
            send_value: Any = None
            thrown: BaseException | None = None
            try:
                while True:
                    try:
                        if thrown is not None:
                            error, thrown = thrown, None
                            item = await _Stepped(switch, agen.athrow(error))
                        else:
                            item = await _Stepped(switch, agen.asend(send_value))
                    except StopAsyncIteration:
                        return
                    try:
                        send_value = yield item
                    except GeneratorExit:
                        raise
                    except BaseException as error:
                        thrown = error
                        send_value = None
            finally:
                await _Stepped(switch, agen.aclose())

    elif inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            return await _Stepped(switch, func(*args, **kwargs))

    elif inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return _drive(switch, func(*args, **kwargs))

    else:

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            on = switch.enter()
            try:
                return func(*args, **kwargs)
            finally:
                if on:
                    switch.exit()

    setattr(wrapper, _MARK, switch)
    return wrapper  # type: ignore[return-value]


# -- kernprof's ``@profile`` ---------------------------------------------------------------

#: Set to "1" by ``lineprofiler run --children`` for its children: each followed child puts the
#: ``profile`` builtin in place at its start (see :func:`install_from_env`), before it imports
#: the decorated code (a spawned worker re-imports the main script).
ENV_PROFILE_BUILTIN = "LINEPROFILER_PROFILE_BUILTIN"


class ProjectMembership(Protocol):
    """What the ``profile`` builtin asks of the run's profiler (a LineProfiler)."""

    def is_project_file(self, filename: str) -> bool: ...

    def add_function(self, func: Any) -> bool: ...


def code_of(obj: Any) -> CodeType | None:
    """The code object behind a function, a method, a classmethod or staticmethod, a property's
    getter or a decorated function (``functools.wraps``); None for anything else."""
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    elif isinstance(obj, property):
        obj = obj.fget
    obj = getattr(obj, "__func__", obj)  # a bound method
    try:
        obj = inspect.unwrap(obj)
    except ValueError:  # a cycle of __wrapped__
        return None
    code = getattr(obj, "__code__", None)
    return code if isinstance(code, CodeType) else None


class ProfileBuiltin:
    """kernprof's ``profile``, as ``lineprofiler run`` puts it into the builtins.

    The run records every line of the project with or without it, so ``@profile`` does not
    narrow what is recorded: it returns the function itself (no wrapper, nothing paid per
    call), and kernprof's ``enable_by_count()``, ``disable_by_count()`` and ``with profile:``
    do nothing. A decorated function whose file lies outside the project folder is added to
    the run's profiler (kernprof records what it decorates, wherever it is); one that cannot
    be (no profiler: a child's builtin) is kept in :attr:`outside`, for the run to say so.
    Never raises into the decorated code.
    """

    def __init__(self, profiler: ProjectMembership | None) -> None:
        self._profiler = profiler
        #: Decorated functions outside the project folder, by their get_stats() key.
        self.outside: list[StatsKey] = []
        self._previous: Any = _ABSENT

    def __repr__(self) -> str:
        return "<profile: the builtin of lineprofiler run>"

    def __call__(self, func: F) -> F:
        try:
            self._note(func)
        except Exception:
            pass  # an object we cannot look into is simply returned
        return func

    def _note(self, func: Any) -> None:
        code = code_of(func)
        if code is None or self._profiler is None or self._profiler.is_project_file(code.co_filename):
            return
        if self._profiler.add_function(func):
            return  # recorded where it is, as kernprof records what it decorates
        key = StatsKey.of(code)
        if key not in self.outside:
            self.outside.append(key)

    def enable_by_count(self) -> None:
        """kernprof's: nothing to do, the run records throughout."""

    def disable_by_count(self) -> None:
        """kernprof's: nothing to do, the run records throughout."""

    def __enter__(self) -> ProfileBuiltin:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def install(self) -> None:
        """``profile`` in the builtins, until :meth:`uninstall`."""
        self._previous = builtins.__dict__.get("profile", _ABSENT)
        builtins.profile = self  # type: ignore[attr-defined]

    def uninstall(self) -> None:
        """The builtins as they were before :meth:`install`, if ``profile`` is still this one
        (a program that replaced it keeps its own)."""
        if builtins.__dict__.get("profile") is not self:
            return
        if self._previous is _ABSENT:
            del builtins.profile  # type: ignore[attr-defined]
        else:
            builtins.profile = self._previous  # type: ignore[attr-defined]
        self._previous = _ABSENT


_ABSENT: Any = object()


def install_from_env() -> None:
    """In a child of ``lineprofiler run --children``: the ``profile`` builtin for the life of
    the process, when the run asked for it (:data:`ENV_PROFILE_BUILTIN`). Never raises."""
    if os.environ.get(ENV_PROFILE_BUILTIN) != "1" or "profile" in builtins.__dict__:
        return
    try:
        ProfileBuiltin(None).install()
    except Exception:
        pass
