"""A program with no phase() calls, traced with trace="auto" (copied into a git project folder
by tests/accounting/test_auto_trace.py). Prints its worker file's phases and auto_trace as JSON.

    python auto_trace_program.py RUN_DIR [FUNCTION_GLOB ...]
"""

import glob
import json
import sys
import threading
import time

from lineprofiler.accounting import Profiler


def load_batch(i):
    time.sleep(0.001)
    return [i] * 10


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def numbers(n):
    for i in range(n):
        yield i


def fails():
    raise ValueError("planted")


def train(steps):
    total = 0
    for i in range(steps):
        total += sum(load_batch(i))
        total += fib(4)
    for x in numbers(3):
        total += x
    try:
        fails()
    except ValueError:
        pass
    return total


def worker():
    for i in range(5):
        load_batch(i)


def main():
    run_dir, globs = sys.argv[1], sys.argv[2:]
    profiler = Profiler(run_dir, role="trainer", trace="auto", trace_functions=globs or None)
    with profiler:
        thread = threading.Thread(target=worker)
        thread.start()
        train(10)
        thread.join()
    (path,) = glob.glob(run_dir + "/**/w_*.json", recursive=True)
    with open(path) as handle:
        document = json.load(handle)
    monitoring = getattr(sys, "monitoring", None)
    tools = [monitoring.get_tool(i) for i in range(6)] if monitoring else []
    print(json.dumps({
        "phases": {p["path"]: p["entries"] for p in document["phases"]},
        "auto_trace": document.get("auto_trace"),
        "repairs": document.get("repairs"),
        "errors": document["errors"],
        "spans": document["trace"]["recorded"] if document.get("trace") else 0,
        "tools_after": tools,
    }))


if __name__ == "__main__":
    main()
