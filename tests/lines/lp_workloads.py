"""Functions the tests profile. Lines the tests look at carry a ``# @name`` marker."""

import asyncio
import threading


def loop(n):
    total = 0  # @init
    for i in range(n):  # @for
        total += i  # @body
    return total  # @ret


def fib(n):
    if n < 2:  # @test
        return n  # @base
    return fib(n - 1) + fib(n - 2)  # @rec


def countdown(n):
    while n > 0:  # @while
        yield n  # @yield
        n -= 1  # @dec


def consume_countdown(n):
    total = 0  # @init
    for v in countdown(n):  # @for
        total += v  # @body
    return total  # @ret


def raiser():
    raise ValueError("boom")  # @raise


def catches(n):
    caught = 0  # @init
    for _ in range(n):  # @for
        try:  # @try
            raiser()  # @call
        except ValueError:  # @except
            caught += 1  # @handled
    return caught  # @ret


async def tick(n):
    for _ in range(n):  # @for
        await asyncio.sleep(0)  # @await
    return n  # @ret


async def run_ticks(k, n):
    results = await asyncio.gather(*(tick(n) for _ in range(k)))  # @gather
    return sum(results)  # @ret


def threads_inside(k, n):
    workers = [threading.Thread(target=loop, args=(n,)) for _ in range(k)]  # @make
    for w in workers:  # @for
        w.start()  # @start
    for w in workers:  # @for2
        w.join()  # @join


class Shape:
    def area(self, n):
        return n * n  # @area

    @staticmethod
    def double(n):
        return 2 * n  # @double


# -- exact-time workloads: `adv` is the test clock's advance(ns), a C function ----------------


def timed_helper(adv):
    adv(10)  # @h1
    adv(20)  # @h2


def timed_work(adv):
    adv(100)  # @a
    timed_helper(adv)  # @b
    adv(5)  # @c


def timed_gen(adv):
    adv(1)  # @g1
    yield 1  # @g2
    adv(2)  # @g3
    yield 2  # @g4
    adv(4)  # @g5


def timed_consume(adv):
    g = timed_gen(adv)  # @k1
    next(g)  # @k2
    adv(1000)  # @k3
    next(g)  # @k4
    adv(50)  # @k5
    g.close()  # @k6


def timed_raiser(adv):
    adv(7)  # @r1
    raise ValueError(adv(9))  # @r2


def timed_catcher(adv):
    try:  # @c1
        timed_raiser(adv)  # @c2
    except ValueError:  # @c3
        adv(11)  # @c4
    try:  # @c5
        raise KeyError(adv(13))  # @c6
    except KeyError:  # @c7
        adv(2)  # @c8


async def timed_sleeper(adv):
    adv(3)  # @s1
    await asyncio.sleep(0)  # @s2
    adv(4)  # @s3


async def timed_other(adv):
    adv(500)  # @o1


async def timed_main(adv):
    await asyncio.gather(timed_sleeper(adv), timed_other(adv))  # @m1


def timed_deep(adv, n):
    if n == 0:  # @t
        return adv(1)  # @z
    x = timed_deep(adv, n - 1) + 0 * adv(2)  # @r  (time after the inner call returns)
    # padding comment 0: no bytecode, so the next line lies far below
    # padding comment 1: no bytecode, so the next line lies far below
    # padding comment 2: no bytecode, so the next line lies far below
    # padding comment 3: no bytecode, so the next line lies far below
    # padding comment 4: no bytecode, so the next line lies far below
    # padding comment 5: no bytecode, so the next line lies far below
    # padding comment 6: no bytecode, so the next line lies far below
    # padding comment 7: no bytecode, so the next line lies far below
    # padding comment 8: no bytecode, so the next line lies far below
    # padding comment 9: no bytecode, so the next line lies far below
    # padding comment 10: no bytecode, so the next line lies far below
    # padding comment 11: no bytecode, so the next line lies far below
    # padding comment 12: no bytecode, so the next line lies far below
    # padding comment 13: no bytecode, so the next line lies far below
    # padding comment 14: no bytecode, so the next line lies far below
    # padding comment 15: no bytecode, so the next line lies far below
    # padding comment 16: no bytecode, so the next line lies far below
    # padding comment 17: no bytecode, so the next line lies far below
    # padding comment 18: no bytecode, so the next line lies far below
    # padding comment 19: no bytecode, so the next line lies far below
    # padding comment 20: no bytecode, so the next line lies far below
    # padding comment 21: no bytecode, so the next line lies far below
    # padding comment 22: no bytecode, so the next line lies far below
    # padding comment 23: no bytecode, so the next line lies far below
    # padding comment 24: no bytecode, so the next line lies far below
    # padding comment 25: no bytecode, so the next line lies far below
    # padding comment 26: no bytecode, so the next line lies far below
    # padding comment 27: no bytecode, so the next line lies far below
    # padding comment 28: no bytecode, so the next line lies far below
    # padding comment 29: no bytecode, so the next line lies far below
    # padding comment 30: no bytecode, so the next line lies far below
    # padding comment 31: no bytecode, so the next line lies far below
    # padding comment 32: no bytecode, so the next line lies far below
    # padding comment 33: no bytecode, so the next line lies far below
    # padding comment 34: no bytecode, so the next line lies far below
    # padding comment 35: no bytecode, so the next line lies far below
    # padding comment 36: no bytecode, so the next line lies far below
    # padding comment 37: no bytecode, so the next line lies far below
    # padding comment 38: no bytecode, so the next line lies far below
    # padding comment 39: no bytecode, so the next line lies far below
    y = adv(3)  # @far
    return x + y  # @ret


# -- a workload for the differential test against the pure-Python reference -------------------
# Every line advances the clock by its own amount, so any time billed to the wrong line shows.


def d_leaf(adv, k):
    adv(1 + k)
    return k * 2


def d_rec(adv, n):
    adv(3)
    if n <= 1:
        return d_leaf(adv, n)
    return d_rec(adv, n - 1) + d_rec(adv, n - 2)


def d_gen(adv, n):
    try:
        for i in range(n):
            got = yield (adv(5), i)[1]
            if got:
                adv(got)
    finally:
        adv(7)


def d_sub(adv):
    yield from d_gen(adv, 3)
    adv(11)
    return 42


def d_raise(adv, depth):
    adv(13)
    if depth == 0:
        raise KeyError(adv(17))
    try:
        d_raise(adv, depth - 1)
    finally:
        adv(19)


class D:
    def __init__(self, adv):
        self.adv = adv
        adv(23)

    def __enter__(self):
        self.adv(29)
        return self

    def __exit__(self, *exc):
        self.adv(31)
        return True


async def d_co(adv, n):
    for _ in range(n):
        adv(37)
        await asyncio.sleep(0)
        adv(41)
    return n


async def d_co_main(adv):
    res = await asyncio.gather(d_co(adv, 2), d_co(adv, 3))
    adv(43)
    return res


def diff_main(adv):
    total = d_rec(adv, 6)
    g = d_gen(adv, 4)
    next(g)
    adv(47)
    g.send(5)
    try:
        g.throw(ValueError("x"))
    except ValueError:
        adv(53)
    for _ in d_sub(adv):
        adv(59)
    try:
        d_raise(adv, 3)
    except KeyError:
        adv(61)
    with D(adv):
        adv(67)
        raise RuntimeError("swallowed")
    squares = [(adv(1), i * i)[1] for i in range(5)]
    f = lambda x: (adv(71), x)[1]  # noqa: E731
    f(3)
    h = d_gen(adv, 10)
    next(h)
    h.close()
    total += asyncio.run(d_co_main(adv))[0] + sum(squares)
    return total
