"""How a process with a line-stats file open still writes it, whichever way it ends.

:data:`ENDINGS`, the one :class:`ProcessEndings` of the process, is installed while a file is
open (a child's or a root's :class:`~lineprofiler.lines.children.Session`, or what ``lineprofiler
run`` saves, a :class:`Closer`):

- at exit and among multiprocessing's exit finalizers, through :mod:`lineprofiler._lifecycle`
  as the accounting layer's hooks are;
- ``os._exit`` is wrapped: the files are written, then the process exits with the same code;
- ``os.execv`` and ``os.execve`` (which every ``os.exec*`` ends in) are wrapped: the files are
  written before the exec, and the program's environment is put back, so the new program runs
  unchanged; if the exec raises, recording goes on;
- signals: a handler for each of :data:`ENDING_SIGNALS` at its default action (a stand-in for
  it, also when the program later sets it back to SIG_DFL through :mod:`signal`, which then
  reports SIG_DFL as before), and for :data:`FLUSH_SIGNALS` over any Python handler. An ending
  signal writes the files, puts the default action back and is sent again, so the process ends
  by it; any other writes a snapshot and chains to the program's handler;
- fork: the profilers' locks are held across it, and a child's files are its own.

Everything is put back when the last file closes, where it is still ours (another tool may have
wrapped on top: ours then passes through). What this module needs of a session, a closer and
their profilers is named by the Protocols below; it imports neither.
"""

from __future__ import annotations

import contextlib
import operator
import os
import signal
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import _lifecycle, _signals

__all__ = ["ENDINGS", "ENDING_SIGNALS", "FLUSH_SIGNALS", "Closer", "Ending", "OpenFile", "ProcessEndings"]

#: Signals whose default action ends the process without a word to Python. While a line-stats
#: file is open, a handler of ours stands in for the default action of each one (at the start,
#: and when the program sets one back to SIG_DFL): it saves, puts the default action back and
#: sends the signal again, so the process still ends by it. SIGINT is Python's own
#: (KeyboardInterrupt); SIGQUIT is left to end a process at once, stuck or not.
ENDING_SIGNALS = (
    "SIGTERM",
    "SIGHUP",
    "SIGUSR1",
    "SIGUSR2",
    "SIGALRM",
    "SIGPIPE",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
)
#: Handled over a handler of the program's too: a snapshot of the file, then the program's own
#: handler runs (or the signal stays ignored).
FLUSH_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGHUP")
#: multiprocessing runs exit finalizers of priority >= 0 before joining a process's own children
#: and the rest after: ours run after, when the work of the process is over.
_MP_EXIT_PRIORITY = -90


@dataclass(frozen=True)
class Ending:
    """A way a process ends that skips ``atexit``: ``how`` is ``"signal"`` (``signum`` set),
    ``"os._exit"`` (``exit_code`` set) or ``"exec"``."""

    how: str
    signum: int | None = None
    exit_code: int | None = None

    @property
    def signal_name(self) -> str | None:
        return None if self.signum is None else _signals.signal_name(self.signum)


class EndingProfiler(Protocol):
    """What the endings do with a file's profiler (a LineProfiler): hold its lock across a
    fork, and after an exec that failed switch it on again as deep as it was."""

    @property
    def enabled(self) -> bool: ...
    @property
    def depth(self) -> int: ...
    def enable(self) -> None: ...
    def lock_for_fork(self) -> None: ...
    def unlock_after_fork(self) -> None: ...


class Closer(Protocol):
    """What else a process saves when it ends that way (``lineprofiler run``'s own file and
    tables): called after the sessions have written theirs, in the process ``pid`` only."""

    @property
    def pid(self) -> int: ...
    @property
    def profiler(self) -> EndingProfiler: ...
    def on_ending(self, ending: Ending) -> None: ...
    def on_exec_failed(self) -> None: ...


class OpenFile(Closer, Protocol):
    """A line-stats file open in this process (:class:`~lineprofiler.lines.children.Session`):
    ended at exit, snapshotted on a signal it survives, its own again in a fork child."""

    errors: list[str]
    #: Whether its multiprocessing exit finalizer is registered in this process.
    mp_hooked: bool

    def end(
        self, status: str = "stopped", *, exit_code: int | None = None, signal_name: str | None = None
    ) -> Path | None: ...
    def write(self, status: str, *, signal_name: str | None = None, stop: bool = False) -> Path | None: ...
    def after_fork_child(self) -> None: ...


class ProcessEndings:
    """The process's open files and what is installed for them; see the module docstring."""

    def __init__(self) -> None:
        self.sessions: list[OpenFile] = []
        #: The runner's own file and tables (see :class:`Closer`).
        self.closers: list[Closer] = []
        #: The functions replaced while hooked, by name: what the hooks call.
        self.replaced: dict[str, Any] = {}
        self.signals = _lifecycle.SignalChain(self.on_signal)
        #: A signal that came while a last write was under way waits here for it to finish.
        self.held_signal: int | None = None
        self.holding = 0
        self.ending = False

    def register(self, session: OpenFile) -> None:
        if session not in self.sessions:
            self.sessions.append(session)
        self.install()
        self.mp_hook(session)

    def unregister(self, session: OpenFile) -> None:
        if session in self.sessions:
            self.sessions.remove(session)
        if self.idle():
            self.uninstall()

    def add_closer(self, closer: Closer) -> None:
        if closer not in self.closers:
            self.closers.append(closer)
        self.install()

    def remove_closer(self, closer: Closer) -> None:
        if closer in self.closers:
            self.closers.remove(closer)
        if self.idle():
            self.uninstall()

    def idle(self) -> bool:
        return not self.sessions and not self.closers

    def install(self) -> None:
        _lifecycle.follow(self)
        for module, name, hook in _hooks():
            if name not in self.replaced:  # else still ours, under another tool's wrapper
                self.replaced[name] = getattr(module, name)
                setattr(module, name, hook)
        self.signals.install(over_default=ENDING_SIGNALS, over_any=FLUSH_SIGNALS)

    def uninstall(self) -> None:
        self.signals.restore()
        for module, name, hook in _hooks():
            if name in self.replaced and getattr(module, name) is hook:
                setattr(module, name, self.replaced.pop(name))

    # -- exit

    def at_exit(self) -> None:
        for session in list(self.sessions):
            session.end("exited")

    def mp_hook(self, session: OpenFile) -> None:
        """multiprocessing ends fork and forkserver children with ``os._exit``, after running
        its exit finalizers: register one, again after its post-fork reset in each child."""
        if session.mp_hooked:
            return
        try:
            session.mp_hooked = _lifecycle.at_multiprocessing_exit(
                session,
                lambda: session.end("exited"),
                priority=_MP_EXIT_PRIORITY,
                wanted=lambda: session in self.sessions,
            )
        except Exception as error:
            session.mp_hooked = True
            session.errors.append(f"multiprocessing exit hook: {error!r}")

    def process_ends(self, ending: Ending) -> Callable[[], None] | None:
        """This process ends without atexit: every open file of it is written (sessions, then
        closers). Never raises. For an exec, returns what undoes it if the exec fails."""
        if self.ending:
            return None
        self.ending = True
        pid = os.getpid()
        sessions = [s for s in self.sessions if s.pid == pid]
        closers = [c for c in self.closers if c.pid == pid]
        depths: dict[int, tuple[EndingProfiler, int]] = {}
        for owner in (*sessions, *closers):
            depths.setdefault(id(owner.profiler), (owner.profiler, owner.profiler.depth))
        try:
            for owner in (*sessions, *closers):
                try:
                    owner.on_ending(ending)
                except Exception:
                    pass
        finally:
            self.ending = False
        if ending.how != "exec":
            return None

        def undo() -> None:
            for profiler, depth in depths.values():
                try:
                    while profiler.depth < depth:
                        profiler.enable()
                except Exception:
                    pass
            for owner in (*sessions, *closers):
                try:
                    owner.on_exec_failed()
                except Exception:
                    pass

        return undo

    # -- fork

    def before_fork(self) -> None:
        for session in list(self.sessions):
            try:
                self.mp_hook(session)  # multiprocessing may have been imported since
                session.profiler.lock_for_fork()
            except Exception:
                pass

    def after_fork_parent(self) -> None:
        for session in list(self.sessions):
            try:
                session.profiler.unlock_after_fork()
            except Exception:
                pass

    def after_fork_child(self) -> None:
        self.ending = False
        self.holding = 0
        self.held_signal = None
        self.closers = [c for c in self.closers if c.pid == os.getpid()]  # the parent's are not ours
        for session in list(self.sessions):
            try:
                session.profiler.unlock_after_fork()
            except Exception:
                pass
            if not session.profiler.enabled:
                self.sessions.remove(session)
                continue
            try:
                session.after_fork_child()
            except Exception:
                traceback.print_exc()
        if self.idle():
            self.uninstall()  # a child with nothing to save runs as it would without us

    # -- signals

    @contextlib.contextmanager
    def holding_signals(self) -> Iterator[None]:
        """While a last write is under way, a signal of ours waits for it instead of cutting it
        short (a Pool's terminate() often lands exactly while its workers exit)."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
            if not self.holding and self.held_signal is not None:
                held, self.held_signal = self.held_signal, None
                if _lifecycle.on_main_thread():
                    self.on_signal(held, None)
                else:  # only the main thread may handle it: send it again, for that one
                    try:
                        os.kill(os.getpid(), held)
                    except OSError:
                        pass

    @contextlib.contextmanager
    def quiet_sigpipe(self) -> Iterator[None]:
        """While the profiler prints: a pipe whose reader left is an error it ignores, not the
        end of the program (when our stand-in is SIGPIPE's handler, as Python's SIG_IGN is not)."""
        signum = _signals.number("SIGPIPE")
        swapped: int | None = None
        try:
            if signum is not None and _lifecycle.on_main_thread() and _signals.current(signum) == self.on_signal:
                _signals.install(signum, _signals.SIG_IGN)
                swapped = signum
        except (ValueError, OSError):
            pass
        try:
            yield
        finally:
            if swapped is not None:
                try:
                    _signals.stand_in(swapped, self.on_signal)
                except (ValueError, OSError):
                    pass

    def on_signal(self, signum: int, frame: Any) -> None:
        _signals.handled(signum)
        if self.ending:
            return  # came in the middle of the last writes of a process that is ending anyway
        previous = self.signals.previous_for(signum)
        if self.holding:
            self.held_signal = signum
            return
        if _signals.ends_process(previous):
            self.process_ends(Ending("signal", signum=signum))
        else:  # the process lives on: a snapshot, and recording goes on
            for session in list(self.sessions):
                try:
                    session.write("signalled", signal_name=_signals.signal_name(signum))
                except Exception:
                    pass
        _signals.chain(signum, frame, previous)

    def set_handler(self, signalnum: Any, handler: Any) -> Any:
        """``signal.signal`` while hooked: SIG_DFL for one of the ending signals puts our
        stand-in there instead; what the program is told was there is what it set."""
        real = self.replaced.get("signal", _REAL["signal"])
        stand_in = (
            not self.idle()
            and isinstance(handler, int)
            and not isinstance(handler, bool)
            and handler == _signals.SIG_DFL
            and signalnum in _ending_numbers()
            and _lifecycle.on_main_thread()
        )
        before = real(signalnum, self.on_signal if stand_in else handler)
        if stand_in:
            _signals.watch(signalnum)
        shown = self.shown(signalnum, before)
        if stand_in:
            self.signals.remember(signalnum, _signals.SIG_DFL)
        elif before == self.on_signal:
            self.signals.forget(signalnum)
        return shown

    def get_handler(self, signalnum: Any) -> Any:
        """``signal.getsignal`` while hooked: the handler the program set, not our stand-in."""
        real = self.replaced.get("getsignal", _REAL["getsignal"])
        return self.shown(signalnum, real(signalnum))

    def shown(self, signalnum: Any, handler: Any) -> Any:
        replaced = self.signals.replaced(signalnum) if isinstance(signalnum, int) else None
        if handler == self.on_signal and replaced is not None:
            handler = replaced
            if isinstance(handler, int):
                try:
                    return signal.Handlers(handler)
                except ValueError:
                    return handler
        return handler

    # -- exec

    def exec_through(self, name: str, path: Any, *args: Any, **kwargs: Any) -> None:
        real = self.replaced.get(name, _REAL[name])
        undo = self.process_ends(Ending("exec")) if _may_exec(path) else None
        try:
            real(path, *args, **kwargs)
        except BaseException:
            if undo is not None:
                undo()
            raise


#: The one of the process.
ENDINGS = ProcessEndings()

#: What the hooks fall back on when called after they were taken out (a reference kept by
#: another tool that wrapped them).
_REAL: dict[str, Any] = {
    "_exit": os._exit,
    "execv": os.execv,
    "execve": os.execve,
    "signal": signal.signal,
    "getsignal": signal.getsignal,
}


def _ending_numbers() -> set[int]:
    return {n for n in map(_signals.number, ENDING_SIGNALS) if n is not None}


def _exit_code(status: Any) -> int | None:
    """The code ``os._exit(status)`` exits with, or None when it would refuse ``status``."""
    try:
        code = operator.index(status)
    except TypeError:
        return None
    return code if -(2**31) <= code < 2**31 else None


def _may_exec(path: Any) -> bool:
    """Whether an exec of ``path`` has a chance (``os.execvp`` tries every PATH folder: the
    files are written once, for the one that is there)."""
    if isinstance(path, int):
        return True
    try:
        where = os.fspath(path)
        return os.access(where, os.X_OK) and not os.path.isdir(where)
    except Exception:
        return False


def _exit_hook(status: Any) -> None:
    """``os._exit`` while a line-stats file is open: write, then exit with the same code."""
    real = ENDINGS.replaced.get("_exit", _REAL["_exit"])
    code = _exit_code(status)
    if code is not None:
        try:
            ENDINGS.process_ends(Ending("os._exit", exit_code=code))
        except BaseException:
            pass
    real(status)


def _execv_hook(path: Any, argv: Any, /) -> None:
    ENDINGS.exec_through("execv", path, argv)


def _execve_hook(path: Any, argv: Any, env: Any) -> None:
    ENDINGS.exec_through("execve", path, argv, env)


def _signal_hook(signalnum: Any, handler: Any) -> Any:
    return ENDINGS.set_handler(signalnum, handler)


def _getsignal_hook(signalnum: Any) -> Any:
    return ENDINGS.get_handler(signalnum)


_signal_hook.__doc__ = signal.signal.__doc__
_getsignal_hook.__doc__ = signal.getsignal.__doc__


def _hooks() -> tuple[tuple[Any, str, Callable[..., Any]], ...]:
    return (
        (os, "_exit", _exit_hook),
        (os, "execv", _execv_hook),
        (os, "execve", _execve_hook),
        (signal, "signal", _signal_hook),
        (signal, "getsignal", _getsignal_hook),
    )
