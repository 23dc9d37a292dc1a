"""@profiler: on while the decorated code runs, nesting-safe, for every kind of function."""

import asyncio
import sys

import lp_workloads as wl
import pytest
from lp_helpers import hits, marks

from lineprofiler import LineProfiler
from lineprofiler.lines import _tracer


def tool_ids():
    if not _tracer.MONITORING:
        return None
    return [sys.monitoring.get_tool(i) for i in range(6)]


def test_function(here):
    p = LineProfiler(project_folder=here)
    loop = p(wl.loop)
    assert loop.__name__ == "loop" and loop.__wrapped__ is wl.loop
    before = tool_ids()
    assert loop(100) == sum(range(100))
    assert not p.enabled and tool_ids() == before
    assert hits(p.get_stats(), wl.loop) == {"init": 1, "for": 101, "body": 100, "ret": 1}
    loop(100)
    assert hits(p.get_stats(), wl.loop)["body"] == 200
    assert p(loop) is loop  # decorating twice wraps once


def test_only_the_calls_are_recorded(here):
    p = LineProfiler(project_folder=here)
    fib = p(wl.fib)
    wl.loop(10)  # not decorated, not inside a decorated call
    fib(8)
    stats = p.get_stats()
    assert hits(stats, wl.fib)["test"] == 2 * 34 - 1  # the recursion inside goes through the original
    assert all(key.qualname != "loop" for key in stats)


def test_exceptions_pass_through_and_switch_off(here):
    p = LineProfiler(project_folder=here)
    raiser = p(wl.raiser)
    with pytest.raises(ValueError, match="boom"):
        raiser()
    assert not p.enabled
    assert hits(p.get_stats(), wl.raiser) == {"raise": 1}


def test_recursion_and_nesting_with_the_context_manager(here):
    p = LineProfiler(project_folder=here)

    @p
    def down(n):
        return 0 if n == 0 else 1 + down(n - 1)

    with p:
        assert down(30) == 30
        assert p.enabled
        down(5)
    assert not p.enabled
    (fs,) = [f for f in p.get_stats().values() if f.qualname.endswith("down")]
    assert fs.hits == 31 + 6


def test_methods(here):
    p = LineProfiler(project_folder=here)

    class Box:
        def __init__(self, n):
            self.n = n

        @p
        def size(self):
            return self.n * 2

        @p
        @classmethod
        def make(cls, n):
            return cls(n)

        @p
        @staticmethod
        def twice(n):
            return 2 * n

        @property
        @p
        def half(self):
            return self.n // 2

    box = Box.make(4)
    assert (box.size(), Box.twice(3), box.half) == (8, 6, 2)
    names = sorted(f.qualname.rsplit(".", 1)[-1] for f in p.get_stats().values())
    assert names == ["__init__", "half", "make", "size", "twice"]  # __init__: called inside make()


def test_generator_is_on_only_while_it_runs(here):
    p = LineProfiler(project_folder=here)
    countdown = p(wl.countdown)
    before = tool_ids()
    total = 0
    for v in countdown(50):
        assert not p.enabled  # off while suspended: the consumer is not recorded
        total += v
    assert total == sum(range(1, 51))
    assert hits(p.get_stats(), wl.countdown) == {"while": 51, "yield": 50, "dec": 50}
    assert list(p.get_stats()) == [(wl.countdown.__code__.co_filename, "countdown",
                                    wl.countdown.__code__.co_firstlineno)]
    assert tool_ids() == before  # the hooks held between steps are given back at the end


def test_generator_send_throw_close(here):
    p = LineProfiler(project_folder=here)
    log = []

    @p
    def echo():
        try:
            while True:
                try:
                    got = yield len(log)
                    log.append(got)
                except KeyError:
                    log.append("caught")
        finally:
            log.append("closed")

    before = tool_ids()
    g = echo()
    assert next(g) == 0
    assert g.send("a") == 1
    assert g.throw(KeyError("k")) == 2
    with pytest.raises(ValueError):
        g.throw(ValueError("v"))
    assert log == ["a", "caught", "closed"]
    g2 = echo()
    next(g2)
    g2.close()
    assert log[-1] == "closed"
    g3 = echo()
    next(g3)
    del g3  # abandoned half-way: the hooks are still given back
    assert not p.enabled and tool_ids() == before


def test_coroutines(here):
    p = LineProfiler(project_folder=here)
    tick = p(wl.tick)
    assert asyncio.iscoroutinefunction(tick)

    async def main():
        return await asyncio.gather(*(tick(10) for _ in range(3)))

    assert asyncio.run(main()) == [10, 10, 10]
    assert hits(p.get_stats(), wl.tick) == {"for": 33, "await": 30, "ret": 3}
    assert not p.enabled


def test_coroutine_exceptions_and_cancellation(here):
    p = LineProfiler(project_folder=here)

    @p
    async def waits():
        await asyncio.sleep(10)

    @p
    async def fails():
        await asyncio.sleep(0)
        raise KeyError("x")

    async def main():
        task = asyncio.ensure_future(waits())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(KeyError):
            await fails()

    before = tool_ids()
    asyncio.run(main())
    assert not p.enabled and tool_ids() == before


def test_async_generator(here):
    p = LineProfiler(project_folder=here)

    @p
    async def numbers(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i

    async def main():
        got = [x async for x in numbers(5)]
        agen = numbers(100)
        first = await agen.__anext__()
        await agen.aclose()
        return got, first

    assert asyncio.run(main()) == ([0, 1, 2, 3, 4], 0)
    (fs,) = p.get_stats().values()
    assert fs.lines[min(fs.lines) + 1].hits == 6  # the for line: 5 + the exit test
    assert not p.enabled


def test_another_profiler_recording_means_unprofiled_calls(here):
    p = LineProfiler(project_folder=here)
    other = LineProfiler(project_folder=here)
    loop = p(wl.loop)
    with other:
        assert loop(10) == 45
    assert p.skipped_calls == 1 and p.get_stats() == {}
    assert hits(other.get_stats(), wl.loop)["body"] == 10


def test_decorating_something_else_is_a_type_error(here):
    with pytest.raises(TypeError):
        LineProfiler(project_folder=here)(42)


def test_marks_are_where_the_helpers_expect():
    assert set(marks(wl.countdown)) == {"while", "yield", "dec"}
