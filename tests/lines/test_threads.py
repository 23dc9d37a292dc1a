"""Every thread that runs project code while enabled is profiled, with its own line state."""

import sys
import threading
import time

import lp_workloads as wl
from lp_helpers import hits, marks

from lineprofiler import LineProfiler


def test_threads_started_inside_the_block(here):
    p = LineProfiler(project_folder=here)
    with p:
        wl.threads_inside(4, 500)
    stats = p.get_stats()
    assert hits(stats, wl.loop) == {"init": 4, "for": 4 * 501, "body": 4 * 500, "ret": 4}
    h = hits(stats, wl.threads_inside)
    assert h["start"] == 4 and h["join"] == 4 and h["make"] == 1


def test_threads_started_before_the_block(here):
    # Threads already running (blocked inside project code) when recording starts.
    go = threading.Event()
    ready = threading.Barrier(4)

    def worker(n):
        ready.wait()
        go.wait()  # @wait
        wl.loop(n)  # @loop

    workers = [threading.Thread(target=worker, args=(300,)) for _ in range(3)]
    for w in workers:
        w.start()
    ready.wait()
    wait_line = marks(worker)["wait"]
    # Start recording only once every worker is blocked inside go.wait(): its line event is
    # then behind it.
    deadline = time.monotonic() + 30
    while True:
        frames = sys._current_frames()
        blocked = 0
        for w in workers:
            f = frames.get(w.ident)
            while f is not None and f.f_code is not worker.__code__:
                f = f.f_back
            if f is not None and f.f_lineno == wait_line and frames[w.ident] is not f:
                blocked += 1
        if blocked == len(workers):
            break
        assert time.monotonic() < deadline
        time.sleep(0.001)
    p = LineProfiler(project_folder=here)
    with p:
        go.set()
        for w in workers:
            w.join()
    stats = p.get_stats()
    assert hits(stats, wl.loop) == {"init": 3, "for": 3 * 301, "body": 3 * 300, "ret": 3}
    h = hits(stats, worker)
    assert h["loop"] == 3  # the line after the wait, counted in each thread
    assert h["wait"] == 0  # its line event came before recording started


def test_threads_keep_separate_line_state(here):
    # Two threads interleave in the same function; each thread's lines are counted on its own
    # and nothing is lost or double counted across the GIL switches.
    barrier = threading.Barrier(2)

    def spin(n):
        barrier.wait()
        for i in range(n):  # @for
            if i % 50 == 0:  # @check
                threading.Event().wait(0)  # @yield_gil
    p = LineProfiler(project_folder=here)
    with p:
        ts = [threading.Thread(target=spin, args=(2000,)) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert hits(p.get_stats(), spin) == {"for": 2 * 2001, "check": 2 * 2000, "yield_gil": 2 * 40}


def test_thread_hook_is_restored(here):
    before = threading.gettrace()
    p = LineProfiler(project_folder=here)
    with p:
        pass
    assert threading.gettrace() is before
