"""The workloads of bench_lines.py. bench_lines imports this file twice, as two modules: one
copy is profiled, the other only ever runs unprofiled, so its code is never instrumented."""

import json
import re


def loop(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


WORDS = re.compile(r"\b(\w+)@(\w+)\.com\b")
TEXT = " ".join(f"user{i}@host{i % 7}.com and some filler text {i}" for i in range(200))
DOC = {"users": [{"id": i, "name": f"user{i}", "tags": ["a", "b", "c"], "score": i * 0.5} for i in range(60)]}


def stdlib(n):
    found = 0
    for _ in range(n):
        found += len(WORDS.findall(TEXT))
        blob = json.dumps(DOC, sort_keys=True)
        found += len(json.loads(blob)["users"])
    return found
