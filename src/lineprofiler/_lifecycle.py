"""The moments of a process that a profiler must hear of, registered in one place: its exit, its
forks, its signals, and multiprocessing's exit finalizers.

Both layers register through here: the accounting layer's process hooks
(:mod:`lineprofiler.accounting._process`), the line layer's process endings
(:mod:`lineprofiler.lines.endings`) and ``lineprofiler run``; so can an adapter (a fork hook
through :func:`at_fork`).

- :func:`follow`: an object's ``at_exit`` at exit and its fork hooks around every fork, once.
  Neither ``atexit`` nor ``os.register_at_fork`` can be undone, so what follows the process
  does so for its life and checks for itself whether it has anything to do.
- :func:`at_exit`, :func:`cancel_at_exit`, :func:`at_fork`: one function each.
- :class:`ForkNotice`: a fork that ran none of those hooks (a ``fork()`` made from C).
- :class:`SignalChain`: one layer's handler in front of the handlers the program had, and what
  each signal is handed on to.
- :func:`at_multiprocessing_exit`: multiprocessing ends its fork and forkserver children with
  ``os._exit``, which runs no ``atexit``, after its own exit finalizers.

It imports no more than a profiler's start may load in every process of a run: no
:mod:`typing`, and :mod:`_signals` rather than :mod:`signal`, whose enums import :mod:`enum`.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from . import _signals

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Protocol

    class ProcessEvents(Protocol):
        """What :func:`follow` calls: at exit, and before and after each fork."""

        def at_exit(self) -> None: ...
        def before_fork(self) -> None: ...
        def after_fork_parent(self) -> None: ...
        def after_fork_child(self) -> None: ...


__all__ = [
    "ForkNotice",
    "SignalChain",
    "at_exit",
    "at_fork",
    "at_multiprocessing_exit",
    "cancel_at_exit",
    "follow",
    "on_main_thread",
]

#: What follows the process (see :func:`follow`), each once.
_followed: list[object] = []


def at_exit(fn: Callable[[], object]) -> None:
    """``fn()`` at interpreter exit; what is registered last runs first."""
    atexit.register(fn)


def cancel_at_exit(fn: Callable[[], object]) -> None:
    """``fn`` no longer runs at exit."""
    atexit.unregister(fn)


def at_fork(
    *,
    before: Callable[[], object] | None = None,
    after_in_parent: Callable[[], object] | None = None,
    after_in_child: Callable[[], object] | None = None,
) -> None:
    """Hooks around every ``os.fork()`` of this process (and of multiprocessing's fork and
    forkserver start methods), for its life; a ``fork()`` made from C runs none of them."""
    hooks = {"before": before, "after_in_parent": after_in_parent, "after_in_child": after_in_child}
    os.register_at_fork(**{when: fn for when, fn in hooks.items() if fn is not None})


def follow(events: ProcessEvents) -> None:
    """``events.at_exit()`` at exit and ``events``' fork hooks around every fork, for the life of
    the process; once per object, however often asked."""
    if followed(events):
        return
    _followed.append(events)
    at_exit(events.at_exit)
    at_fork(
        before=events.before_fork, after_in_parent=events.after_fork_parent, after_in_child=events.after_fork_child
    )


def followed(events: object) -> bool:
    """Whether :func:`follow` was asked for ``events`` in this process or a parent it forked from."""
    return any(known is events for known in _followed)


def on_main_thread() -> bool:
    """Signal handlers are the main thread's: only it may install them, and only it runs them."""
    return threading.current_thread() is threading.main_thread()


class ForkNotice:
    """The process whose fork hooks ran last. ``os.register_at_fork`` hooks run for ``os.fork``
    and what calls it; a ``fork()`` made from C (a C extension's) runs none, and its child,
    which believes itself its parent, finds out here the first time it looks."""

    def __init__(self) -> None:
        self.pid = os.getpid()

    def forked_unseen(self) -> bool:
        return os.getpid() != self.pid

    def caught_up(self) -> None:
        """This process is the one the hooks know of from now on."""
        self.pid = os.getpid()


class SignalChain:
    """One layer's signal handler, in front of the handlers the program had: installed where the
    handler there is Python's, remembering what it replaced, and put back where ours still
    stands. The handler hands each signal on to :meth:`previous_for` (see
    :func:`lineprofiler._signals.chain`). Main thread only, as signal handlers are."""

    def __init__(self, handler: Callable[[int, Any], None]) -> None:
        self.handler = handler
        #: Signal number -> the handler ours replaced, while ours may still be called.
        self._replaced: dict[int, object] = {}

    def install(
        self,
        *,
        over_any: Iterable[str] = (),
        over_default: Iterable[str] = (),
        note: Callable[[str], object] | None = None,
    ) -> bool:
        """Our handler for each signal named in ``over_any`` (``"SIGTERM"``) whatever Python
        handler it has, and for those in ``over_default`` only while they have their default
        action. A signal this platform lacks, or that is ours already, is passed over;
        ``note(text)`` hears why one could not be taken. False, installing nothing, off the main
        thread."""
        if not on_main_thread():
            return False
        any_handler = tuple(over_any)
        for name in dict.fromkeys((*over_default, *any_handler)):
            signum = _signals.number(name)
            if signum is None or signum in self._replaced:
                continue
            try:
                previous = _signals.current(signum)
                if previous is None:  # installed outside Python: it stays, and the signal is not ours
                    if note is not None:
                        note(f"{name}: a handler installed outside Python is kept; no flush on {name}")
                    continue
                if name not in any_handler and previous != _signals.SIG_DFL:
                    continue
                if _signals.ends_process(previous):  # ours stands in for the default action
                    _signals.stand_in(signum, self.handler)
                else:
                    _signals.install(signum, self.handler)
                self._replaced[signum] = previous
            except (ValueError, OSError) as error:
                if note is not None:
                    note(f"{name}: handler not installed: {error}")
        return True

    def restore(self) -> None:
        """Put back what ours replaced, where ours still stands. Where the program has put a
        handler of its own over ours since, that one stays, and what ours replaced is still
        remembered: the program's handler may call ours, which then hands on as before, and a
        later :meth:`install` does not stand in front of it twice."""
        if not on_main_thread():
            return
        for signum, previous in list(self._replaced.items()):
            try:
                if _signals.current(signum) == self.handler:
                    _signals.install(signum, previous)
                    del self._replaced[signum]
            except (ValueError, OSError):
                pass

    def replaced(self, signum: int) -> object | None:
        """The handler ours replaced for ``signum``; None when ours is not in front of it."""
        return self._replaced.get(signum)

    def remember(self, signum: int, previous: object) -> None:
        """Ours now stands in front of ``previous`` for ``signum`` (installed by the caller)."""
        self._replaced[signum] = previous

    def forget(self, signum: int) -> None:
        """Ours no longer stands for ``signum``: the program has put its own handler there."""
        self._replaced.pop(signum, None)

    def previous_for(self, signum: int) -> object:
        """What a signal that reached our handler is handed on to: what ours replaced; for one
        handled late, after ours was put back, the handler there now (the default action when
        that is ours, or one installed outside Python)."""
        if signum in self._replaced:
            return self._replaced[signum]
        current = _signals.current(signum)
        if current is None or current == self.handler:
            return _signals.SIG_DFL
        return current


def at_multiprocessing_exit(
    owner: object, fn: Callable[[], object], *, priority: int, wanted: Callable[[], bool]
) -> bool:
    """``fn()`` among multiprocessing's exit finalizers at ``priority`` (it runs those of
    priority >= 0 before joining the process's children, and the rest after), and again after
    multiprocessing's reset in each child it starts from this one (``owner`` is what it keys
    that on) while ``wanted()``. ``fn`` is held until exit, as multiprocessing holds its
    finalizers. False when multiprocessing is not imported: nothing to register with yet (ask
    again before a fork). Raises what multiprocessing raises."""
    util = sys.modules.get("multiprocessing.util")
    if util is None:
        return False
    util.Finalize(None, fn, exitpriority=priority)

    def again(_owner: object) -> None:
        util_now = sys.modules.get("multiprocessing.util")
        if util_now is not None and wanted():
            util_now.Finalize(None, fn, exitpriority=priority)

    util.register_after_fork(owner, again)
    return True
