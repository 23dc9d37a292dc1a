"""What ``import lineprofiler.accounting`` and ``Profiler()`` cost a fresh process.

Every process of a run pays both (sixteen actors pay them sixteen times), so both are measured
the way a process pays them: in a new interpreter, first thing. For each interpreter given with
``--python`` (default: this one) the benchmark starts ``--runs`` fresh processes of each kind and
prints medians:

* ``python -c pass``: the interpreter's own start, the floor everything else sits on;
* ``python -c "import lineprofiler.accounting"``: the whole process, less that floor;
* inside a fresh process, ``time.perf_counter()`` and ``time.process_time()`` around the import
  and then around ``Profiler(run_dir=...)`` (defaults otherwise: a snapshot thread and the
  sampler start, and the start file is written).

Wall time suffers on a shared machine (a process that waits for a core is charged for it);
CPU time (user + system) much less, so both are printed. ``--importtime`` adds the modules
``python -X importtime`` shows as the costliest in one run, and ``--modules`` the modules the
import and the construction load beyond the interpreter's own.

Targets: the import at most 30 ms on 3.11, the construction at most 10 ms.

    python benchmarks/bench_startup.py
    python benchmarks/bench_startup.py --python .venv-3.11/bin/python --python .venv/bin/python --runs 21
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Measured in the child, first thing; only builtin modules (time, sys) are touched before the import.
PROBE = r"""
import sys, time
w0, c0 = time.perf_counter(), time.process_time()
import lineprofiler.accounting
w1, c1 = time.perf_counter(), time.process_time()
before = set(sys.modules)
profiler = lineprofiler.accounting.Profiler(run_dir=sys.argv[1])
w2, c2 = time.perf_counter(), time.process_time()
loaded = sorted(set(sys.modules) - before)
profiler.close()
print(w1 - w0, c1 - c0, w2 - w1, c2 - c1)
print(" ".join(loaded))
"""

MODULES = r"""
import sys
base = set(sys.modules)
import lineprofiler.accounting
print(" ".join(sorted(set(sys.modules) - base)))
"""


def _wait(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, out


def _ms(values: list[float]) -> str:
    return f"{1e3 * statistics.median(values):7.1f}"


def measure(python: str, runs: int, show_importtime: bool, show_modules: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="lp-bench-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
        # A user's process reads compiled bytecode: allow it (PYTHONDONTWRITEBYTECODE may be set),
        # kept in a folder of our own rather than beside the sources, and made by a first run.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        _wait([python, "-c", PROBE, str(Path(tmp) / "warm-up")], env)
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                                 text=True, check=True).stdout.strip()
        floor_wall, floor_cpu, imp_wall, imp_cpu = [], [], [], []
        in_import_wall, in_import_cpu, construct_wall, construct_cpu = [], [], [], []
        loaded = ""
        for i in range(runs):
            # Interleaved, so a burst of load on the machine touches every kind alike.
            wall, cpu, _ = _wait([python, "-c", "pass"], env)
            floor_wall.append(wall)
            floor_cpu.append(cpu)
            wall, cpu, _ = _wait([python, "-c", "import lineprofiler.accounting"], env)
            imp_wall.append(wall)
            imp_cpu.append(cpu)
            _, _, out = _wait([python, "-c", PROBE, str(Path(tmp) / f"run{i}")], env)
            figures, _, loaded = out.partition("\n")
            a, b, c, d = (float(x) for x in figures.split())
            in_import_wall.append(a)
            in_import_cpu.append(b)
            construct_wall.append(c)
            construct_cpu.append(d)
        print(f"Python {version} ({python}), median of {runs} fresh processes; milliseconds")
        print(f"  {'':<46}{'wall':>8}{'CPU':>8}")
        print(f"  {'python -c pass (the floor)':<46}{_ms(floor_wall):>8}{_ms(floor_cpu):>8}")
        delta_wall = [a - b for a, b in zip(imp_wall, floor_wall, strict=True)]
        delta_cpu = [a - b for a, b in zip(imp_cpu, floor_cpu, strict=True)]
        label = "python -c 'import lineprofiler.accounting'"
        print(f"  {label + ' - floor':<46}{_ms(delta_wall):>8}{_ms(delta_cpu):>8}")
        print(f"  {'import lineprofiler.accounting (in process)':<46}{_ms(in_import_wall):>8}"
              f"{_ms(in_import_cpu):>8}   target <= 30 on 3.11")
        print(f"  {'Profiler(run_dir=...) (in process)':<46}{_ms(construct_wall):>8}{_ms(construct_cpu):>8}"
              "   target <= 10")
        if show_modules:
            _show_modules(python, env, loaded.strip())
        if show_importtime:
            _show_importtime(python, env)


def _show_modules(python: str, env: dict[str, str], loaded: str) -> None:
    modules = subprocess.run([python, "-c", MODULES], capture_output=True, text=True, env=env, check=True)
    names = modules.stdout.split()
    print(f"  the import loads {len(names)} modules: {' '.join(names)}")
    print(f"  the construction then loads {len(loaded.split())}: {loaded}")


def _show_importtime(python: str, env: dict[str, str]) -> None:
    result = subprocess.run([python, "-X", "importtime", "-c", "import lineprofiler.accounting"],
                            capture_output=True, text=True, env=env, check=True)
    rows = []
    for line in result.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2].rstrip()))
    print("  costliest modules of one -X importtime run (self us, cumulative us):")
    for self_us, cumulative, name in sorted(rows, reverse=True)[:12]:
        print(f"    {self_us:>8} {cumulative:>9} {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", help="an interpreter with lineprofiler installed (repeatable)")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--importtime", action="store_true", help="show the costliest modules of one import")
    parser.add_argument("--modules", action="store_true", help="list the modules the import and construction load")
    options = parser.parse_args()
    for python in options.python or [sys.executable]:
        measure(python, options.runs, options.importtime, options.modules)
    load = os.getloadavg()
    print(f"({os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}: wall times on a shared "
          "machine include waiting for a core; CPU times much less)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
