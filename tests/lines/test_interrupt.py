"""A signal's exception that arrives while the tracer's callback runs is the user's.

CPython runs a Python-level signal handler at its next check between bytecodes, wherever that
is; when the tracer is deciding whether new code is the project's, it is inside the tracer's
filter. The handler's exception (KeyboardInterrupt for Ctrl-C) must then reach the user's code as
it would without the tracer, and the tracer must go on recording: it is not an error of the
tracer's.

Each case runs a real process that interrupts itself with real signals, sent by a thread at
random moments while the program makes new code objects (code from new files, which the tracer
asks its filter about), and catches each interrupt. Between interrupts it calls a probe function
a known number of times: its hits show that the tracer recorded through every interrupt.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROUNDS = 300
PROBES = 10  # probe() calls after each caught interrupt, as in the program

# The program. The thread waits on a pipe for each round, so that exactly one signal is in
# flight at a time and it always lands inside the round's `try` (an Event would take a lock in
# the main thread that the interrupt could leave held).
PESTER = """\
import os, random, signal, sys, threading, time

HOW = sys.argv[1]
ROUNDS = int(sys.argv[2])
PROBES = 10
rng = random.Random(int(sys.argv[3]))
go_read, go_write = os.pipe()


class Stop(BaseException):
    pass


def raise_stop(signum, frame):
    raise Stop(signum)


SIGNUM = signal.SIGINT
if HOW == "handler":  # a handler of the user's own, raising an exception of its own
    SIGNUM = signal.SIGUSR1
    signal.signal(SIGNUM, raise_stop)
CAUGHT = Stop if HOW == "handler" else KeyboardInterrupt


def pester():
    while os.read(go_read, 1):
        time.sleep(rng.uniform(0, 0.002))
        os.kill(os.getpid(), SIGNUM)


def probe():
    return 1  # @probe


def fresh_code(r, deadline):
    n = 0
    while time.monotonic() < deadline:
        n += 1
        # Code from a file never seen before: the tracer asks its filter about it.
        exec(compile("def f():\\n    return n\\nf()\\n", f"/nonexistent/r{r}_{n}.py", "exec"), {"n": n})


def fresh_code_until_interrupted(r):
    # The loop is a call inside the `try`: CPython leaves a loop's jump back out of the range
    # its `try` covers, and the check for signals there would escape the `except`.
    deadline = time.monotonic() + 2
    try:
        os.write(go_write, b"x")
        fresh_code(r, deadline)
    except CAUGHT as error:
        return error
    return None


def ours(error):
    tb, frames = error.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    return [name for name in frames if name.split(".")[0] == "lineprofiler"]


def run_rounds(after_round):
    threading.Thread(target=pester, daemon=True).start()
    for r in range(ROUNDS):
        error = fresh_code_until_interrupted(r)
        if error is None:
            print("LOST", r)  # the interrupt never reached the program
        elif ours(error):
            print("OUR FRAMES", r, ours(error))
        elif HOW == "handler" and error.args != (SIGNUM,):
            print("NOT THE HANDLER'S", r, error.args)
        for _ in range(PROBES):
            probe()
        after_round(r)
    print("ROUNDS DONE", ROUNDS)


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[4] == "api":
        from lineprofiler import LineProfiler
        from lineprofiler.lines import TracerError

        profiler = LineProfiler(os.path.dirname(os.path.abspath(__file__)))
        line = probe.__code__.co_firstlineno + 1

        def check(r):
            try:
                stats = profiler.get_stats()
            except TracerError as error:
                print("TRACER ERROR", r, repr(error.__cause__))
                raise SystemExit(3)
            key = (probe.__code__.co_filename, probe.__code__.co_qualname, probe.__code__.co_firstlineno)
            got = stats[key].lines[line].hits if key in stats else 0
            if got != PROBES * (r + 1) or not profiler._tracer.recording:
                print("NOT RECORDING", r, got, profiler._tracer.recording)
                raise SystemExit(4)

        with profiler:
            run_rounds(check)
    else:
        run_rounds(lambda r: None)
"""


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "pester.py").write_text(PESTER)
    return root


def run(project, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def problems(out: str) -> list[str]:
    words = ("LOST", "OUR FRAMES", "NOT THE HANDLER'S", "TRACER ERROR", "NOT RECORDING", "internal error")
    return [line for line in out.splitlines() if line.startswith(words) or "internal error" in line]


def probe_hits(table: str) -> int:
    """The hits of probe()'s body line in the printed table of `lineprofiler run`."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Function: probe at"))
    for line in lines[start:]:
        if line.rstrip().endswith("# @probe"):
            return int(line.split()[1].replace(",", ""))
    raise AssertionError(f"no probe line in:\n{table}")


@pytest.mark.parametrize("how", ["sigint", "handler"])
def test_lineprofiler_run_interrupted_many_times(project, how):
    """A real `lineprofiler run` of a program that is interrupted ROUNDS times, each time at a
    random moment while new code is being decided: every interrupt reaches the program, the
    tracer never reports an internal error, and the probe's hits are exact."""
    done = run(project, "-m", "lineprofiler", "run", "app/pester.py", how, str(ROUNDS), "1")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert problems(out) == [], out[-3000:]
    assert f"ROUNDS DONE {ROUNDS}" in done.stdout
    assert probe_hits(done.stdout) == ROUNDS * PROBES


@pytest.mark.parametrize("how", ["sigint", "handler"])
def test_recording_after_each_caught_interrupt(project, how):
    """The same program under LineProfiler itself: after every caught interrupt, get_stats()
    raises no TracerError, the tracer is still recording and the probe's hits are exact."""
    done = run(project, "app/pester.py", how, str(ROUNDS), "2", "api")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert problems(out) == [], out[-3000:]
    assert f"ROUNDS DONE {ROUNDS}" in done.stdout


def test_the_program_is_interrupted_without_the_profiler(project):
    """The program itself, unprofiled: every round is interrupted (the checks above mean what
    they say)."""
    done = run(project, "app/pester.py", "sigint", "50", "3")
    assert done.returncode == 0 and problems(done.stdout) == [], done.stdout + done.stderr
    assert "ROUNDS DONE 50" in done.stdout


def test_a_filter_that_fails_every_time_is_still_an_internal_error(here):
    """What a callback's filter raises on its own, each time it is asked, stays the tracer's
    error: recording stops and the error is kept for disable(), never raised into user code."""
    import lp_workloads as wl

    from lineprofiler import LineProfiler
    from lineprofiler.lines import TracerError, _tracer

    asked = []

    def failing(code):
        asked.append(code)
        raise KeyboardInterrupt("from the filter itself")

    profiler = LineProfiler(project_folder=here)
    profiler._tracer = _tracer.Tracer(failing)
    profiler.enable()
    assert wl.loop(3) == 3  # the user's code runs on, untouched
    with pytest.raises(TracerError) as info:
        profiler.disable()
    assert isinstance(info.value.__cause__, KeyboardInterrupt)
    assert len(set(map(id, asked))) == 1  # asked about one code object, then stopped
