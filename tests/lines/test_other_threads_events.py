"""Another thread's events between two lines of a frame change none of its figures.

On 3.12+ the tracer caches the thread of the last event. Any event of another thread (one of
the user's, a library's background writer such as the accounting Profiler's snapshot thread, an
exception leaving a frame there, which sys.monitoring cannot disable) moved that cache, and the
next line of the frame that was running before was taken for a new frame: a second call, a line
open twice, a line that calls nothing with a time above its self time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from lp_helpers import func_stats, marks, write_module

from lineprofiler import LineProfiler

PROJECT = """\
def leaf(i):
    return i + 1  # @leaf


def main(n, other):
    s = 0  # @init
    for i in range(n):  # @for
        other()  # @other
        s += i  # @plain
        s += leaf(i)  # @call
    return s  # @ret
"""

# Outside the project: a thread whose function unwinds an exception out of a frame (PY_UNWIND
# cannot be disabled, so it fires every time), run to its end while the project frame waits.
OUTSIDE = """\
import threading


def fail():
    raise ValueError("outside")


def body():
    try:
        fail()
    except ValueError:
        pass


def other():
    t = threading.Thread(target=body)
    t.start()
    t.join()
"""


def check_figures(stats, proj, n):
    main = func_stats(stats, proj.main)
    leaf = func_stats(stats, proj.leaf)
    assert main.calls == 1
    assert leaf.calls == n
    m = marks(proj.main)
    got = {name: main.lines[line].hits for name, line in m.items()}
    assert got == {"init": 1, "for": n + 1, "other": n, "plain": n, "call": n, "ret": 1}
    for fs in (main, leaf):
        for line in fs.lines.values():
            assert line.self_ns is not None
            assert 0 <= line.self_ns <= line.time_ns, (fs.qualname, line)
            assert line.time_ns <= main.time_ns, (fs.qualname, line)
    assert leaf.time_ns <= main.lines[m["call"]].time_ns


def test_another_threads_events_do_not_open_a_frame_again(tmp_path):
    proj = write_module(tmp_path / "proj", "lp_switch_proj", PROJECT)
    outside = write_module(tmp_path / "outside", "lp_switch_outside", OUTSIDE)
    p = LineProfiler(project_folder=tmp_path / "proj")
    n = 20
    with p:
        assert proj.main(n, outside.other) == sum(range(n)) + sum(range(1, n + 1))
    check_figures(p.get_stats(), proj, n)


SCRIPT = """\
import json, sys, time
sys.path.insert(0, {proj!r})
import lp_acc_proj as proj
from lineprofiler import LineProfiler
from lineprofiler.accounting import Profiler


def other():
    time.sleep(0.02)  # the snapshot thread writes meanwhile


lp = LineProfiler(project_folder={proj!r})
acc = Profiler(run_dir={run!r}, enabled=True, snapshot_interval_s=0.005, sample_interval_s=0.005,
               trace=True)
with lp:
    with acc.phase("work"):
        acc.count("items", 1)
        proj.main(15, other)
acc.close()
out = {{}}
for key, fs in lp.get_stats().items():
    out[key.qualname] = {{"calls": fs.calls, "total": fs.time_ns,
                    "lines": {{str(n): [x.hits, x.time_ns, x.self_ns] for n, x in fs.lines.items()}}}}
print(json.dumps(out))
"""


def test_an_accounting_profiler_beside_it_changes_no_line_figure(tmp_path):
    folder = tmp_path / "proj"
    write_module(folder, "lp_acc_proj", PROJECT)
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT.format(proj=str(folder), run=str(tmp_path / "run"))))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    main, leaf = got["main"], got["leaf"]
    assert main["calls"] == 1 and leaf["calls"] == 15
    m = {name: str(line) for name, line in _marks_of(folder / "lp_acc_proj.py").items()}
    assert main["lines"][m["for"]][0] == 16 and main["lines"][m["plain"]][0] == 15
    for fs in (main, leaf):
        for _hits, time_ns, self_ns in fs["lines"].values():
            assert 0 <= self_ns <= time_ns <= main["total"]
    assert leaf["total"] <= main["lines"][m["call"]][1]


def _marks_of(path: Path) -> dict[str, int]:
    out = {}
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if "# @" in text:
            out[text.split("# @", 1)[1].split()[0]] = number
    return out
