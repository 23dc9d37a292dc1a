"""``export --perfetto``: Chrome trace-event JSON whose every event carries what the format
requires, one process track per worker and counter tracks from the samples.

The ``perfetto`` package's trace processor downloads a binary when it starts, which cannot
work offline, so the format is checked here field by field, as the trace-event format
documents it: every event has ``name``, ``ph``, ``pid`` and ``tid``; every event but metadata a
numeric ``ts``; a complete event (``X``) a ``dur``; a counter event (``C``) an ``args`` object
of finite numbers; a metadata event (``M``) a known name with its ``args``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys

import pytest
from lp_report_builders import MS, T0, S, SimWorker

from helpers.cli import run_cli
from lineprofiler.cli import main
from lineprofiler.report.compute.blocks import timeline
from lineprofiler.report.compute.build import process
from lineprofiler.report.model import Lane, Span
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render import perfetto
from lineprofiler.runfiles.samplefile import BASE_COLUMNS

from . import html_runs

PHASES = {"M", "X", "C", "B", "E", "i", "I"}
METADATA = {
    "process_name": "name",
    "process_labels": "labels",
    "process_sort_index": "sort_index",
    "thread_name": "name",
}


def validate(doc: dict) -> list[dict]:
    assert set(doc) >= {"traceEvents"} and doc.get("displayTimeUnit") in ("ms", "ns")
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    for event in events:
        assert isinstance(event.get("name"), str) and event["name"], event
        assert event.get("ph") in PHASES, event
        assert isinstance(event.get("pid"), int) and isinstance(event.get("tid"), int), event
        if event["ph"] == "M":
            assert event["name"] in METADATA and METADATA[event["name"]] in event["args"], event
            continue
        assert isinstance(event.get("ts"), (int, float)) and math.isfinite(event["ts"]) and event["ts"] >= 0, event
        if event["ph"] == "X":
            assert isinstance(event.get("dur"), (int, float)) and event["dur"] >= 0, event
        if event["ph"] == "C":
            args = event.get("args")
            assert isinstance(args, dict) and args, event
            assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in args.values()), event
    return events


def export(run_dir, out, capsys) -> dict:
    assert main(["export", str(run_dir), "--perfetto", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert err == "" and printed.strip() == str(out)
    return json.loads(out.read_text())


def test_every_event_is_well_formed_and_every_worker_has_its_tracks(tmp_path, capsys):
    run_dir = html_runs.write_run(tmp_path / "profile")
    events = validate(export(run_dir, tmp_path / "trace.json", capsys))
    run = load_run(run_dir)
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert sorted(names.values()) == sorted(perfetto.process_name(w) for w in run.workers)
    assert "actor node00 " in " ".join(names.values()) and "learner node01 " in " ".join(names.values())
    assert any(n.endswith("(3)") and n.startswith("learner node01 ") for n in names.values())
    counters = {}
    for e in events:
        if e["ph"] == "C":
            counters.setdefault(names[e["pid"]], set()).add(e["name"])
    sampled = [perfetto.process_name(w) for w in run.workers if w.has_data]
    assert len(sampled) == 4
    for name in sampled:
        assert counters[name] == {"RSS", "I/O rate", "GPU 0"}
    gpu = next(e for e in events if e["name"] == "GPU 0")
    assert set(gpu["args"]) <= {"busy %", "this process %"} and "busy %" in gpu["args"]
    lifetimes = [e for e in events if e["ph"] == "X" and e["tid"] == 0]
    assert len(lifetimes) == len(run.workers)


def test_long_series_keep_their_spikes(tmp_path):
    worker = SimWorker("actor", start_unix_ns=T0)
    rows = 10_000
    columns = {name: [0] * rows for name in BASE_COLUMNS if name not in ("t_ns", "flags")}
    columns["rss_bytes"] = [100 + (10**9 if k == 7_777 else 0) for k in range(rows)]
    worker.wait(rows * S)
    worker.write(tmp_path, samples=worker.write_samples(tmp_path, columns, interval_s=1.0))
    events = perfetto.trace_events(load_run(tmp_path), max_points=200)
    rss = [e for e in events if e["name"] == "RSS"]
    assert len(rss) <= 200
    assert max(e["args"]["bytes"] for e in rss) == 100 + 10**9
    assert [e["ts"] for e in rss] == sorted(e["ts"] for e in rss)


def test_phase_slices_when_the_run_has_a_timeline(tmp_path, monkeypatch):
    worker = SimWorker("actor")
    with worker.phase("step"):
        worker.work(10 * MS)
    worker.write(tmp_path)
    run = load_run(tmp_path)

    def lanes(run, options):
        w = run.workers[0]
        return [Lane(process(w), [Span("step", w.start_ns, w.start_ns + 10 * MS)])]

    monkeypatch.setattr(timeline, "lanes", lanes)
    events = validate(perfetto.trace_document(run))
    (slice_,) = [e for e in events if e["ph"] == "X" and e["tid"] == 1]
    assert slice_["name"] == "step" and slice_["ts"] == 0 and slice_["dur"] == 10_000


def test_bad_input_and_an_unwritable_path(tmp_path, capsys):
    assert main(["export", str(tmp_path / "missing"), "--perfetto", str(tmp_path / "t.json")]) == 2
    assert capsys.readouterr().err == f"lineprofiler: no such directory: {tmp_path / 'missing'}\n"
    SimWorker("actor").write(tmp_path / "run")
    assert main(["export", str(tmp_path / "run"), "--perfetto", str(tmp_path / "no" / "t.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lineprofiler: cannot write ") and err.count("\n") == 1
    assert main(["export", str(tmp_path / "run")]) == 2
    assert "--perfetto" in capsys.readouterr().err


RESTARTED_JOB = """
import sys
from lineprofiler.accounting import Profiler

with Profiler(run_dir=sys.argv[1], role=sys.argv[2]) as profiler:
    with profiler.phase("step"):
        profiler.count("items", 1)
"""


def test_export_takes_any_attempt_as_report_does(tmp_path):
    """A job restarted into the same run directory (as torchrun or a Slurm requeue does: one
    LINEPROFILER_RUN_ID, the attempt counting up), each attempt a real process: export writes the
    newest by default, the one --attempt names otherwise, and refuses an unknown ID with the
    very line report prints."""
    run_dir = tmp_path / "profile"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    for attempt, role in ((0, "before_restart"), (1, "after_restart")):
        subprocess.run([sys.executable, "-c", RESTARTED_JOB, str(run_dir), role], check=True, timeout=120,
                       env={**env, "LINEPROFILER_RUN_ID": "job-7", "LINEPROFILER_ATTEMPT": str(attempt)})

    cli = run_cli

    def roles(trace: dict) -> set[str]:
        return {e["args"]["name"].split(" ", 1)[0] for e in validate(trace) if e["name"] == "process_name"}

    for wanted, run, role in ((None, "job-7 #1", "after_restart"), ("job-7#0", "job-7", "before_restart"),
                              ("job-7 #1", "job-7 #1", "after_restart"), ("job-7", "job-7", "before_restart")):
        out = tmp_path / f"trace-{wanted}.json"
        result = cli("export", run_dir, "--perfetto", out, *(("--attempt", wanted) if wanted else ()))
        assert result.returncode == 0 and result.stderr == "", result.stderr
        trace = json.loads(out.read_text())
        assert trace["otherData"]["run"] == run and roles(trace) == {role}, (wanted, trace["otherData"])

    refused = [cli(*args, "--attempt", "job-8") for args in (("report", run_dir),
                                                              ("export", run_dir, "--perfetto", tmp_path / "t.json"))]
    for result in refused:
        assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    line = f"lineprofiler: no attempt 'job-8' in {run_dir}; its attempts: job-7 #1, job-7\n"
    assert refused[1].stderr == refused[0].stderr == line
    assert not (tmp_path / "t.json").exists()


ENDINGS_JOB = """
import os, signal, sys, time
from lineprofiler.accounting import Profiler

how = sys.argv[2]
profiler = Profiler(run_dir=sys.argv[1], role=how, snapshot_interval_s=None)
with profiler.phase("step"):
    profiler.count("items", 1)
if how == "exits":
    profiler.close()
    sys.exit(0)
profiler.flush()  # a snapshot: status "running"
print("ready", flush=True)
time.sleep(120)
"""


def test_how_a_process_ended_is_its_label_and_an_instant_not_a_lifelong_slice(tmp_path, capsys):
    """Three real processes: one exits, one is ended by SIGTERM (the profiler's final flush says
    "signalled"), one is SIGKILLed after a snapshot (its file still says "running"). No slice is
    named after how a process ended; each process carries it as its label, and the two that
    ended have an instant event named so at their end."""
    run_dir = tmp_path / "profile"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}
    env["LINEPROFILER_RUN_ID"] = "endings"
    exits = subprocess.run([sys.executable, "-c", ENDINGS_JOB, str(run_dir), "exits"], env=env, timeout=120)
    assert exits.returncode == 0
    for how, sig in (("terminated", signal.SIGTERM), ("killed", signal.SIGKILL)):
        child = subprocess.Popen(
            [sys.executable, "-c", ENDINGS_JOB, str(run_dir), how], env=env, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.send_signal(sig)
        assert child.wait(timeout=120) == -sig
    events = validate(export(run_dir, tmp_path / "trace.json", capsys))
    run = load_run(run_dir)
    roles = {e["pid"]: e["args"]["name"].split(" ", 1)[0] for e in events if e["name"] == "process_name"}
    labels = {roles[e["pid"]]: e["args"]["labels"] for e in events if e["name"] == "process_labels"}
    assert labels == {"exits": "exited", "terminated": "signalled SIGTERM", "killed": "running"}
    lifetimes = [e for e in events if e["ph"] == "X" and e["tid"] == 0]
    assert len(lifetimes) == len(run.workers) == 3
    assert {e["name"] for e in lifetimes} == {"lifetime"}
    assert {roles[e["pid"]]: e["args"]["status"] for e in lifetimes} == labels
    statuses = {"exited", "signalled", "running", "started", "signalled SIGTERM"}
    assert not [e for e in events if e["ph"] == "X" and e["name"] in statuses]
    instants = {roles[e["pid"]]: e for e in events if e["ph"] == "i"}
    assert set(instants) == {"exits", "terminated"}  # the SIGKILLed one never said it ended
    for role, event in instants.items():
        assert event["name"] == labels[role] and event["tid"] == 0 and event["s"] == "t"
        (lifetime,) = [e for e in lifetimes if e["pid"] == event["pid"]]
        assert event["ts"] == pytest.approx(lifetime["ts"] + lifetime["dur"])  # at the end of its life
