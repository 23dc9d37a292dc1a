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
