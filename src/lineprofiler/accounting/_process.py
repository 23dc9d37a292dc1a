"""What is installed once per process for all live profilers: signal handlers, fork hooks, exit.

One :class:`ProcessHooks` object, :data:`PROCESS`, holds the process-wide state: the live
profilers, the handlers it replaced, whether the unwritable-run-dir warning was given, the pid
the hooks last ran in, and the gate of the modules loaded late. The first enabled profiler
installs the hooks, through :mod:`lineprofiler._lifecycle` as the line layer's are; they serve
every live profiler of the process and stay installed (``os.register_at_fork`` and ``atexit``
cannot be undone), doing nothing once no profiler is live. Signal handlers are put back when the
last profiler closes.

What the hooks need of a profiler is a :class:`~._surfaces.ProcessMember`, which the profiler
satisfies; this module never imports the profiler's.

Forks stay as fast as unprofiled ones, also with many threads busy in phases, where every wait
that lets go of the GIL costs the waiting thread its turn behind each of them (a 5 ms switch
interval per busy thread): the fork hooks import nothing, take no lock, and wait for no
thread of the profiler's, except in a process where no other thread runs Python, so that no
other thread competes for the GIL. What the snapshots, a fork child and the exit import late
is imported once, by the first snapshot thread before its first snapshot (:meth:`load_late`),
and a fork waits only while that is under way (it starts with the profiler): a module left
half-imported by a thread that the child does not have would block the child's first import of
it forever.
"""

from __future__ import annotations

import os
import sys
import threading

from .. import _lifecycle, _signals
from . import _phases

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._surfaces import ProcessMember

FLUSH_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGHUP")
#: multiprocessing's exit finalizers at this priority run after it joins its children and
#: before its os._exit.
MP_EXIT_PRIORITY = -100
_MAX_RESTART_DEFERRALS = 100_000
#: The longest a fork waits for the late imports to finish (they take milliseconds, or seconds
#: under heavy GIL contention); past it the fork goes ahead and the profilers say so.
LOAD_WAIT_S = 30.0
#: What a profiler's errors say in a process that a fork() made from C (which runs none of
#: Python's fork hooks) left believing it was its parent.
C_FORK_NOTE = (
    "forked without Python's fork hooks (a fork() made from C, which os.register_at_fork does not see), "
    "noticed at {where}: what this process recorded before then was dropped, since it cannot be told apart "
    "from its parent's; no snapshot thread runs here (the interpreter's lock was copied as the parent's "
    "threads left it, and a new thread contending for it can hang the process), so its files are written "
    "at flush() and close()"
)


def load_late_modules() -> None:
    """Import what a profiler's snapshots, a fork child's start and the exit import when first
    needed, and run the capability probes (cached per process) whose imports and library loads
    the metadata files and the GPU facts make. Never raises."""
    try:
        import pathlib  # noqa: F401  # sample files' paths and the metadata files
        import warnings  # noqa: F401  # the one-time warning of an unwritable run directory

        from . import capabilities, metadata, source_commit  # noqa: F401  # json, and what the probes load

        for name in source_commit.LATE_IMPORTS:  # asking git, once the gate is open
            __import__(name)

        capabilities.all_capabilities()
    except Exception:  # a broken installation: the snapshots record what fails, later
        pass


def ask_git_late() -> None:
    """The project's source commit (:mod:`.source_commit`), asked by the first snapshot thread
    after the late imports: a fork waits for those, never for git. Never raises."""
    try:
        from . import source_commit

        source_commit.remember()
    except Exception:  # the worker file's source then says why, when a snapshot asks again
        pass


def _other_python_threads() -> bool:
    """Whether a thread other than the caller and the profiler's own runs Python in this process
    (one that :mod:`threading` knows of: started by it, or having asked it for its thread)."""
    active = getattr(threading, "_active", None)
    if not isinstance(active, dict):  # not CPython's threading: count through its API
        threads = threading.enumerate()
    else:
        threads = list(active.values())  # one C-level copy: no lock, no GIL release
    current = threading.get_ident()
    for thread in threads:
        if thread.ident != current and not getattr(thread, "lineprofiler_own", False):
            return True
    return False


class ProcessHooks:
    """The process-wide wiring of the live profilers."""

    def __init__(self) -> None:
        self.active: list[ProcessMember] = []
        #: Whether the "cannot write the worker file" warning was given (once per process).
        self.warned_unwritable = False
        self.signals = _lifecycle.SignalChain(self.on_signal)
        #: The frame that called os.fork(), while its fork hooks run.
        self.fork_caller: Any = None
        #: Calls queued by after_fork_returns that have not run yet (each holds on to fork_caller).
        self._awaiting_fork_return = 0
        #: Which process the hooks last ran in: another is a fork child that Python's fork
        #: hooks never reached (a fork() from C).
        self.fork_notice = _lifecycle.ForkNotice()
        #: Held while :meth:`load_late` runs (from before its thread starts): forks wait for it.
        self._loading: threading.Lock | None = None
        self.loaded = False
        #: A flush for a signal is running on the main thread: a signal arriving meanwhile
        #: starts no nested flush.
        self.signal_flushing = False
        #: A signal that ends the process, arrived during a flush: taken once that flush is done.
        self.deferred_end: int | None = None

    def register(self, profiler: ProcessMember) -> None:
        self.ensure_own_process("Profiler()")
        # A fork child that builds its own profiler (a multiprocessing worker constructing
        # Profiler(role="actor")) is one process: the copy inherited from the parent steps aside
        # if it has recorded nothing here, so the child is not counted twice.
        for other in list(self.active):
            if other._inherited and other.recorder is not None and other.recorder.empty:
                other._retire()
        self.active.append(profiler)
        _lifecycle.follow(self)
        self.install_signals(profiler)
        self.mp_register(profiler)

    def unregister(self, profiler: ProcessMember) -> None:
        if profiler in self.active:
            self.active.remove(profiler)
        if not self.active:
            self.signals.restore()

    # ------------------------------------------------------------------ late imports

    def claim_loading(self) -> bool:
        """True when the caller is to run :meth:`load_late` in the thread it is about to start.

        The gate is taken here, in the starting thread, so no fork slips in between the thread's
        start and its first import."""
        if self.loaded or self._loading is not None:
            return False
        gate = threading.Lock()
        gate.acquire()
        self._loading = gate
        return True

    def load_late(self) -> None:
        """:func:`load_late_modules`, then open the gate, then :func:`ask_git_late`."""
        try:
            load_late_modules()
        finally:
            self.loaded = True
            gate, self._loading = self._loading, None
            if gate is not None:
                gate.release()
        ask_git_late()

    def release_loading(self) -> None:
        """Open the gate without loading: the thread that claimed it could not be started."""
        gate, self._loading = self._loading, None
        if gate is not None:
            gate.release()

    def _wait_for_loading(self) -> None:
        gate = self._loading
        if gate is None:
            return
        if gate.acquire(timeout=LOAD_WAIT_S):
            gate.release()
            return
        for profiler in list(self.active):
            profiler._record_error(
                f"fork: the profiler's late imports were still running after {LOAD_WAIT_S:g} s; the child may "
                "find a module half-imported"
            )

    # ------------------------------------------------------------------ signals

    def install_signals(self, profiler: ProcessMember) -> None:
        if not self.signals.install(over_any=FLUSH_SIGNALS, note=profiler._record_error):
            profiler._record_error("signal handlers not installed: profiler constructed outside the main thread")

    def on_signal(self, signum: int, frame: Any) -> None:
        """Flush every live profiler (a signal the process survives at most once a second per
        profiler), then hand the signal on. A signal arriving while a flush of ours runs on this
        thread starts no nested flush: it is handed on at once, or, if it ends the process,
        taken once the flush under way is done (with a final flush of its own). Nothing raises
        from here but the handler chained to."""
        _signals.handled(signum)
        previous: Any = _signals.SIG_DFL
        try:
            previous = self.signals.previous_for(signum)
            ending = _signals.ends_process(previous)
            if self.signal_flushing or self._writing_here():
                if ending:
                    # The first ending signal waits for the flush under way; a second one is
                    # dropped, since the process ends by the first.
                    if self.deferred_end is None:
                        self.deferred_end = signum
                    return
                # Otherwise handed on below: the flush under way covers it.
            else:
                self._flush_all_for_signal(signum, ending)
        except Exception:  # the guest rule: a failed flush never reaches the interrupted code
            pass
        try:
            _signals.chain(signum, frame, previous)
        finally:
            self.end_deferred()

    def _flush_all_for_signal(self, signum: int, ending: bool) -> None:
        name = _signals.signal_name(signum)
        self.ensure_own_process(name)
        self.signal_flushing = True
        try:
            for profiler in list(self.active):
                try:
                    profiler._flush_for_signal(name, ending=ending)
                except Exception:
                    pass
        finally:
            self.signal_flushing = False

    def _writing_here(self) -> bool:
        """Whether this thread is inside one of the live profilers' snapshot writes."""
        for profiler in self.active:
            snapshots = getattr(profiler, "_snapshots", None)
            if snapshots is not None and snapshots.writing_here():
                return True
        return False

    def end_deferred(self) -> None:
        """Take the ending signal that arrived during a flush, now that no flush of ours runs on
        the main thread: its final flush, then its default action."""
        signum = self.deferred_end
        if signum is None or self.signal_flushing or threading.current_thread() is not threading.main_thread():
            return
        if self._writing_here():
            return
        self.deferred_end = None
        self.on_signal(signum, None)

    # ------------------------------------------------------------------ exit

    def at_exit(self) -> None:
        self.ensure_own_process("exit")
        for profiler in list(self.active):
            try:
                profiler.close()
            except Exception:
                pass

    def mp_register(self, profiler: ProcessMember) -> None:
        """multiprocessing's fork and forkserver children end with os._exit (no atexit):
        flush from its exit finalizers instead, re-registered after its post-fork reset."""
        if profiler._mp_registered:
            return
        try:
            profiler._mp_registered = _lifecycle.at_multiprocessing_exit(
                profiler, profiler.close, priority=MP_EXIT_PRIORITY, wanted=lambda: profiler in self.active
            )
        except Exception as error:
            profiler._mp_registered = True
            profiler._record_error(f"multiprocessing exit hook: {error}")

    # ------------------------------------------------------------------ fork

    def before_fork(self) -> None:
        try:
            self.fork_caller = sys._getframe(1)  # the frame that called os.fork()
        except ValueError:
            self.fork_caller = None
        if not self.active:
            return
        self._wait_for_loading()
        # With other threads running Python, the snapshot threads stay up across the fork:
        # stopping one means waiting for it to get the GIL back, once per busy thread. They hold
        # nothing the child needs (it replaces the locks it copies, and they import nothing
        # now), and the process forks multi-threaded anyway. Alone, they are stopped, so that
        # Python does not warn about forking a multi-threaded process.
        crowded = _other_python_threads()
        for profiler in list(self.active):
            try:
                self.mp_register(profiler)  # multiprocessing may have been imported since
                profiler._before_fork(crowded=crowded)
            except Exception:
                pass

    def after_fork_parent(self) -> None:
        for profiler in list(self.active):
            try:
                profiler._after_fork_parent()
            except Exception:
                pass
        if not self._awaiting_fork_return:
            # Nothing waits for os.fork() to return: let go of its frame now, or it and every
            # local in it (a DataLoader, say) outlive the function that forked, until the next
            # fork (3.11 never deferred, and kept it).
            self.fork_caller = None

    def after_fork_child(self) -> None:
        if self.fork_notice.forked_unseen():  # not when a signal handled earlier in this child did it already
            self._become_child(None)

    def ensure_own_process(self, where: str) -> None:
        """Where files are written: in a process that a fork() from C made, which no fork hook
        reached, do what the child's fork hook would have done (new identity, files and tree),
        noting it in each profiler's errors."""
        if self.fork_notice.forked_unseen():
            self._become_child(C_FORK_NOTE.format(where=where))

    def _become_child(self, note: str | None) -> None:
        self.fork_notice.caught_up()
        self.fork_caller = None
        self.signal_flushing = False
        self.deferred_end = None
        self._loading = None  # if it was held, it was by a thread this process does not have
        if not _lifecycle.followed(self):
            return  # no profiler was ever live here: nothing to reset
        try:
            _phases.after_fork_child()
        except Exception:
            pass
        for profiler in list(self.active):
            try:
                profiler._after_fork_child(note=note)
            except Exception as error:
                try:
                    profiler._record_error(f"fork child: {type(error).__name__}: {error}")
                except Exception:
                    pass

    def after_fork_returns(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` in the parent once ``os.fork()`` has returned, not inside its hooks.

        A thread started inside a fork hook is counted by 3.12+'s "multi-threaded fork" check
        after the fact, so there ``fn`` runs from a pending call. On 3.11 it runs at once: there
        a pending call that re-queues itself while a trace or profile function is set
        (VizTracer, coverage, a debugger) spins forever, because the re-queued call keeps the
        eval breaker set and 3.11's traced dispatch re-runs RESUME.
        """
        if sys.version_info < (3, 12):
            fn()
            return
        attempts = 0
        parent_pid = os.getpid()

        def when_out_of_fork() -> None:
            # Queued in the parent and inherited by a child forked (from another thread) before
            # it ran: it may fire inside threading's own after-fork reset, where a thread started
            # is lost to it. The child's own fork hook starts the child's thread.
            if os.getpid() != parent_pid:
                return
            # A pending call runs at the next bytecode boundary, which may still be inside
            # another fork hook: defer again while the frame that called os.fork() is below.
            nonlocal attempts
            caller = self.fork_caller
            frame = sys._getframe(1) if caller is not None else None
            inside = False
            f = frame
            while f is not None:
                if f is caller:
                    inside = f is not frame
                    break
                f = f.f_back
            attempts += 1
            if inside and attempts < _MAX_RESTART_DEFERRALS and _phases.defer(when_out_of_fork):
                return
            self._awaiting_fork_return -= 1
            self.fork_caller = None
            fn()

        if _phases.defer(when_out_of_fork):
            self._awaiting_fork_return += 1
        else:
            fn()


#: The one instance of the process.
PROCESS = ProcessHooks()
