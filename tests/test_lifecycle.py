"""lineprofiler._lifecycle: the one place both layers register exit, fork and signal hooks."""

import os
import signal
import threading

import pytest

from lineprofiler import _lifecycle


@pytest.fixture
def sigusr2():
    """SIGUSR2 at its default action for the test, whatever the test leaves."""
    before = signal.signal(signal.SIGUSR2, signal.SIG_DFL)
    try:
        yield signal.SIGUSR2
    finally:
        signal.signal(signal.SIGUSR2, before)


def ours(signum, frame):
    pass


def test_a_chain_stands_in_for_a_default_action_and_puts_it_back(sigusr2):
    chain = _lifecycle.SignalChain(ours)
    assert chain.install(over_default=["SIGUSR2", "SIGNOSUCH"])
    assert signal.getsignal(sigusr2) is ours
    assert chain.replaced(sigusr2) == signal.SIG_DFL
    assert chain.previous_for(sigusr2) == signal.SIG_DFL
    chain.restore()
    assert signal.getsignal(sigusr2) == signal.SIG_DFL and chain.replaced(sigusr2) is None


def test_over_default_passes_over_a_program_handler_and_over_any_takes_it(sigusr2):
    def program(signum, frame):
        pass

    signal.signal(sigusr2, program)
    passing = _lifecycle.SignalChain(ours)
    passing.install(over_default=["SIGUSR2"])
    assert signal.getsignal(sigusr2) is program and passing.replaced(sigusr2) is None
    taking = _lifecycle.SignalChain(ours)
    taking.install(over_any=["SIGUSR2"])
    assert signal.getsignal(sigusr2) is ours and taking.previous_for(sigusr2) is program
    taking.restore()
    assert signal.getsignal(sigusr2) is program


def test_a_handler_put_over_ours_stays_and_ours_still_hands_on(sigusr2):
    def program(signum, frame):
        pass

    chain = _lifecycle.SignalChain(ours)
    chain.install(over_any=["SIGUSR2"])
    signal.signal(sigusr2, program)
    chain.restore()
    assert signal.getsignal(sigusr2) is program
    assert chain.previous_for(sigusr2) == signal.SIG_DFL  # what ours replaced, still known
    chain.install(over_any=["SIGUSR2"])  # and not stood in front of twice
    assert signal.getsignal(sigusr2) is program


def test_a_signal_handled_after_the_chain_was_put_back_goes_to_what_is_there(sigusr2):
    def program(signum, frame):
        pass

    chain = _lifecycle.SignalChain(ours)
    signal.signal(sigusr2, program)
    assert chain.previous_for(sigusr2) is program
    signal.signal(sigusr2, ours)
    assert chain.previous_for(sigusr2) == signal.SIG_DFL


def test_no_handler_is_installed_off_the_main_thread(sigusr2):
    chain = _lifecycle.SignalChain(ours)
    results = []
    thread = threading.Thread(target=lambda: results.append(chain.install(over_any=["SIGUSR2"])))
    thread.start()
    thread.join()
    assert results == [False] and signal.getsignal(sigusr2) == signal.SIG_DFL


def test_a_note_hears_why_a_signal_was_not_taken(sigusr2, monkeypatch):
    notes = []
    monkeypatch.setattr(_lifecycle._signals, "current", lambda signum: None)  # as for a C handler
    _lifecycle.SignalChain(ours).install(over_any=["SIGUSR2"], note=notes.append)
    assert notes == ["SIGUSR2: a handler installed outside Python is kept; no flush on SIGUSR2"]


class Events:
    def __init__(self):
        self.calls = []

    def at_exit(self):
        self.calls.append("exit")

    def before_fork(self):
        self.calls.append("before")

    def after_fork_parent(self):
        self.calls.append("parent")

    def after_fork_child(self):
        self.calls.append("child")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_what_follows_the_process_hears_each_fork_once_and_notices_none_it_missed():
    events = Events()
    _lifecycle.follow(events)
    _lifecycle.follow(events)  # once, however often asked
    assert _lifecycle.followed(events)
    notice = _lifecycle.ForkNotice()
    pid = os.fork()
    if pid == 0:  # the child: its hook ran, and the notice sees the new process
        ok = events.calls == ["before", "child"] and notice.forked_unseen()
        notice.caught_up()
        os._exit(0 if ok and not notice.forked_unseen() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert events.calls == ["before", "parent"] and not notice.forked_unseen()
    _lifecycle.cancel_at_exit(events.at_exit)
