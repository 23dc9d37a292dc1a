"""The GPU check: what can only be verified on a machine with an NVIDIA GPU. Under 4 minutes.

    python3 benchmarks/gpu_check.py --build     # compiles the C modules in place first
    python3 benchmarks/gpu_check.py [--seconds 20] [--keep DIR]

Needs torch with CUDA (and, for the cross-check, nvidia-ml-py). It prints figures and a
PASS/FAIL line per check, and exits non-zero when a check fails. Sections:

1. NVML from C: ``accounting/_nvml.h`` compiled (through the test shim) against the real
   ``libnvidia-ml.so.1``, sampled at 1 Hz while this process runs matmuls: busy and this pid's
   share, compared with nvidia-ml-py's answers read at the same moments.
2. sync=True: a CUDA matmul chain inside phases with and without ``sync=True``, against CUDA
   event time for the same work. Unsynchronised, a phase measures the enqueue; synchronised, its
   wall time must be within 5 % of the events' time.
3. Two worker processes on the same device, each a ``Profiler`` (role ``gpu_worker``), one busy
   all the time and one half the time, each holding some VRAM: the run's report, whose GPU block
   must sum both pids under ``this run``, cross-checked against nvidia-ml-py sampled from here.
4. A ``backend="torch"`` window over iterations 3 to 6: a Chrome trace with the phase names and
   CUDA kernels.
5. ``annotate=True`` on a CUDA build: ``torch.cuda.nvtx`` ranges, seen by the test NVTX tool
   (``tests/gpu/nvtx_inject.c``) the way nsys would see them.

Sections 2-4 use the public ``Profiler``; where it is not importable (a branch without the
accounting core) they fall back to driving the pieces of the GPU work directly and say so.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
RESULTS: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    RESULTS.append((name, ok, detail))
    print(f"  {'PASS' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}", flush=True)


def section(title: str) -> None:
    print(f"\n== {title}", flush=True)


# --------------------------------------------------------------------------------------------
# Building in place, for a machine where pip cannot build the project


def build_in_place() -> None:
    """Compile every extension of setup.py next to its package, with gcc and sysconfig."""
    import runpy

    extensions = runpy.run_path(str(ROOT / "setup.py"), run_name="setup_extensions")["EXTENSIONS"]
    include = sysconfig.get_paths()["include"]
    if not Path(include, "Python.h").exists() and os.environ.get("LP_PYTHON_INCLUDE"):
        include = os.environ["LP_PYTHON_INCLUDE"]  # an interpreter installed without its headers
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for ext in extensions:
        target = SRC / (ext.name.replace(".", "/") + suffix)
        cmd = ["gcc", "-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", f"-I{include}"]
        cmd += [f"-I{ROOT / d}" for d in ext.include_dirs]
        cmd += [f"-D{name}={value}" for name, value in ext.define_macros]
        cmd += [str(ROOT / s) for s in ext.sources] + ["-o", str(target)]
        cmd += [f"-l{lib}" for lib in ext.libraries]
        print("build:", " ".join(cmd[-4:]), flush=True)
        subprocess.run(cmd, check=True)


# --------------------------------------------------------------------------------------------
# Workloads


def matmul_chain(torch, n: int = 4096, length: int = 16):
    """A chain of matmuls that keeps the device busy for tens of milliseconds."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda") / n**0.5

    def run():
        x = a
        for _ in range(length):
            x = x @ b
        return x

    return run


def gpu_pynvml_snapshot(pynvml, handle, pids: set[int], last_seen: int):
    busy = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
    mine: dict[int, list[int]] = {}
    newest = last_seen
    try:
        for s in pynvml.nvmlDeviceGetProcessUtilization(handle, last_seen):
            newest = max(newest, s.timeStamp)
            if s.pid in pids and s.timeStamp > last_seen:
                mine.setdefault(s.pid, []).append(s.smUtil)
    except pynvml.NVMLError_NotFound:
        pass
    return busy, {pid: sum(v) / len(v) for pid, v in mine.items()}, newest


# --------------------------------------------------------------------------------------------
# 1. NVML from C


def check_nvml_header(torch, seconds: float) -> None:
    section("1. NVML from C (accounting/_nvml.h against libnvidia-ml.so.1)")
    os.environ.pop("LINEPROFILER_NVML_LIBRARY", None)
    out = Path(tempfile.mkdtemp(prefix="lp_nvml_"))
    shim = out / "libnvml_shim.so"
    subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-fPIC", "-shared", "-I", str(SRC / "lineprofiler"),
         "-o", str(shim), str(ROOT / "tests/gpu/nvml_shim.c"), "-ldl"],
        check=True,
    )
    lib = ctypes.CDLL(str(shim))
    lib.shim_open.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    int32_p = ctypes.POINTER(ctypes.c_int32)
    lib.shim_sample.argtypes = [ctypes.c_uint, int32_p, int32_p, ctypes.c_int]
    lib.shim_name.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    why = ctypes.create_string_buffer(256)
    rc = lib.shim_open(why, len(why))
    check("lp_nvml_open", rc == 0, why.value.decode() or "ok")
    if rc != 0:
        return
    n = lib.shim_count()
    for i in range(n):
        name = ctypes.create_string_buffer(128)
        lib.shim_name(i, name, len(name))
        print(f"  NVML device {i}: {name.value.decode()}")
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as error:  # the cross-check is optional
        pynvml = None
        print(f"  (nvidia-ml-py unavailable for the cross-check: {error})")

    # Before this process has a CUDA context: the pid is on no device's process list, so the
    # per-process query (milliseconds on a real driver) is skipped and the share is a measured 0.
    busy = (ctypes.c_int32 * n)()
    mine = (ctypes.c_int32 * n)()
    idle_ns = []
    for _ in range(20):
        t0 = time.perf_counter_ns()
        lib.shim_sample(os.getpid(), busy, mine, n)
        idle_ns.append(time.perf_counter_ns() - t0)
    idle_ns.sort()
    print(f"  lp_nvml_sample, no CUDA context in this process: median {idle_ns[10] / 1e3:.0f} us, mine {list(mine)}")
    check("no context: this pid's share is a measured zero", list(mine)[0] == -1, str(list(mine)))

    chain = matmul_chain(torch)
    stop = threading.Event()

    def load():
        while not stop.is_set():
            chain()
            torch.cuda.synchronize()

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    ours, theirs = [], []
    handle = pynvml.nvmlDeviceGetHandleByIndex(0) if pynvml else None
    last_seen = 0
    lib.shim_sample(os.getpid(), busy, mine, n)  # the first call sets lastSeenTimeStamp
    if pynvml:
        _, _, last_seen = gpu_pynvml_snapshot(pynvml, handle, {os.getpid()}, 0)
    sample_ns = []
    for _ in range(int(seconds)):
        time.sleep(1.0)
        t0 = time.perf_counter_ns()
        lib.shim_sample(os.getpid(), busy, mine, n)
        sample_ns.append(time.perf_counter_ns() - t0)
        ours.append((list(busy), list(mine)))
        if pynvml:
            b, m, last_seen = gpu_pynvml_snapshot(pynvml, handle, {os.getpid()}, last_seen)
            theirs.append((b, m.get(os.getpid(), -1)))
    stop.set()
    thread.join()
    lib.shim_close()
    for k, (b, m) in enumerate(ours):
        extra = f"   nvidia-ml-py: busy {theirs[k][0]:3d}  mine {theirs[k][1]:5.1f}" if theirs else ""
        print(f"  tick {k}: busy {b}  mine {m}{extra}")
    # What one tick's NVML reads cost the sampler thread, on a real driver, under load.
    sample_ns.sort()
    print(f"  lp_nvml_sample for {n} device(s): median {sample_ns[len(sample_ns) // 2] / 1e3:.0f} us, "
          f"max {sample_ns[-1] / 1e3:.0f} us per tick")
    dev0_busy = [b[0] for b, _ in ours]
    dev0_mine = [m[0] for _, m in ours]
    busy_ok = all(v >= 0 for v in dev0_busy) and max(dev0_busy) > 50
    check("busy measured on device 0 under load", busy_ok, str(dev0_busy))
    check(
        "this pid attributed on device 0 (NOT_FOUND ticks read -1, never an error)",
        any(v > 0 for v in dev0_mine) and all(v >= -1 for v in dev0_mine),
        str(dev0_mine),
    )


# --------------------------------------------------------------------------------------------
# 2. sync=True against CUDA events


def check_sync(torch, Profiler, keep: Path) -> None:
    section("2. phase(sync=True) against CUDA event time")
    chain = matmul_chain(torch)
    for _ in range(3):
        chain()
    torch.cuda.synchronize()
    iterations = 20
    event_ms = []
    if Profiler is not None:
        run_dir = keep / "sync"
        profiler = Profiler(run_dir=str(run_dir), role="sync_check")
        with profiler:
            for _ in range(iterations):
                with profiler.phase("matmul_nosync"):
                    chain()
                with profiler.phase("drain"):
                    torch.cuda.synchronize()
                with profiler.phase("matmul_sync", sync=True):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    chain()
                    end.record()
                end.synchronize()
                event_ms.append(start.elapsed_time(end))
        from lineprofiler.runfiles import workerfile

        phases = {}
        for path in workerfile.find_worker_files(run_dir):
            for p in workerfile.read_worker_file(path)["phases"]:
                phases[p["path"].rsplit("/", 1)[-1]] = p
        nosync_ms = phases["matmul_nosync"]["wall_ns"] / phases["matmul_nosync"]["entries"] / 1e6
        sync_ms = phases["matmul_sync"]["wall_ns"] / phases["matmul_sync"]["entries"] / 1e6
        how = "Profiler"
    else:
        from lineprofiler.accounting import gpu

        sync = gpu.make_sync()
        check("make_sync() returns a function on a CUDA build", sync is not None)
        nosync, synced = [], []
        for _ in range(iterations):
            t0 = time.perf_counter_ns()
            chain()
            nosync.append(time.perf_counter_ns() - t0)
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            sync()
            t0 = time.perf_counter_ns()
            start.record()
            chain()
            end.record()
            sync()
            synced.append(time.perf_counter_ns() - t0)
            end.synchronize()
            event_ms.append(start.elapsed_time(end))
        nosync_ms, sync_ms = sum(nosync) / len(nosync) / 1e6, sum(synced) / len(synced) / 1e6
        how = "fallback: gpu.make_sync() around the same work, no Profiler on this branch"
    events = sum(event_ms) / len(event_ms)
    print(f"  ({how})")
    print(f"  unsynchronised phase {nosync_ms:9.3f} ms   (enqueue only)")
    print(f"  sync=True phase      {sync_ms:9.3f} ms")
    print(f"  CUDA events          {events:9.3f} ms   ratio sync/events {sync_ms / events:.4f}")
    check("sync=True wall within 5 % of CUDA-event time", abs(sync_ms / events - 1) <= 0.05)
    check("unsynchronised phase shows the enqueue gap", nosync_ms < 0.5 * events)


# --------------------------------------------------------------------------------------------
# 3. two workers on one device


def worker_main(run_dir: str, seconds: float, duty: float, vram_gb: float, ready) -> None:
    import torch

    from lineprofiler.accounting import Profiler

    profiler = Profiler(run_dir=run_dir, role="gpu_worker")
    hold = torch.empty(int(vram_gb * 1e9) // 4, dtype=torch.float32, device="cuda")  # VRAM to see
    chain = matmul_chain(torch, length=8)
    ready.wait()
    deadline = time.monotonic() + seconds
    with profiler:
        while time.monotonic() < deadline:
            with profiler.phase("iteration"):
                t0 = time.monotonic()
                with profiler.phase("compute", sync=True):
                    chain()
                busy = time.monotonic() - t0
                with profiler.phase("idle"):
                    time.sleep(busy * (1 - duty) / duty)
    del hold


def check_two_workers(torch, Profiler, seconds: float, keep: Path) -> None:
    section("3. two worker processes on one device: this run sums both")
    if Profiler is None:
        check("two workers", False, "needs the Profiler (accounting core) on this branch")
        return
    run_dir = keep / "two_workers"
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    procs = [
        ctx.Process(target=worker_main, args=(str(run_dir), seconds, 1.0, 2.0, ready)),
        ctx.Process(target=worker_main, args=(str(run_dir), seconds, 0.5, 1.0, ready)),
    ]
    for p in procs:
        p.start()
    time.sleep(15)  # CUDA initialisation in the children
    pids = {p.pid for p in procs}
    samples = []
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        _, _, last_seen = gpu_pynvml_snapshot(pynvml, handle, pids, 0)
    except Exception as error:
        pynvml = None
        print(f"  (nvidia-ml-py unavailable for the cross-check: {error})")
    ready.set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and pynvml:
        time.sleep(1.0)
        samples.append(gpu_pynvml_snapshot(pynvml, handle, pids, last_seen))
        last_seen = samples[-1][2]
    for p in procs:
        p.join(timeout=120)
    check("both workers exited cleanly", all(p.exitcode == 0 for p in procs), str([p.exitcode for p in procs]))
    if samples:
        busy = sum(s[0] for s in samples) / len(samples)
        per_pid = {pid: sum(s[1].get(pid, 0.0) for s in samples) / len(samples) for pid in pids}
        print(f"  nvidia-ml-py from here: busy {busy:.1f}%  per pid {per_pid}  sum {sum(per_pid.values()):.1f}%")
    report = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "report", str(run_dir)], capture_output=True, text=True, env=_env()
    )
    print(report.stdout)
    if report.returncode != 0:
        print(report.stderr)
    lines = report.stdout.splitlines()
    check("report ran", report.returncode == 0)
    gpu_rows = [line for line in lines if line.startswith("GPU ")]
    check("GPU block present with a device row", bool(gpu_rows), gpu_rows[0] if gpu_rows else "no 'GPU n' row")
    if gpu_rows:
        cells = gpu_rows[0].split()
        check("this run measured (not n/a) on GPU 0", cells[3] != "n/a", gpu_rows[0])
    check("VRAM peaks in the block", any(line.startswith("VRAM allocated (peak)") for line in lines))


# --------------------------------------------------------------------------------------------
# 4. torch window


def check_torch_window(torch, Profiler, keep: Path) -> None:
    section("4. backend='torch' window, iterations 3 to 6")
    run_dir = keep / "window"
    chain = matmul_chain(torch, n=2048, length=4)
    if Profiler is not None:
        profiler = Profiler(
            run_dir=str(run_dir), role="window", backend="torch", backend_window=(3, 6), window_phase="iteration"
        )
        with profiler:
            for _ in range(8):
                with profiler.phase("iteration"):
                    with profiler.phase("forward", sync=True):
                        chain()
    else:
        from lineprofiler.accounting import windows

        window = windows.Window("torch", run_dir, (3, 6), "iteration")
        enter, exit = windows.annotate_hooks(None, window)
        for n in range(1, 9):
            window.on_entry(n)
            enter("iteration")
            enter("forward")
            chain()
            torch.cuda.synchronize()
            exit("forward")
            exit("iteration")
        print(f"  (fallback: Window driven directly, no Profiler on this branch; state {window.state}, {window.error})")
    traces = sorted((run_dir / "backend").glob("torch_trace_*.json")) if (run_dir / "backend").is_dir() else []
    check("one torch trace for this process", len(traces) == 1, ", ".join(p.name for p in traces))
    if traces:
        events = json.loads(traces[0].read_text())["traceEvents"]
        names = [e.get("name") for e in events if e.get("ph") == "X"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        iterations = names.count("iteration")
        print(f"  {traces[0].name}: {len(events)} events, {iterations} 'iteration', {len(kernels)} kernels")
        check("phase names in the trace", names.count("iteration") == 3 and "forward" in names)
        check("CUDA kernels in the trace", len(kernels) > 0)


# --------------------------------------------------------------------------------------------
# 5. annotate on a CUDA build


def check_annotate_nvtx() -> None:
    section("5. annotate=True: torch.cuda.nvtx ranges seen by an NVTX tool")
    out = Path(tempfile.mkdtemp(prefix="lp_nvtx_"))
    tool = out / "libnvtx_inject.so"
    subprocess.run(
        ["gcc", "-std=c11", "-O1", "-fPIC", "-shared", "-o", str(tool), str(ROOT / "tests/gpu/nvtx_inject.c")],
        check=True,
    )
    log = out / "nvtx.log"
    code = (
        "import json, torch\n"
        "torch.zeros(1, device='cuda')\n"
        "from lineprofiler.accounting import gpu\n"
        "a = gpu.Annotator()\n"
        "a.enter('iteration'); a.enter('forward'); a.exit('forward'); a.exit('iteration')\n"
        "print(json.dumps(a.describe()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        env={**_env(), "NVTX_INJECTION64_PATH": str(tool), "LP_NVTX_LOG": str(log)},
    )
    print(f"  {result.stdout.strip()} {result.stderr.strip()[-300:]}")
    described = json.loads(result.stdout) if result.returncode == 0 else {}
    check("NVTX source is torch.cuda.nvtx", described.get("nvtx") == "torch.cuda.nvtx", str(described))
    lines = log.read_text().splitlines() if log.exists() else []
    print(f"  tool saw: {lines}")
    check("the tool saw the phase ranges", lines == ["PUSH iteration", "PUSH forward", "POP", "POP"])


# --------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="compile the C modules in place first")
    parser.add_argument("--seconds", type=float, default=20, help="load duration of sections 1 and 3")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run directories here")
    parser.add_argument("--skip", default="", help="comma-separated section numbers to skip")
    args = parser.parse_args()
    if args.build:
        build_in_place()
    sys.path.insert(0, str(SRC))
    os.environ["PYTHONPATH"] = _env()["PYTHONPATH"]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    started = time.monotonic()

    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: this check needs a GPU; nothing was checked")
        return 2
    device = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, device {device}, python {sys.version.split()[0]}")
    try:
        from lineprofiler.accounting import Profiler
    except ImportError as error:
        Profiler = None
        print(f"Profiler not importable ({error}): sections 2-4 use their fallbacks")
    keep = args.keep or Path(tempfile.mkdtemp(prefix="lp_gpu_check_"))
    keep.mkdir(parents=True, exist_ok=True)
    print(f"run directories under {keep}")

    sections = [
        ("1", lambda: check_nvml_header(torch, min(args.seconds, 8))),
        ("2", lambda: check_sync(torch, Profiler, keep)),
        ("3", lambda: check_two_workers(torch, Profiler, args.seconds, keep)),
        ("4", lambda: check_torch_window(torch, Profiler, keep)),
        ("5", check_annotate_nvtx),
    ]
    for number, run in sections:
        if number in skip:
            continue
        try:
            run()
        except Exception as error:
            traceback.print_exc()
            check(f"section {number} ran", False, f"{error.__class__.__name__}: {error}")
    failed = [name for name, ok, _ in RESULTS if not ok]
    print(f"\n{len(RESULTS) - len(failed)} passed, {len(failed)} failed in {time.monotonic() - started:.0f} s")
    if args.keep is None:
        shutil.rmtree(keep, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
