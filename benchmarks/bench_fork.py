"""What ``os.fork()`` costs the forking thread with the profiler on, with threads busy in phases.

With many threads running Python, every wait of the forking thread that lets go of the GIL
costs it a turn behind each of them (a switch interval, 5 ms, per busy thread), so a fork hook
that waits for a thread, sleeps, or imports a module turns a millisecond fork into seconds.
This benchmark measures the fork as the program sees it: ``time.perf_counter()`` around
``os.fork()`` in the parent (the child leaves at once with ``os._exit(0)``).

For each interpreter given with ``--python`` (default: this one) and each thread count of
``--threads`` (default 4 and 64), it starts ``--runs`` fresh processes of each kind,
interleaved: ``off`` (``Profiler(enabled=False)``: no fork hook installed) and ``on``
(``Profiler(run_dir=...)`` with its defaults: the snapshot thread, the sampler). In each, the
program starts (``--settle`` seconds between the profiler's construction and its threads' start,
0.5 by default), then the threads run ``with phase("step"): with phase("inner"): pass`` in a
loop, and after 0.5 s the main thread forks ``--forks`` times, 20 ms apart. Printed, in
milliseconds: the first fork of a process (median and largest over the processes) and the
later, warm ones (median and largest of all of them), and ``on`` less ``off``; ``>50ms`` counts
the forks during which the forking thread lost the GIL (it then waits its turn behind every busy
thread, hundreds of milliseconds at 64): that happens to a fork that outlasts the thread's 5 ms
switch interval, with the profiler or without, and more often on a loaded machine.

The profiler's first snapshot thread imports what the snapshots import late as it starts (tens
of milliseconds alone), and a fork waits for that to finish. Threads busy from the moment the
profiler is constructed stretch it to seconds: ``--settle 0`` shows what the first fork then
costs, and the rows say how many processes forked before it was done.

Target: ``on`` at most 2 ms above ``off``, first fork and warm, median and largest, at 4 and 64
threads, on 3.11, 3.12 and 3.13. ``--threads 0`` shows a process with no other thread, where
the profiler's own threads are stopped across the fork and restarted after it (no target: the
GIL has no other taker, and Python 3.12+ would otherwise warn of a multi-threaded fork).

    python benchmarks/bench_fork.py
    python benchmarks/bench_fork.py --python .venv-3.11/bin/python --python .venv-3.13/bin/python --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# The measured process. The threads start held back and are let go together: each start waits
# for its thread to run, which under contention would take seconds for 64 of them.
PROBE = r"""
import json, os, sys, threading, time
from lineprofiler.accounting import Profiler

mode, threads, forks, run_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
settle = float(sys.argv[5])
profiler = Profiler(run_dir=run_dir) if mode == "on" else Profiler(enabled=False)
time.sleep(settle)  # the program's own start, between its profiler and its threads
go, stop = threading.Event(), threading.Event()


def busy():
    go.wait()
    while not stop.is_set():
        with profiler.phase("step"):
            with profiler.phase("inner"):
                pass


workers = [threading.Thread(target=busy, daemon=True) for _ in range(threads)]
for worker in workers:
    worker.start()
go.set()
time.sleep(0.5)
loaded = None
if mode == "on":
    from lineprofiler.accounting import _process

    loaded = _process.PROCESS.loaded  # whether the start-up imports were done by the first fork
times = []
for _ in range(forks):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    times.append((time.perf_counter() - t0) * 1e3)
    os.waitpid(pid, 0)
    time.sleep(0.02)
stop.set()
if mode == "on":
    profiler.close()
print(json.dumps({"times": times, "loaded": loaded}))
"""


def _run(python: str, mode: str, threads: int, forks: int, settle: float, run_dir: str, env: dict[str, str]) -> dict:
    result = subprocess.run(
        [python, "-W", "ignore::DeprecationWarning", "-c", PROBE, mode, str(threads), str(forks), run_dir, str(settle)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if result.returncode != 0:
        raise SystemExit(f"{python} ({mode}, {threads} threads) failed:\n{result.stderr}")
    report: dict = json.loads(result.stdout.splitlines()[-1])
    return report


def _figures(reports: list[dict]) -> tuple[float, float, float, float]:
    """(first fork: median, largest; warm forks: median, largest) over the processes."""
    first = [r["times"][0] for r in reports]
    warm = [t for r in reports for t in r["times"][1:]]
    return statistics.median(first), max(first), statistics.median(warm), max(warm)


def measure(python: str, threads_list: list[int], runs: int, forks: int, settle: float) -> None:
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    print(
        f"Python {version} ({python}): os.fork() in the parent, ms; {runs} processes x {forks} forks per row, "
        f"threads started {settle:g} s after the profiler"
    )
    print(
        f"  {'threads':>7}  {'profiler':<8}{'first med':>10}{'first max':>10}{'warm med':>10}{'warm max':>10}"
        f"{'>50ms':>7}"
    )
    with tempfile.TemporaryDirectory(prefix="lp-bench-fork-") as tmp:
        for threads in threads_list:
            reports: dict[str, list[dict]] = {"off": [], "on": []}
            for i in range(runs):  # interleaved, so a burst of load touches both kinds alike
                for mode in ("off", "on"):
                    run_dir = os.path.join(tmp, f"{threads}-{i}")
                    reports[mode].append(_run(python, mode, threads, forks, settle, run_dir, env))
            off, on = _figures(reports["off"]), _figures(reports["on"])
            for mode, figures in (("off", off), ("on", on)):
                slow = sum(1 for r in reports[mode] for t in r["times"] if t > 50)
                print(f"  {threads:>7}  {mode:<8}" + "".join(f"{v:>10.2f}" for v in figures) + f"{slow:>7}")
            delta = [b - a for a, b in zip(off, on, strict=True)]
            if threads == 0:
                verdict = "   no target: alone, our threads are stopped and restarted"
            else:
                verdict = "   target <= +2: " + ("ok" if max(delta) <= 2.0 else "ABOVE TARGET")
            print(f"  {'':>7}  {'on - off':<8}" + "".join(f"{v:>+10.2f}" for v in delta) + verdict)
            late = sum(1 for r in reports["on"] if r["loaded"] is False)
            if late:
                print(
                    f"  {'':>7}  ({late} of {runs} processes forked before the profiler's start-up imports were done)"
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", help="an interpreter with lineprofiler installed (repeatable)")
    parser.add_argument("--threads", type=int, action="append", help="threads busy in phases (repeatable; 4 and 64)")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per kind and thread count")
    parser.add_argument("--forks", type=int, default=20, help="forks per process")
    parser.add_argument("--settle", type=float, default=0.5, help="seconds from the profiler to its threads' start")
    options = parser.parse_args()
    for python in options.python or [sys.executable]:
        measure(python, options.threads or [4, 64], options.runs, options.forks, options.settle)
    load = os.getloadavg()
    print(
        f"({os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}: on a loaded machine a "
        "thread may wait for a core as well as for the GIL)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
