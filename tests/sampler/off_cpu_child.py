"""A process whose threads wait in known ways, inside phases, under an accounting Profiler.

    python off_cpu_child.py RUN_DIR SCENARIO [ARG]

Scenarios: ``spin`` (spin 1.5 s in phase "spin"), ``nap`` (sleep 0.8 s in "nap"), ``lock``
(wait 0.8 s in "wait_lock" on a lock another thread holds), ``threads`` (three threads spin
0.8 s outside any phase while the main thread sleeps in "nap"). Before starting, ``pin`` in
ARG pins the process to CPU 0, and ``cgroup=PATH`` moves it into that cgroup folder. Prints the
worker document's ``samples`` as JSON on its last line.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import threading
import time

from lineprofiler.accounting import Profiler


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> None:
    run_dir, scenario = sys.argv[1], sys.argv[2]
    options = sys.argv[3].split(",") if len(sys.argv) > 3 else []
    for option in options:
        if option == "pin":
            os.sched_setaffinity(0, {0})
        elif option.startswith("cgroup="):
            with open(os.path.join(option.removeprefix("cgroup="), "cgroup.procs"), "w") as handle:
                handle.write(str(os.getpid()))
        elif option.startswith("cpu_stat="):
            from lineprofiler.accounting import _sampling_testing

            _sampling_testing.read_cpu_stat_from(option.removeprefix("cpu_stat="))
    profiler = Profiler(run_dir, role=scenario, timeline_hz=20)
    with profiler:
        if scenario == "spin":
            with profiler.phase("spin"):
                spin(1.5)
        elif scenario == "nap":
            with profiler.phase("nap"):
                time.sleep(0.8)
        elif scenario == "lock":
            lock = threading.Lock()
            lock.acquire()
            releaser = threading.Timer(0.8, lock.release)
            releaser.start()
            with profiler.phase("wait_lock"):
                lock.acquire()
            releaser.join()
        elif scenario == "threads":
            spinners = [threading.Thread(target=spin, args=(0.8,)) for _ in range(3)]
            for thread in spinners:
                thread.start()
            with profiler.phase("nap"):
                time.sleep(0.8)
            for thread in spinners:
                thread.join()
        else:
            raise SystemExit(f"unknown scenario {scenario!r}")
    (path,) = glob.glob(os.path.join(run_dir, "**", "w_*.json"), recursive=True)
    with open(path) as handle:
        print(json.dumps(json.load(handle)["samples"]))


if __name__ == "__main__":
    main()
