"""Why a phase's threads waited (DOMINANT PHASES), and a process's CPU against the machine's (the
CPU block), from worker files whose ``samples`` object carries ``off_cpu``, ``process_cpu`` and
``cpus`` as the sampler writes them: text, JSON and HTML; files written before those keys read
"not measured", never 0; a bad value is refused in one line naming the key."""

from __future__ import annotations

import json
from html import escape

import pytest
from lp_report_builders import MS, S, SimWorker

from lineprofiler.cli import main
from lineprofiler.report.read.cpu_samples import NO_SAMPLER, NOT_RECORDED
from lineprofiler.runfiles import workerfile

NOTE_TAIL = "attributed to phases at the sampler's resolution (0.1 s)"


def row(path: str, on: int, queue: int, throttled: int | None, blocked: int) -> dict:
    """One ``off_cpu.phases`` row, in milliseconds."""
    return {
        "path": path,
        "elapsed_ns": (on + queue + (throttled or 0) + blocked) * MS,
        "on_cpu_ns": on * MS,
        "runqueue_ns": queue * MS,
        "throttled_ns": None if throttled is None else throttled * MS,
        "blocked_ns": blocked * MS,
    }


def off_cpu(rows: list[dict], *, throttle_reason: str | None = None) -> dict:
    return {
        "resolution_s": 0.1,
        "phases": rows,
        "unattributed_ns": 3 * MS,
        "threads": 2,
        "unavailable_reason": None,
        "throttle_unavailable_reason": throttle_reason,
        "throttle_source": None if throttle_reason else "/sys/fs/cgroup/cpu.stat",
    }


def process_cpu(cpu_ns: int, threads_max: int) -> dict:
    return {"cpu_ns": cpu_ns, "threads": threads_max, "threads_max": threads_max, "unavailable_reason": None}


def cpus(online: int, affinity: int, quota: float | None = None) -> dict:
    return {
        "online": online,
        "affinity": affinity,
        "quota_cpus": quota,
        "quota_source": None if quota is None else "/sys/fs/cgroup/cpu.max",
        "unavailable_reason": None,
    }


def write(worker: SimWorker, run_dir, **cpu_keys) -> None:
    """The worker's file with a real sample file beside it; ``cpu_keys`` join its samples object
    (none: a file written before the sampler measured CPU)."""
    samples = worker.write_samples(run_dir, {"rss_bytes": [10**8, 10**8]}, **cpu_keys)
    for key in {"off_cpu", "process_cpu", "cpus"} - set(cpu_keys):
        samples.pop(key, None)  # whatever SimWorker writes by default: these files never measured it
    worker.write(run_dir, samples=samples)


def actor(**kwargs) -> SimWorker:
    worker = SimWorker("actor", **kwargs)
    for _ in range(10):
        with worker.phase("step"):
            worker.work(20 * MS)
            with worker.phase("forward"):
                worker.work(50 * MS)
                worker.wait(30 * MS)
                worker.count("samples", 32)
    return worker


def report(run_dir, capsys, *flags) -> str:
    assert main(["report", str(run_dir), *flags]) == 0
    return capsys.readouterr().out


def dominant_rows(run_dir, capsys, *flags) -> dict[str, dict]:
    document = json.loads(report(run_dir, capsys, "--json", *flags))
    return {p["path"]: p for p in document["dominant"]["phases"]}


def split_run(run_dir) -> None:
    """Two actors: ``step`` (with ``step/forward`` under it) sums to 800 ms on CPU, 2,000 ms in
    the CPU queue, 200 ms throttled and 1,000 ms blocked over both; ``stepper`` is another phase
    that a prefix match would wrongly add."""
    write(actor(), run_dir, off_cpu=off_cpu([
        row("step", 200, 500, 0, 300), row("step/forward", 200, 600, 0, 200), row("", 10, 0, 0, 90),
    ]), process_cpu=process_cpu(1 * S, 3), cpus=cpus(4, 2))
    write(actor(), run_dir, off_cpu=off_cpu([
        row("step", 100, 300, 200, 400), row("step/forward", 300, 600, 0, 100), row("stepper", 0, 0, 0, 5000),
    ]), process_cpu=process_cpu(1 * S, 3), cpus=cpus(4, 2))


def test_each_dominant_row_carries_its_split_summed_over_the_phase_and_its_children(tmp_path, capsys):
    split_run(tmp_path)
    rows = dominant_rows(tmp_path, capsys)
    assert rows["step"]["off_cpu"] == {
        "on_cpu_ns": 800 * MS, "runqueue_ns": 2000 * MS, "throttled_ns": 200 * MS, "blocked_ns": 1000 * MS,
        "sampled_ns": 4000 * MS, "resolution_s": 0.1, "measured_processes": 2, "processes": 2,
    }
    assert rows["step"]["off_cpu_reason"] is None
    forward = rows["step/forward"]["off_cpu"]
    assert (forward["on_cpu_ns"], forward["runqueue_ns"], forward["throttled_ns"], forward["blocked_ns"]) == (
        500 * MS, 1200 * MS, 0, 300 * MS
    )


def test_the_text_shows_the_split_under_each_row_and_says_its_resolution(tmp_path, capsys):
    split_run(tmp_path)
    lines = report(tmp_path, capsys).splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("DOMINANT PHASES"))
    step = next(i for i, line in enumerate(lines) if line.startswith("step ") and i > head)
    assert lines[step + 1] == "    waited: cpu queue 50%, throttled 5%, blocked 25% (on CPU 20%)"
    forward = next(i for i, line in enumerate(lines) if line.startswith("step/forward ") and i > head)
    assert lines[forward + 1] == "    waited: cpu queue 60%, throttled 0%, blocked 15% (on CPU 25%)"
    assert NOTE_TAIL in " ".join(" ".join(lines[head:]).split())
    assert max(len(line) for line in lines if line.startswith("  waited: ") or "resolution" in line) <= 102


def test_throttled_is_null_where_the_cgroups_counters_could_not_be_read(tmp_path, capsys):
    write(actor(), tmp_path, off_cpu=off_cpu(
        [row("step", 200, 500, None, 300), row("step/forward", 200, 600, None, 200)],
        throttle_reason="/sys/fs/cgroup/cpu.stat: Permission denied",
    ), process_cpu=process_cpu(1 * S, 3), cpus=cpus(2, 2))
    rows = dominant_rows(tmp_path, capsys)
    assert rows["step"]["off_cpu"]["throttled_ns"] is None
    assert rows["step"]["off_cpu"]["runqueue_ns"] == 1100 * MS
    text = report(tmp_path, capsys)
    assert "    waited: cpu queue 55%, throttled n/a, blocked 25% (on CPU 20%)" in text


def test_files_written_before_the_split_read_not_measured_never_zero(tmp_path, capsys):
    write(actor(), tmp_path)  # a samples object without off_cpu, process_cpu or cpus
    write(actor(), tmp_path)
    document = json.loads(report(tmp_path, capsys, "--json"))
    for phase in document["dominant"]["phases"]:
        assert phase["off_cpu"] is None and phase["off_cpu_reason"] == NOT_RECORDED
    block = document["cpu"]
    assert block["measured_processes"] == 0
    assert block["reasons"] == [{"reason": NOT_RECORDED, "processes": 2}]
    (host,) = block["hosts"]
    assert host["cores_used"] is None and host["threads_max"] is None and host["capacity_cpus"] is None
    assert [r["cores_per_process"] for r in host["roles"]] == [None]
    text = report(tmp_path, capsys)
    assert "waited:" not in text  # the table reads as it always did
    assert f"CPU  not measured: {NOT_RECORDED} (2)" in text.splitlines()
    assert "CAVEATS" not in text


def test_without_a_sampler_there_is_no_cpu_block_and_the_rows_say_why(tmp_path, capsys):
    actor().write(tmp_path)  # samples: null
    document = json.loads(report(tmp_path, capsys, "--json"))
    assert document["cpu"] is None
    assert {p["off_cpu_reason"] for p in document["dominant"]["phases"]} == {NO_SAMPLER}
    assert "CPU" not in report(tmp_path, capsys).split()


def test_no_samples_reads_none_of_it_and_says_so(tmp_path, capsys):
    split_run(tmp_path)
    document = json.loads(report(tmp_path, capsys, "--json", "--no-samples"))
    assert document["cpu"] is None
    assert {p["off_cpu_reason"] for p in document["dominant"]["phases"]} == {"not read (--no-samples)"}
    assert all(p["off_cpu"] is None for p in document["dominant"]["phases"])


def test_a_split_the_sampler_could_not_measure_says_why_in_the_cpu_block(tmp_path, capsys):
    off = {"resolution_s": None, "phases": [], "unattributed_ns": None, "threads": None,
           "unavailable_reason": "timeline_hz is 0 (off)", "throttle_unavailable_reason": None, "throttle_source": None}
    write(actor(), tmp_path, off_cpu=off, process_cpu=process_cpu(1 * S, 3), cpus=cpus(2, 2))
    rows = dominant_rows(tmp_path, capsys)
    assert rows["step"]["off_cpu"] is None and rows["step"]["off_cpu_reason"] == "timeline_hz is 0 (off)"
    text = report(tmp_path, capsys)
    assert "waited:" not in text
    assert "  waited (DOMINANT PHASES) not measured in 1: timeline_hz is 0 (off)" in text.splitlines()
    document = json.loads(report(tmp_path, capsys, "--json"))
    assert document["cpu"]["off_cpu_reasons"] == [{"reason": "timeline_hz is 0 (off)", "processes": 1}]
    assert document["cpu"]["reasons"] == []


def test_some_processes_measured_and_others_not_is_said_on_the_row(tmp_path, capsys):
    write(actor(), tmp_path, off_cpu=off_cpu([row("step", 200, 500, 0, 300)]),
          process_cpu=process_cpu(1 * S, 3), cpus=cpus(2, 2))
    write(actor(), tmp_path)
    rows = dominant_rows(tmp_path, capsys)
    assert (rows["step"]["off_cpu"]["measured_processes"], rows["step"]["off_cpu"]["processes"]) == (1, 2)
    # A phase no tick gave time to, in the process that measured: not sampled, not 0%.
    not_sampled = "not sampled: the sampler (a tick every 0.1 s) gave none of its time to it"
    assert rows["step/forward"]["off_cpu"] is None and rows["step/forward"]["off_cpu_reason"] == not_sampled
    assert f"    waited: {not_sampled}" in report(tmp_path, capsys).splitlines()
    assert "    waited: cpu queue 50%, throttled 0%, blocked 30% (on CPU 20%); sampled in 1 of 2 processes" in report(
        tmp_path, capsys
    )


# -- the CPU block ----------------------------------------------------------------------------------


def cpu_run(run_dir) -> None:
    """Four actors (3 s of CPU each, one thread) and a trainer (7 s, nine threads) over 10 s on
    node07, which lets them use 2 of its 4 CPUs; one learner on node08 under a 1.5-CPU quota."""
    for _ in range(4):
        worker = SimWorker("actor", host="node07")
        with worker.phase("act"):
            worker.work(10 * S, 3 * S)
        write(worker, run_dir, process_cpu=process_cpu(3 * S, 1), cpus=cpus(4, 2))
    trainer = SimWorker("trainer", host="node07")
    with trainer.phase("train"):
        trainer.work(10 * S, 1 * S)
    write(trainer, run_dir, process_cpu=process_cpu(7 * S, 9), cpus=cpus(4, 2))
    learner = SimWorker("learner", host="node08")
    with learner.phase("learn"):
        learner.work(4 * S)
    write(learner, run_dir, process_cpu=process_cpu(4 * S, 2), cpus=cpus(8, 8, 1.5))


def test_the_cpu_block_sets_cores_used_against_the_cpus_per_host_and_role(tmp_path, capsys):
    cpu_run(tmp_path)
    lines = report(tmp_path, capsys).splitlines()
    at = lines.index("CPU  (cores used on average against the CPUs there were, per host)")
    assert lines[at + 1 : at + 8] == [
        "  node07  2 CPUs (affinity 2 of 4 online)",
        "    5 processes used 1.90 cores on average over 10.0s, 13 threads at most",
        "    actor x4                0.30 cores each, 1 thread each at most (4 in all)",
        "    trainer x1              0.70 cores each, 9 threads at most",
        "  node08  1.5 CPUs (affinity 8 of 8 online, cgroup quota 1.5 CPUs)",
        "    1 process used 1.00 cores on average over 4.0s, 2 threads at most",
        "    learner x1              1.00 cores each, 2 threads at most",
    ]
    document = json.loads(report(tmp_path, capsys, "--json"))
    node07 = document["cpu"]["hosts"][0]
    assert node07["host"] == "node07" and node07["span_ns"] == 10 * S and node07["cpu_ns"] == 19 * S
    assert node07["cores_used"] == pytest.approx(1.9) and node07["capacity_cpus"] == 2
    assert node07["threads_max"] == 13 and node07["quota_cpus"] is None
    node08 = document["cpu"]["hosts"][1]
    assert node08["quota_cpus"] == 1.5 and node08["quota_source"] == "/sys/fs/cgroup/cpu.max"
    assert document["cpu"]["reasons"] == []


def test_the_html_draws_the_split_and_the_cpu_section(tmp_path, capsys):
    split_run(tmp_path)
    page = tmp_path / "r.html"
    assert main(["report", str(tmp_path), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "<th data-sort>waited</th>" in html
    assert html.count('data-chart="off-cpu"') == 2  # one bar per dominant row
    assert 'data-tip="cpu queue: 50% (2.0s of 4.0s)"' in html
    assert 'data-tip="throttled: 5% (200.0ms of 4.0s)"' in html
    assert escape(NOTE_TAIL) in html
    assert '<section id="cpu">' in html and 'data-host="node07"' in html
    # A counter's row under its phase has a cell for every column, the bar's too.
    table = html[html.index('<table data-block="dominant">') :]
    table = table[: table.index("</table>")]
    columns = table.count("<th data-sort>")
    rows = table.split("<tr")[2:]
    assert columns == 9 and any("data-counter" in r for r in rows)
    assert all(r.count("<td") == columns for r in rows)


def test_the_html_of_an_old_run_has_no_split_column(tmp_path, capsys):
    write(actor(), tmp_path)
    page = tmp_path / "r.html"
    assert main(["report", str(tmp_path), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "waited" not in html and 'data-chart="off-cpu"' not in html


# -- bad values --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["off_cpu"]["phases"][0].update(runqueue_ns="12"),
         "'samples.off_cpu.phases[0].runqueue_ns' has the wrong type"),
        (lambda s: s["off_cpu"]["phases"][0].update(blocked_ns=-5),
         "'samples.off_cpu.phases[0].blocked_ns' is out of range (-5)"),
        (lambda s: s["off_cpu"]["phases"][0].pop("path"), "'samples.off_cpu.phases[0].path' is missing"),
        (lambda s: s.update(off_cpu=[1]), "'samples.off_cpu' is not an object"),
        (lambda s: s["process_cpu"].update(cpu_ns=1.5), "'samples.process_cpu.cpu_ns' has the wrong type"),
        (lambda s: s["cpus"].update(quota_cpus="2"), "'samples.cpus.quota_cpus' has the wrong type"),
        (lambda s: s["cpus"].update(affinity=True), "'samples.cpus.affinity' has the wrong type"),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_the_file_and_key(tmp_path, capsys, change, message):
    worker = actor()
    samples = worker.write_samples(tmp_path, {"rss_bytes": [1, 1]}, off_cpu=off_cpu([row("step", 1, 1, 0, 1)]),
                                   process_cpu=process_cpu(S, 1), cpus=cpus(2, 2))
    change(samples)
    path = worker.write(tmp_path, samples=samples)
    for skip in (False, True):  # the merge's reader, which stops before large samples, refuses it too
        with pytest.raises(workerfile.WorkerFileError) as raised:
            workerfile.read_worker_file(path, skip_samples=skip)
        assert str(raised.value) == f"{path}: {message}"
    write(actor(), tmp_path, off_cpu=off_cpu([row("step", 1, 1, 0, 1)]))
    assert main(["report", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert message in captured.out and "Traceback" not in captured.out + captured.err
