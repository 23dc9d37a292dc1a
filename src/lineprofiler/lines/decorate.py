"""``@profiler``: a LineProfiler used as a decorator is on while the decorated code runs.

Plain functions and methods: on for the call. Generators, coroutines and async generators: on
while their frame runs (each resume), off while they are suspended, so the code that drives
them, and whatever runs while a coroutine waits, is not recorded through them. The switching
nests with ``with profiler:`` and with other decorated calls (recursion included), and it never
raises into the decorated code: when another LineProfiler is recording, the call runs
unprofiled and is counted in ``profiler.skipped_calls``.

What a wrapper switches is a :class:`CallSwitch`, which the profiler hands to :func:`wrap`: this
module knows nothing else of the profiler.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar

__all__ = ["CallSwitch", "wrap"]

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
