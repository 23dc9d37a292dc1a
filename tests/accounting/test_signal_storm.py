"""Signal storms: hundreds of SIGUSR1 cost at most one flush a second, never nest, never raise.

Each scenario is a real child process sent real signals: a SIGUSR1 the process survives (its
own handler was there first, and the profiler chains to it) flushes at most once per
``SIGNAL_FLUSH_INTERVAL_S``; a signal that arrives during a flush starts no flush inside it; a
signal that ends the process always gets its final flush, also when it arrives during another.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from lineprofiler.accounting.profiler import SIGNAL_FLUSH_INTERVAL_S
from lineprofiler.runfiles import workerfile

TIMEOUT = 120

STORM_CHILD = """
import signal
import sys

from lineprofiler.accounting import Profiler

received = 0


def count(signum, frame):
    global received
    received += 1


def unraisable(info):
    sys.stderr.write(f"UNRAISABLE {info.exc_type.__name__}: {info.exc_value}\\n")


signal.signal(signal.SIGUSR1, count)  # before the profiler: it flushes, then chains to this
sys.unraisablehook = unraisable
profiler = Profiler(run_dir=sys.argv[1], snapshot_interval_s=None)
print("ready", flush=True)
steps = 0
while True:
    with profiler.phase("step"):
        steps += 1
    if steps % 2000 == 0:
        print(f"steps {steps} received {received}", flush=True)
"""

NESTED_CHILD = """
import os
import signal
import sys

from lineprofiler.accounting import Profiler


class SignalsDuringWrite:
    # An attachment: contribute() runs inside each snapshot write. Armed, it sends the
    # process SIGTERM there, so the handler runs in the middle of the write.
    def __init__(self):
        self.depth = 0
        self.deepest = 0
        self.armed = False

    def contribute(self, document):
        self.depth += 1
        try:
            self.deepest = max(self.deepest, self.depth)
            print(f"contribute depth {self.depth} deepest {self.deepest}", flush=True)
            if self.armed:
                self.armed = False
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10000):  # bytecodes: Python runs the handler among them
                    pass
        finally:
            self.depth -= 1


profiler = Profiler(run_dir=sys.argv[1], snapshot_interval_s=None, sample_interval_s=None)
trigger = SignalsDuringWrite()
profiler.add_attachment(trigger)
with profiler.phase("work"):
    pass
trigger.armed = True
profiler.flush()
print("survived the SIGTERM", flush=True)
"""


def _start(tmp_path, body: str, run_dir) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    return subprocess.Popen(
        [sys.executable, str(script), str(run_dir)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _only_document(run_dir) -> dict:
    paths = workerfile.find_worker_files(run_dir)
    assert len(paths) == 1, paths
    return workerfile.read_worker_file(paths[0])


def test_a_sigusr1_storm_flushes_once_a_second_and_the_loop_keeps_running(tmp_path):
    run_dir = tmp_path / "profile"
    child = _start(tmp_path, STORM_CHILD, run_dir)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append((time.monotonic(), line.strip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not lines and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        assert lines and lines[0][1] == "ready", (lines, child.poll())
        storm_start = time.monotonic()
        for i in range(600):  # about 1.5 s of signals, one every few milliseconds
            os.kill(child.pid, signal.SIGUSR1)
            if i % 4 == 3:
                time.sleep(0.01)
        storm_end = time.monotonic()
        time.sleep(0.2)
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGTERM)  # ends the process: its final flush is not rate-limited
        _, err = child.communicate(timeout=TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    reader.join(timeout=10)

    assert child.returncode == -signal.SIGTERM, err
    assert "UNRAISABLE" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    # The loop kept making progress through the storm, and the handler we chain to got signals.
    during = [
        int(text.split()[1]) for stamp, text in lines if text.startswith("steps") and storm_start <= stamp <= storm_end
    ]
    assert len(during) >= 2, (len(lines), lines[-3:])
    last = [text.split() for _, text in lines if text.startswith("steps")][-1]
    assert int(last[3]) > 0, last

    document = _only_document(run_dir)
    assert document["times"]["status"] == "signalled" and document["times"]["signal"] == "SIGTERM"
    assert not [e for e in document["errors"] if "RecursionError" in e], document["errors"]
    steps = {p["path"]: p["entries"] for p in document["phases"]}.get("step", 0)
    assert steps >= int(last[1])  # the final flush has everything the loop did
    # The start file, at most one flush per interval of the child's life, the final one.
    elapsed_s = document["times"]["elapsed_ns"] / 1e9
    most = 2 + math.ceil(elapsed_s / SIGNAL_FLUSH_INTERVAL_S)
    assert document["snapshot"]["writes"] <= most, (document["snapshot"], elapsed_s)


def test_a_signal_during_a_flush_starts_no_flush_inside_it_and_an_ending_one_waits_for_it(tmp_path):
    run_dir = tmp_path / "profile"
    child = _start(tmp_path, NESTED_CHILD, run_dir)
    out, err = child.communicate(timeout=TIMEOUT)

    assert child.returncode == -signal.SIGTERM, (out, err)  # ended by the signal, as unprofiled
    assert "survived" not in out
    depths = [line.split() for line in out.splitlines() if line.startswith("contribute")]
    assert depths and all(d[2] == "1" and d[4] == "1" for d in depths), out  # never nested
    assert "Traceback" not in err, err
    document = _only_document(run_dir)
    # The flush under way was completed, then the SIGTERM's final flush written after it.
    assert document["times"]["status"] == "signalled" and document["times"]["signal"] == "SIGTERM"
    assert document["snapshot"]["writes"] == 3  # the start file, the flush, the final flush
    assert {p["path"]: p["entries"] for p in document["phases"]} == {"work": 1}
