"""The workloads of bench_lines.py. bench_lines imports this file twice, as two modules: one
copy is profiled, the other only ever runs unprofiled, so its code is never instrumented.

Each workload takes one size argument; bench_lines grows it until the unprofiled run is long
enough for stable ratios."""

import json
import re
import threading


def loop(n):
    """A tight arithmetic loop: one line event per iteration and nothing else."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def fib(n):
    """Naive recursion: a call, two line events and a return per call."""
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


EMAIL = re.compile(r"([\w.]+)@(\w+)\.(com|org|net)\b")
RECORDS = [
    json.dumps({"id": i, "email": f"user.{i}@host{i % 7}.com", "tags": ["a", "b", "c"][: i % 3 + 1], "score": i / 4})
    for i in range(64)
]


def stdlib(n):
    """A project loop whose body calls re and json: most of the time is in the standard library
    (its Python code as well as its C), a few project lines per iteration."""
    found = 0
    for i in range(n):
        rec = json.loads(RECORDS[i % len(RECORDS)])
        m = EMAIL.search(rec["email"])
        if m is not None:
            found += len(m.group(2))
        rec["seen"] = True
        found += len(json.dumps(rec))
    return found


def _numbers(n):
    for i in range(n):
        yield i * 3


def _evens(items):
    for x in items:
        if x % 2 == 0:
            yield x


def gen(n):
    """A chain of two generators: a resume and a yield per value in each."""
    total = 0
    for x in _evens(_numbers(n)):
        total += x
    return total


def _worker(n, out, k):
    total = 0
    for i in range(n):
        total += (i ^ k) % 11
    out[k] = total


def threads(n):
    """Four threads running project code (started inside the profiled block)."""
    out = [0, 0, 0, 0]
    workers = [threading.Thread(target=_worker, args=(n // 4, out, k)) for k in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return sum(out)
