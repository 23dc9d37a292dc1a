"""``@profiler``: a LineProfiler used as a decorator is on while the decorated code runs.

Plain functions and methods: on for the call. Generators, coroutines and async generators: on
while their frame runs (each resume), off while they are suspended, so the code that drives
them, and whatever runs while a coroutine waits, is not recorded through them. The switching
nests with ``with profiler:`` and with other decorated calls (recursion included), and it never
raises into the decorated code: when another LineProfiler is recording, the call runs
unprofiled and is counted in ``profiler.skipped_calls``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .profiler import LineProfiler

__all__ = ["wrap"]

F = TypeVar("F", bound=Callable[..., Any])

#: Set on every wrapper, so that decorating twice with the same profiler wraps once.
_MARK = "__lineprofiler_wrapped__"


class _Switch(Protocol):
    def _enter_call(self) -> bool: ...
    def _exit_call(self) -> None: ...
    def _hold(self) -> None: ...
    def _unhold(self) -> None: ...


def _drive(profiler: _Switch, inner: Any) -> Generator[Any, Any, Any]:
    """Run a generator or coroutine ``inner`` step by step, the profiler on during each step
    (and its hooks held from the first step to the last, see ``LineProfiler._hold``)."""
    profiler._hold()
    try:
        return (yield from _steps(profiler, inner))
    finally:
        profiler._unhold()


def _steps(profiler: _Switch, inner: Any) -> Generator[Any, Any, Any]:
    send_value: Any = None
    thrown: BaseException | None = None
    while True:
        on = profiler._enter_call()
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
                profiler._exit_call()
        try:
            send_value = yield item
        except GeneratorExit:
            on = profiler._enter_call()
            try:
                inner.close()
            finally:
                if on:
                    profiler._exit_call()
            raise
        except BaseException as error:  # thrown into us: pass it on to the inner frame
            thrown = error
            send_value = None


class _Stepped:
    """An awaitable that awaits ``inner`` with the profiler on during each of its steps."""

    __slots__ = ("_profiler", "_inner")

    def __init__(self, profiler: _Switch, inner: Any) -> None:
        self._profiler = profiler
        self._inner = inner

    def __await__(self) -> Generator[Any, Any, Any]:
        return _drive(self._profiler, self._inner)


def wrap(profiler: LineProfiler, func: F) -> F:
    """The decorated form of ``func``; see the module docstring."""
    if isinstance(func, (classmethod, staticmethod)):
        return type(func)(wrap(profiler, func.__func__))
    if not callable(func):
        raise TypeError(f"a LineProfiler decorates functions and methods, not {type(func).__name__}")
    if getattr(func, _MARK, None) is profiler:
        return func
    switch: _Switch = profiler
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
            on = switch._enter_call()
            try:
                return func(*args, **kwargs)
            finally:
                if on:
                    switch._exit_call()

    setattr(wrapper, _MARK, profiler)
    return wrapper  # type: ignore[return-value]
