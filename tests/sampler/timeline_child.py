"""A process with a known phase schedule, for the timeline truth test.

argv: run_dir, offset_s, period_a, period_b, cycles, stall_from, stall_len, hz. Once it is
profiling it prints "ready" and reads t0 (unix seconds) from stdin. From t0 + offset the process
is in phase A for period_a then B for period_b, `cycles` times, except from t0 + stall_from for
stall_len (absolute: every process at once), when it is outside all phases. It sleeps in small
steps, so it needs little CPU; CPU is not measured, so no phase counts as waiting.

A loaded machine runs the schedule late, so what the process really did is what the test judges
the timeline against: every change of state is logged with the monotonic clock read just before
and just after it (the sampler's clock), to ``transitions_<pid>.json`` beside the run directory.
"""

import json
import os
import sys
import time

from lineprofiler.accounting import Profiler


def main() -> None:
    run_dir = sys.argv[1]
    offset, a, b = (float(x) for x in sys.argv[2:5])
    cycles = int(sys.argv[5])
    stall_from, stall_len, hz = (float(x) for x in sys.argv[6:9])
    profiler = Profiler(run_dir=run_dir, role="actor", enabled=True, measure_cpu=False, timeline_hz=hz)
    with profiler:
        print("ready", flush=True)
        t0 = float(sys.stdin.readline())
        start = t0 + offset
        end = start + cycles * (a + b)

        def wanted(now: float) -> str | None:
            if now < start or now >= end or t0 + stall_from <= now < t0 + stall_from + stall_len:
                return None
            return "A" if (now - start) % (a + b) < a else "B"

        while time.time() < start:
            time.sleep(0.001)
        current = None
        phase = None
        transitions = []  # (monotonic ns before, after, new state or "")
        while True:
            now = time.time()
            if now >= end:
                break
            state = wanted(now)
            if state != current:
                before = time.monotonic_ns()
                if phase is not None:
                    phase.__exit__(None, None, None)
                    phase = None
                if state is not None:
                    phase = profiler.phase(state)
                    phase.__enter__()
                transitions.append((before, time.monotonic_ns(), state or ""))
                current = state
            time.sleep(0.001)
        if phase is not None:
            before = time.monotonic_ns()
            phase.__exit__(None, None, None)
            transitions.append((before, time.monotonic_ns(), ""))
    log = os.path.join(os.path.dirname(os.path.abspath(run_dir)), f"transitions_{os.getpid()}.json")
    with open(log, "w") as handle:
        json.dump(transitions, handle)


if __name__ == "__main__":
    main()
