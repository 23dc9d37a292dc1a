"""What the live copy of ``line_sampling``'s section costs: the copy that lets a process killed
between snapshots (SIGKILL, the OOM killer) keep its sampled lines.

After each window that recorded a line, the sampler's thread collects the section, encodes it
and writes it beside the worker file (a temporary file and a rename), waiting after each copy
its CPU time over ``LIVE_COPY_BUDGET`` before the next. Each case runs a fresh process for
``--seconds``: an actor loop with phases, at the fraction given, over a project of the size
given (``small``: one hot function, a handful of lines; ``large``: 20 generated files of 10
functions of 10 lines, in 8 phases, so each phase holds the section's 200 lines at most). It
prints, from the sampler's own counts: the windows, the copies, the CPU time of a copy (all of
it: collecting and encoding hold the GIL, the file's system calls do not), the copies' CPU time
as a share of the wall time (the first copy, which no wait paid for, included), the size of
the copy, and the wait after a copy (its CPU time over the budget): with a window's cycle, how
far behind the last window the copy can be when the process is killed.

    .venv/bin/python benchmarks/bench_sampled_live_copy.py [--seconds 20] [--fractions 0.02 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from lineprofiler.accounting.line_sampling import LIVE_COPY_BUDGET

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    from lineprofiler.accounting import Profiler
    from lineprofiler.runfiles import layout
    import work

    folder, run_dir, fraction, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    prof = Profiler(run_dir, role="actor", line_sampling=fraction, snapshot_interval_s=None, lines_project=folder)
    phases = work.PHASES
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        for name, fn in phases:
            with prof.phase(name):
                fn()
    wall = time.monotonic() - start
    (sampling,) = [a for a in prof._attachments._items if type(a).__name__ == "LineSampling"]
    copy = layout.sampled_lines_path(prof.path)
    size = copy.stat().st_size if copy.exists() else 0
    print(json.dumps({"wall": wall, "windows": sampling.windows, "copies": sampling.copies,
                      "copy_cpu_ns": sampling.copy_cpu_ns, "error": sampling.copy_error, "bytes": size}))
    prof.close()
    """
)

SMALL = textwrap.dedent(
    """
    def hot():
        s = 0
        for i in range(20000):
            s += i * i % 7
        return s

    PHASES = [("mcts", hot)]
    """
)


def _large(folder: Path) -> str:
    """20 files of 10 functions of 10 lines; the work module calls them in 8 phases."""
    names = []
    for f in range(20):
        body = []
        for g in range(10):
            body.append(f"def fn{g}(n=40):\n    s = 0\n    for i in range(n):\n")
            body.extend(f"        s += i * {k} % 7\n" for k in range(1, 7))
            body.append("    return s\n\n")
            names.append(f"part{f}.fn{g}")
        (folder / f"part{f}.py").write_text("".join(body))
    imports = "".join(f"import part{f}\n" for f in range(20))
    calls = ",\n".join(
        f"    ('phase{p}', lambda: [{', '.join(f'{n}()' for n in names[p::8])}])" for p in range(8)
    )
    return f"{imports}\nPHASES = [\n{calls},\n]\n"


def run_case(size: str, fraction: float, seconds: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "proj"
        folder.mkdir()
        (folder / "work.py").write_text(SMALL if size == "small" else _large(folder))
        (folder / "child.py").write_text(CHILD)
        argv = [sys.executable, str(folder / "child.py"), str(folder), str(Path(tmp) / "run"), str(fraction),
                str(seconds)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120)
        if done.returncode != 0:
            raise SystemExit(f"{size} at {fraction}: {done.stderr.strip()[-400:]}")
        return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.02, 0.05])
    parser.add_argument("--sizes", nargs="+", default=["small", "large"], choices=["small", "large"])
    args = parser.parse_args()
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{args.seconds:g} s per case")  # fmt: skip
    print(f"{'project':<8} {'fraction':>8} {'windows':>8} {'copies':>7} {'CPU/copy':>9} {'share':>8} "
          f"{'bytes':>9} {'wait':>8}")  # fmt: skip
    for size in args.sizes:
        for fraction in args.fractions:
            said = run_case(size, fraction, args.seconds)
            copies = int(said["copies"])  # type: ignore[call-overload]
            cpu_ns = int(said["copy_cpu_ns"])  # type: ignore[call-overload]
            wall = float(said["wall"])  # type: ignore[arg-type]
            per = f"{cpu_ns / copies / 1e3:.0f} us" if copies else "-"
            wait = f"{cpu_ns / copies / 1e9 / LIVE_COPY_BUDGET:.1f} s" if copies else "-"
            print(
                f"{size:<8} {fraction:>8g} {said['windows']:>8} {copies:>7} {per:>9} "
                f"{cpu_ns / 1e9 / wall * 100:>7.3f}% {said['bytes']:>9} {wait:>8}"
                + (f"  error: {said['error']}" if said["error"] else "")
            )


if __name__ == "__main__":
    main()
