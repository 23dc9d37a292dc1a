"""What the resource sampler costs: its thread's CPU per second of run, per tick, per snapshot,
at 0, 1 and 10 Hz phase occupancy with 1, 16 and 64 threads in phases (each timeline tick also
reads every such thread's schedstat and the cgroup's cpu.stat, for the off-CPU split), with the
timeline file's growth per hour, and what reading one 12-hour sample file costs the report.

    python benchmarks/bench_sampler.py [--seconds 10] [--repeat 3]

Figures, not pass/fail. The thread's CPU time is read two ways that must agree: the sampler's
own account (pthread_getcpuclockid of the thread) and the kernel's /proc/self/task/<tid>/schedstat.
Medians of --repeat runs; a shared machine makes absolutes noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _synthetic import write_synthetic_history

from lineprofiler.accounting import _sampler, sampling

try:  # a build with the off-CPU split (it reads the cgroup's throttling too)
    from lineprofiler.accounting.sampling.cpu import cpu_stat_path
except ImportError:  # an older build, measured for comparison
    cpu_stat_path = None
from lineprofiler.accounting.sampling.psutil_sampler import PsutilSampler
from lineprofiler.report.compute.blocks.resources import reduce_io, reduce_memory
from lineprofiler.runfiles.samplefile import read_samples


def schedstat_ns(tid: int) -> int | None:
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def thread_cost(interval_s: float, seconds: float) -> tuple[float, float, int, float | None]:
    """(us of thread CPU per second of run, us per tick, ticks, schedstat us per tick)."""
    s = _sampler.Sampler(interval_s, 1 << 16)
    s.start()
    tid = s.stats()["thread_tid"]
    cpu0, sched0, ticks0 = s.stats()["thread_cpu_ns"], schedstat_ns(tid), s.stats()["ticks"]
    t0 = time.monotonic()
    time.sleep(seconds)
    stats = s.stats()
    sched1 = schedstat_ns(tid)
    elapsed = time.monotonic() - t0
    s.close()
    cpu = stats["thread_cpu_ns"] - cpu0
    ticks = stats["ticks"] - ticks0
    sched = None if sched0 is None or sched1 is None or not ticks else (sched1 - sched0) / ticks / 1e3
    return cpu / elapsed / 1e3, cpu / max(1, ticks) / 1e3, ticks, sched


def occupancy_cost(timeline_hz: float, seconds: float, threads: int) -> tuple[float, float]:
    """With ``threads`` threads (the main one included) inside phases of the primary recorder:
    (us of sampler-thread CPU per second of run at 1 Hz resource rows and ``timeline_hz``
    occupancy, timeline bytes per hour of run)."""
    import threading

    from lineprofiler.accounting import _phases

    rec = _phases.Recorder()
    rec.start()
    rec.make_primary()
    stop = threading.Event()

    def park() -> None:
        with rec.phase("worker"):
            stop.wait()

    extra = [threading.Thread(target=park) for _ in range(threads - 1)]
    for t in extra:
        t.start()
    if cpu_stat_path is None:
        s = _sampler.Sampler(1.0, 1 << 16, timeline_hz=timeline_hz, nvml=False)
    else:
        s = _sampler.Sampler(1.0, 1 << 16, timeline_hz=timeline_hz, nvml=False, cpu_stat_path=cpu_stat_path())
    with rec.phase("main"):
        s.start()
        cpu0 = s.stats()["thread_cpu_ns"]
        t0 = time.monotonic()
        time.sleep(seconds)
        cpu = s.stats()["thread_cpu_ns"] - cpu0
        elapsed = time.monotonic() - t0
        data = len(s.drain_timeline())
    s.close()
    stop.set()
    for t in extra:
        t.join()
    return cpu / elapsed / 1e3, data / elapsed * 3600


def wakeup_floor_us(hz: float, seconds: float) -> float | None:
    """Microseconds of CPU per wake-up of a C thread that only wakes ``hz`` times a second
    (benchmarks/wake_floor.c, built here with cc); None without a compiler."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = str(Path(tmp) / "wake_floor")
        source = str(Path(__file__).with_name("wake_floor.c"))
        if subprocess.run([cc, "-O2", "-o", exe, source], capture_output=True).returncode != 0:
            return None
        out = subprocess.run([exe, str(hz), str(seconds)], capture_output=True, text=True)
        return float(out.stdout) if out.returncode == 0 else None


def per_call_us(fn, n: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / n / 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the 1 Hz run (default 10)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not os.path.isdir("/proc/self"):
        print("no /proc here: the native sampler does not run; nothing to measure", file=sys.stderr)
        return 1
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print()

    runs = [thread_cost(1.0, args.seconds) for _ in range(args.repeat)]
    per_s = statistics.median(r[0] for r in runs)
    per_tick_1hz = statistics.median(r[1] for r in runs)
    fast = [thread_cost(0.01, 2.0) for _ in range(args.repeat)]
    per_tick = statistics.median(r[1] for r in fast)
    sched = [r[3] for r in fast if r[3] is not None]
    print("native sampler thread (C, no GIL)")
    print(f"  at 1 Hz for {args.seconds:g} s:     {per_s:8.1f} us of CPU per second of run "
          f"({per_tick_1hz:.1f} us per tick)")
    print(f"  at 100 Hz, per tick:     {per_tick:8.1f} us (thread clock)"
          + (f", {statistics.median(sched):.1f} us (schedstat)" if sched else ""))
    print(f"  so at the default 1 Hz:  {per_tick:8.1f} us per second of run = {per_tick / 1e4:.4f} % of one core")

    print("phase occupancy (timeline_hz), the same thread, 1 Hz resource rows, 1, 16 and 64 threads in phases")
    for threads in (1, 16, 64):
        base = None
        for hz in (0.0, 1.0, 10.0):
            cost = [occupancy_cost(hz, args.seconds, threads) for _ in range(args.repeat)]
            used = statistics.median(c[0] for c in cost)
            grow = statistics.median(c[1] for c in cost)
            base = used if base is None else base
            tick = f" = {(used - base) / hz:.1f} us per timeline tick" if hz else ""
            print(f"  {threads:2d} thread(s) at {hz:4g} Hz: {used:8.1f} us of CPU per second of run{tick}; "
                  f"timeline file +{grow / 1e6:.2f} MB per hour")

    floors = [f for f in (wakeup_floor_us(10.0, min(args.seconds, 5.0)) for _ in range(args.repeat)) if f]
    if floors:
        floor = statistics.median(floors)
        print(f"  the floor, a thread that only wakes at 10 Hz: {floor:.1f} us per wake-up = "
              f"{floor * 10:.1f} us of CPU per second of run (the kernel's timer and context switches)")

    s = _sampler.Sampler(3600.0, 1 << 16)
    s.start()
    sample_us = statistics.median(per_call_us(s.sample, 2000) for _ in range(args.repeat))
    s.close()
    print(f"  sample() on the caller:  {sample_us:8.1f} us per row (what a snapshot adds)")

    try:
        psampler = PsutilSampler(1.0, 1 << 16)
        psampler.start()
        ps_us = statistics.median(per_call_us(psampler.sample, 500) for _ in range(args.repeat))
        psampler.close()
        print(f"psutil fallback (Python): {ps_us:8.1f} us per tick, with the GIL held")
    except ImportError:
        print("psutil fallback: psutil not installed")

    with tempfile.TemporaryDirectory() as folder:
        doc = {"identity": {"run_id": "b", "pid": os.getpid(), "uuid": "00c0ffee", "host": "h", "role": "r"}}
        rs = sampling.ResourceSampler(folder, interval_s=3600.0)
        rs.start()
        rs.contribute(doc)

        def snapshot() -> None:
            for _ in range(5):
                rs._impl.sample()
            rs.contribute(doc)

        snap_us = statistics.median(per_call_us(snapshot, 200) for _ in range(args.repeat))
        rs.close()
        print(f"contribute():             {snap_us:8.1f} us per snapshot of 5 new rows (drain, append, own-I/O reads)")

        path = Path(folder) / "w.samples"
        write_synthetic_history(path, start_unix_ns=time.time_ns())
        size = path.stat().st_size
        timings = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            table = read_samples(path)
            reduce_io(table)
            reduce_memory(table)
            timings.append(time.perf_counter() - t0)
        print(f"report, one 12 h file:    {statistics.median(timings) * 1e3:8.1f} ms to read and reduce "
              f"{table.rows:,} rows ({size / 1e6:.1f} MB)")
    print()
    print("the machine may be shared: trust ratios over absolutes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
