"""Attempts are told apart by time: what is merged, what is another job, what is superseded.

Worker files are built with ``SimWorker`` on a fake clock, so every lifetime is exact: a
group's lifetime runs from its earliest start to its newest flush or exit.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from lp_report_builders import MS, T0, S, SimWorker

from helpers.cli import run_cli
from lineprofiler.cli import main
from lineprofiler.report.read import attempts, merge
from lineprofiler.report.read.merge import ReportError, load_run
from lineprofiler.report.render.blocks import render
from lineprofiler.report.render.text import ATTEMPT_ROWS
from lineprofiler.runfiles import workerfile


def worker(run_dir, *, run_id, source, start_s, run_s, role="actor", attempt=0, items=1, status="exited",
           job_id=None, launcher=None):
    """One process of ``run_s`` seconds from ``T0 + start_s``, counting ``items`` once."""
    sim = SimWorker(role, run_id=run_id, attempt=attempt, start_unix_ns=T0 + int(start_s * S), job_id=job_id,
                    launcher=launcher)
    with sim.phase("iteration"):
        sim.work(int(run_s * S) - MS)
        sim.count("items", items)
    sim.wait(MS)
    document = sim.document(status=status)
    if source is not None:
        document["identity"]["run_id_source"] = source
    workerfile.write_worker_file(sim.path_in(run_dir), document)
    return sim


def items(run):
    return sum(role.counters.get(("iteration", "items"), 0) for role in run.roles.values())


def header(run):
    lines = render(run).splitlines()
    return lines[: lines.index("")]


@pytest.mark.parametrize("source", ["generated", "parent-process", None])
def test_processes_of_one_job_with_their_own_generated_ids_are_merged_by_time(tmp_path, source):
    # What an unprofiled parent's children wrote before they could agree: 17 ids, one job.
    for i in range(16):
        worker(tmp_path, run_id=f"20260813T2241-{i:06x}", source=source, start_s=0.1 * i, run_s=60)
    worker(tmp_path, run_id="20260813T2241-abcdef", source=source, start_s=0.5, run_s=62, role="learner")
    run = load_run(tmp_path)
    assert len(run.workers) == 17 and items(run) == 17
    assert len(run.merged) == 16 and not run.superseded and not run.concurrent
    lines = header(run)
    assert lines[0].endswith("Processes 17   Roles actor x16, learner x1")
    (line,) = [line for line in lines if line.startswith("Merged by time")]
    assert line.startswith("Merged by time: 16 process(es) under 16 other generated run id(s) (")
    assert "set LINEPROFILER_RUN_ID" in line
    assert not any(line.startswith(("Superseded", "Concurrent")) for line in lines)


def test_a_group_that_ended_before_the_newest_began_is_superseded(tmp_path):
    for pid_offset in range(2):
        worker(tmp_path, run_id="mp100-aaaaaa", source="parent-process", start_s=pid_offset, run_s=10)
    for pid_offset in range(3):
        worker(tmp_path, run_id="mp200-bbbbbb", source="parent-process", start_s=20 + pid_offset, run_s=10)
    run = load_run(tmp_path)
    assert run.run_id == "mp200-bbbbbb" and len(run.workers) == 3 and not run.merged
    (old,) = run.superseded
    assert (old.run_id, old.files, old.status, old.start_ns, old.end_ns) == (
        "mp100-aaaaaa", 2, "superseded", T0, T0 + 11 * S
    )
    assert header(run)[3] == (
        "Superseded attempt mp100-aaaaaa (not merged): 2 worker file(s), actor x2, started 2026-08-13 22:41:00 UTC, "
        "ran 11.0s"
    )


def test_a_rerun_of_a_split_job_is_one_superseded_attempt_not_seventeen(tmp_path):
    for rerun, base in ((0, 0), (1, 600)):
        for i in range(17):
            worker(tmp_path, run_id=f"20260813T22{41 + rerun * 10}-{i:06x}", source="generated", start_s=base + i * 0.1,
                   run_s=30)
    run = load_run(tmp_path)
    assert len(run.workers) == 17 and len(run.merged) == 16
    (old,) = run.superseded
    assert old.files == 17 and len(old.merged) == 16
    (line,) = [line for line in header(run) if line.startswith("Superseded")]
    assert "17 worker file(s), actor x17" in line and "(17 run ids merged by time)" in line


def test_two_jobs_with_explicit_ids_that_overlap_stay_apart_and_name_each_other(tmp_path):
    worker(tmp_path, run_id="job-a", source="env", start_s=0, run_s=30, items=1)
    worker(tmp_path, run_id="job-a", source="env", start_s=1, run_s=30, items=1)
    worker(tmp_path, run_id="slurm-7.0", source="slurm", start_s=10, run_s=30, items=10, job_id="7",
           launcher="slurm")
    run = load_run(tmp_path)
    assert run.run_id == "slurm-7.0" and items(run) == 10 and not run.merged and not run.superseded
    (other,) = run.concurrent
    assert (other.run_id, other.files, other.status) == ("job-a", 2, "concurrent")
    assert (
        "Concurrent run job-a (another job overlapping this one in time; not merged): 2 worker file(s), actor x2, "
        "started 2026-08-13 22:41:00 UTC, ran 31.0s"
    ) in header(run)

    chosen = load_run(tmp_path, attempt="job-a")
    assert chosen.run_id == "job-a" and items(chosen) == 2 and chosen.status == "concurrent"
    assert chosen.newest is not None and chosen.newest.run_id == "slurm-7.0"
    lines = header(chosen)
    assert "Showing the concurrent attempt job-a (--attempt); the newest is slurm-7.0" in lines
    assert any(line.startswith("Newest attempt slurm-7.0 (overlapping this one in time; not merged): 1 worker file(s)")
               for line in lines)


def test_generated_groups_overlapping_an_explicit_job_merge_into_it(tmp_path):
    # A job with an explicit id, and a helper started by subprocess from an unprofiled script
    # halfway through: it started last, but the job is what the report shows.
    worker(tmp_path, run_id="job-a", source="env", start_s=0, run_s=100, items=1)
    worker(tmp_path, run_id="20260813T2242-0000aa", source="generated", start_s=50, run_s=5, items=10)
    worker(tmp_path, run_id="20260813T2230-0000bb", source="generated", start_s=-700, run_s=5, items=100)
    run = load_run(tmp_path)
    assert run.run_id == "job-a" and items(run) == 11
    assert [a.run_id for a in run.merged] == ["20260813T2242-0000aa"]
    assert [a.run_id for a in run.superseded] == ["20260813T2230-0000bb"]


def test_a_launcher_restart_supersedes_the_older_attempt_even_when_they_overlap(tmp_path):
    # The killed first attempt's last snapshot lands after the requeued one began.
    worker(tmp_path, run_id="slurm-4242.0", source="slurm", start_s=0, run_s=100, status="running", job_id="4242",
           launcher="slurm")
    worker(tmp_path, run_id="slurm-4242.0-r1", source="slurm", attempt=1000, start_s=90, run_s=50, items=5,
           job_id="4242", launcher="slurm")
    run = load_run(tmp_path)
    assert (run.run_id, run.attempt, items(run)) == ("slurm-4242.0-r1", 1000, 5)
    (old,) = run.superseded
    assert (old.run_id, old.status) == ("slurm-4242.0", "restarted")
    assert any(line.startswith("Superseded attempt slurm-4242.0 (not merged): 1 worker file(s)")
               and line.endswith("; the job was restarted since") for line in header(run))
    # The same with LINEPROFILER_ATTEMPT counting up under one LINEPROFILER_RUN_ID.
    other = tmp_path / "env"
    worker(other, run_id="job", source="env", start_s=0, run_s=100, status="running")
    worker(other, run_id="job", source="env", attempt=1, start_s=90, run_s=50, items=7)
    run = load_run(other)
    assert (run.run_id, run.attempt, items(run)) == ("job", 1, 7)
    assert [(a.run_id, a.attempt, a.status) for a in run.superseded] == [("job", 0, "restarted")]


def test_attempt_ids_are_matched_as_the_header_prints_them(tmp_path):
    worker(tmp_path, run_id="job", source="env", start_s=0, run_s=10, items=1)
    worker(tmp_path, run_id="job", source="env", attempt=2, start_s=20, run_s=10, items=2)
    worker(tmp_path, run_id="mp1-000001", source="parent-process", start_s=40, run_s=10, items=4)
    worker(tmp_path, run_id="mp2-000002", source="parent-process", start_s=45, run_s=10, items=8)
    assert items(load_run(tmp_path)) == 12  # the two overlapping parent-process ids
    assert items(load_run(tmp_path, attempt="job")) == 1
    assert items(load_run(tmp_path, attempt="job #2")) == 2
    assert items(load_run(tmp_path, attempt="job#2")) == 2
    # a merged group's id selects the attempt it was merged into
    assert items(load_run(tmp_path, attempt="mp1-000001")) == 12
    with pytest.raises(ReportError, match=r"^no attempt 'job #1' in .*; its attempts: mp"):
        load_run(tmp_path, attempt="job #1")
    with pytest.raises(ReportError, match="no attempt 'other'"):
        load_run(tmp_path, attempt="other")


def test_many_superseded_attempts_are_summed_up_after_ten(tmp_path):
    for i in range(14):
        worker(tmp_path, run_id=f"mp{i}-{i:06x}", source="parent-process", start_s=100 * i, run_s=10)
    lines = header(load_run(tmp_path))
    assert len([line for line in lines if line.startswith("Superseded attempt")]) == ATTEMPT_ROWS
    assert lines[-2].startswith("... and 3 older attempt(s), 3 worker file(s), the oldest mp0-000000 started ")
    assert lines[-1] == "(lineprofiler report DIR --attempt ID shows another attempt)"


def test_an_unreadable_file_of_a_merged_group_is_a_caveat_of_the_attempt(tmp_path):
    worker(tmp_path, run_id="20260813T2241-00000a", source="generated", start_s=0, run_s=10)
    worker(tmp_path, run_id="20260813T2241-00000b", source="generated", start_s=1, run_s=10)
    worker(tmp_path, run_id="oldjob", source="env", start_s=-900, run_s=10)
    folder = workerfile.worker_dir(tmp_path, "node07")
    (folder / workerfile.worker_file_name("20260813T2241-00000a", 7, "0000abcd")).write_text("{")
    (folder / workerfile.worker_file_name("oldjob", 8, "0000abce")).write_text("{")
    run = load_run(tmp_path)
    assert [u.path.name for u in run.unreadable] == [workerfile.worker_file_name("20260813T2241-00000a", 7, "0000abcd")]


def test_partition_puts_every_group_in_exactly_one_attempt(tmp_path):
    specs = [("a", "env", 0, 50), ("g1", "generated", 10, 5), ("b", "env", 40, 30), ("g2", "generated", 65, 10),
             ("g3", "generated", -200, 10), ("c", "torchrun", -150, 10), ("g4", "parent-process", -145, 2)]
    for run_id, source, start, length in specs:
        worker(tmp_path, run_id=run_id, source=source, start_s=start, run_s=length)
    every = [
        merge.worker_from_document(path, workerfile.read_worker_file(path))
        for path in workerfile.find_worker_files(tmp_path)
    ]
    parts = attempts.partition(attempts.group_workers(every))
    names = [name for part in parts for name in part.names]
    assert sorted(names) == sorted(name for name, *_ in specs)  # each group once
    assert [part.status for part in parts] == ["newest", "concurrent", "superseded", "superseded"]
    assert [part.names for part in parts] == [["b", "g2"], ["a", "g1"], ["c", "g4"], ["g3"]]
    run = load_run(tmp_path)
    # b started last among the explicit ids and g2 overlaps only b; a overlaps b: another job.
    assert run.run_id == "b" and [a.run_id for a in run.merged] == ["g2"]
    assert [a.run_id for a in run.concurrent] == ["a"]
    assert {a.run_id for a in run.superseded} == {"g3", "c"}
    assert load_run(tmp_path, attempt="a").merged[0].run_id == "g1"
    assert [a.run_id for a in load_run(tmp_path, attempt="c").merged] == ["g4"]


def test_the_cli_shows_any_attempt_and_refuses_an_unknown_one_in_one_line(tmp_path):
    worker(tmp_path, run_id="first", source="env", start_s=0, run_s=10, items=3)
    worker(tmp_path, run_id="second", source="env", start_s=60, run_s=10, items=4)
    cli = run_cli
    shown = cli("report", tmp_path, "--attempt", "first")
    assert shown.returncode == 0 and shown.stderr == ""
    assert "Run first" in shown.stdout.splitlines()[1]
    assert "Showing the superseded attempt first (--attempt); the newest is second" in shown.stdout
    for args in (("report", tmp_path, "--attempt", "third"), ("compare", tmp_path, tmp_path, "--attempt-b", "x")):
        bad = cli(*args)
        assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1, bad
        assert "no attempt" in bad.stderr and "its attempts: second, first" in bad.stderr
        assert "Traceback" not in bad.stderr
    compared = cli("compare", tmp_path, tmp_path, "--attempt-a", "first", "--json")
    assert compared.returncode == 0, compared.stderr
    document = json.loads(compared.stdout)
    assert (document["a"]["run"], document["b"]["run"]) == ("first", "second")
    assert document["a"]["superseded"] == [] and document["b"]["superseded"] == ["first"]
    text = cli("compare", tmp_path, tmp_path, "--attempt-a", "first").stdout
    assert "B: superseded attempt first not merged" in text


def test_every_renderer_names_the_same_attempts(tmp_path, capsys):
    # One job with generated ids merged into it, another job overlapping it, an earlier rerun.
    worker(tmp_path, run_id="old-job", source="env", start_s=-500, run_s=100)
    worker(tmp_path, run_id="job-a", source="env", start_s=0, run_s=30)
    worker(tmp_path, run_id="slurm-7.0", source="slurm", start_s=10, run_s=30, job_id="7", launcher="slurm")
    worker(tmp_path, run_id="mp300-cccccc", source="parent-process", start_s=12, run_s=5)
    worker(tmp_path, run_id="mp301-dddddd", source="parent-process", start_s=13, run_s=5, role="learner")

    def cli(*args):
        assert main([str(a) for a in args]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        return out

    lines = header(load_run(tmp_path))
    attempt_lines = lines[3:]
    assert [line.split(" ", 2)[:2] for line in attempt_lines[:3]] == [
        ["Merged", "by"], ["Concurrent", "run"], ["Superseded", "attempt"]
    ]
    doc = json.loads(cli("report", tmp_path, "--json"))
    head = doc["header"]
    assert (head["run"], head["status"], head["newest"]) == ("slurm-7.0", "newest", None)
    assert [a["name"] for a in head["merged"]] == ["mp301-dddddd", "mp300-cccccc"]
    (concurrent,) = head["concurrent"]
    assert (concurrent["name"], concurrent["files"], concurrent["status"]) == ("job-a", 1, "concurrent")
    assert (concurrent["span_ns"], concurrent["roles"], concurrent["merged"]) == (30 * S, {"actor": 1}, [])
    (old,) = head["superseded"]
    assert (old["name"], old["start_ns"], old["end_ns"], old["status"]) == ("old-job", T0 - 500 * S, T0 - 400 * S,
                                                                           "superseded")
    run = doc["run"]
    assert (run["superseded"], run["concurrent"], run["merged"]) == (
        ["old-job"], ["job-a"], ["mp301-dddddd", "mp300-cccccc"]
    )
    chosen = json.loads(cli("report", tmp_path, "--json", "--attempt", "job-a"))["header"]
    assert (chosen["run"], chosen["status"], chosen["newest"]["name"]) == ("job-a", "concurrent", "slurm-7.0")
    assert chosen["newest"]["merged"] == ["mp301-dddddd", "mp300-cccccc"]

    # The HTML page's attempts box holds the text header's lines, in order.
    cli("report", tmp_path, "--html", tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    box = re.search(r'data-block="attempts">(.*?)</section>', page, re.S)
    assert box is not None
    assert [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", box.group(1))] == attempt_lines
    assert page.index('data-block="attempts"') < page.index('id="roles"')
    # compare --html says what compare's text says of them.
    cli("compare", tmp_path, tmp_path, "--attempt-a", "job-a", "--html", tmp_path / "compare.html")
    compared = html.unescape((tmp_path / "compare.html").read_text())
    text = cli("compare", tmp_path, tmp_path, "--attempt-a", "job-a")
    for note in ("A: superseded attempt old-job not merged", "B: concurrent run job-a (another job overlapping "
                 "in time) not merged", "B: 2 more generated run id(s) overlapping slurm-7.0 in time merged"):
        assert f"  - {note}" in text and f"<li>{note}</li>" in compared
