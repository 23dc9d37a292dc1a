"""A run shorter than a few sample periods: the sampled blocks agree with the exact ones.

Real processes, real sampler: the TIMELINE draws each phase from its entry to its exit (the
ticks carry since when their state held, and the last phase left), the I/O block never calls
bytes that an exact ``io=True`` phase moved "no phase open", its rates are per second of the
run (not of a whole sample interval), and a phase with a double-digit share that ran between
two ticks is named rather than left out. Also: files written before those fields existed are
still read as before."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.report.compute.blocks import RenderOptions, resources, timeline
from lineprofiler.report.read.merge import load_run
from lineprofiler.runfiles import samplefile

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sampler reads /proc")

SHORT = textwrap.dedent(
    """
    import os, sys, time
    from lineprofiler.accounting import Profiler

    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    run_dir = sys.argv[1]
    with Profiler(run_dir, role="short", enabled=True) as prof:
        with prof.phase("load"):
            time.sleep(0.1)
        with prof.phase("compute"):
            spin(0.2)
        with prof.phase("save", io=True):
            with open(os.path.join(run_dir, "blob"), "wb") as f:
                for _ in range(4):
                    f.write(os.urandom(1 << 20))
                f.flush()
                os.fsync(f.fileno())
        with prof.phase("tail"):
            spin(0.1)
    """
)

# Three phases of 25 ms inside the first 100 ms sample period, then a long one: a tick sees
# the state it lands in and the last phase left before it, so the first two (each over 10 %
# of the lifetime) ran unseen.
CROWDED = textwrap.dedent(
    """
    import sys, time
    from lineprofiler.accounting import Profiler

    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    with Profiler(sys.argv[1], role="crowded", enabled=True) as prof:
        for name in ("first", "second", "third"):
            with prof.phase(name):
                spin(0.025)
        with prof.phase("long"):
            spin(0.1)
    """
)


def run_job(tmp_path: Path, source: str) -> Path:
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", source, str(run_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return run_dir


def spans_by_phase(run_dir: Path) -> tuple[dict[str, int], object]:
    run = load_run(run_dir)
    procs, reasons = timeline.read_run(run, RenderOptions())
    assert len(procs) == 1, reasons
    drawn: dict[str, int] = {}
    for a, b, path in procs[0].spans:
        drawn[path] = drawn.get(path, 0) + (b - a)
    return drawn, run


def test_the_timeline_draws_each_phase_from_entry_to_exit(tmp_path):
    drawn, run = spans_by_phase(run_job(tmp_path, SHORT))
    exact = run.roles["short"].phases
    assert set(exact) == {"load", "compute", "save", "tail"}
    for path, stats in exact.items():
        # Exact to the clock reads around each entry and exit, not to the 100 ms period.
        assert abs(drawn.get(path, 0) - stats.wall_ns) < 2_000_000, (path, drawn.get(path), stats.wall_ns)
    block = timeline.timeline_block(run, RenderOptions())
    assert block is not None
    (role,) = block.roles
    assert set(role.legend.values()) == set(exact)
    assert role.unseen == {}
    # The process ends with its last tick (taken at close): its lane ends with the run, not a
    # period past it.
    (proc,) = timeline.read_run(run, RenderOptions())[0]
    assert proc.spans[-1][1] <= run.end_ns
    assert run.end_ns - proc.spans[-1][1] < 50_000_000


def test_the_io_block_never_calls_a_phases_bytes_unphased(tmp_path):
    run_dir = run_job(tmp_path, SHORT)
    run = load_run(run_dir)
    exact_written = sum(
        p["io_bytes"]["write_bytes"] for w in run.workers for p in w.document["phases"] if p["path"] == "save"
    )
    assert exact_written >= 4 << 20
    io = resources.sampled_io(run, RenderOptions())
    assert io is not None
    assert io.write_bytes >= 4 << 20
    # The one sampled interval spans the whole run and holds the save phase: not "no phase".
    assert io.no_phase_share is not None and io.no_phase_share < 0.05, io.no_phase_share
    # The rate is per second of the run (about 0.5 s), not of a whole 1 s interval.
    seconds = (run.end_ns - run.start_ns) / 1e9
    assert seconds < 0.9
    assert io.write_per_s == pytest.approx(io.write_bytes / seconds, rel=0.05)


def test_a_phase_between_ticks_is_named_when_not_drawn(tmp_path):
    drawn, run = spans_by_phase(run_job(tmp_path, CROWDED))
    stats = run.roles["crowded"]
    block = timeline.timeline_block(run, RenderOptions())
    assert block is not None
    (role,) = block.roles
    life = stats.lifetime_ns
    for path, phase in stats.phases.items():
        share = phase.self_ns / life
        if share < 0.10:
            continue
        # Every phase of a double-digit share is drawn near its exact time, or named.
        if path in role.unseen:
            assert role.unseen[path] == pytest.approx(share)
        else:
            assert path in role.legend.values(), (path, role.legend, role.unseen)
    # What is drawn never exceeds what happened (beyond the clock reads).
    for path, ns in drawn.items():
        if path:
            assert ns <= stats.phases[path].wall_ns + 2_000_000, (path, ns)


def test_a_timeline_file_without_the_since_columns_reads_as_before(tmp_path):
    run_dir = run_job(tmp_path, SHORT)
    run = load_run(run_dir)
    worker = run.workers[0]
    path, _ = timeline._timeline_file(worker)
    assert path is not None
    table = samplefile.read_samples(path)
    required = samplefile.TIMELINE_REQUIRED_COLUMNS
    rows = list(zip(*(table.column(c) for c in required), strict=True))
    old = path.with_name("old.timeline")
    writer = samplefile.SampleWriter(
        old,
        required,
        table.interval_ns,
        monotonic_ref_ns=table.monotonic_ref_ns,
        unix_ref_ns=table.unix_ref_ns,
        pid=table.pid,
    )
    writer.append(b"".join(int(v).to_bytes(8, sys.byteorder, signed=True) for row in rows for v in row))
    proc = timeline.read_process(worker, old)
    # Each tick's state lasts until the next tick: the sampled picture, period-quantised.
    ticks = sorted({t for t, _, _ in rows})
    starts = {table.to_unix_ns(t) for t in ticks}
    assert all(a in starts for a, _, _ in proc.spans)
    assert proc.ticks == len(ticks)
