"""0.10.0's in-process reads, on the live recorder: merged_tree(), deltas(), on_snapshot() and
io_counters(), under threads and after a fork; a callback that raises is dropped, never raised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import warnings

import pytest

from lineprofiler.accounting import Profiler


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_merged_tree_is_0_10_shape_with_counters_quantiles_and_self_time(tmp_path):
    with Profiler(str(tmp_path), "w", snapshot_interval_s=None) as profiler:
        with profiler.phase("train"):
            for _ in range(3):
                with profiler.phase("step"):
                    profiler.count("items", 8)
                    time.sleep(0.002)
        tree = profiler.merged_tree()
    step = tree[("train", "step")]
    assert step.calls == 3 and step.counters == {"items": 24}
    assert step.self_ns == step.wall_ns >= 3 * 2_000_000
    assert tree[("train",)].child_wall_ns == step.wall_ns
    assert 2e6 <= step.hist.quantile(0.5) <= step.wall_ns
    assert 0 <= step.wait_ns <= step.wall_ns


def test_deltas_are_per_interval_and_sum_to_the_tree(tmp_path):
    with Profiler(str(tmp_path), "w", snapshot_interval_s=None) as profiler:
        for _ in range(2):
            with profiler.phase("a"):
                profiler.count("n", 1)
        first = profiler.deltas()
        with profiler.phase("b"):
            pass
        second = profiler.deltas()
        tree = profiler.merged_tree()
    assert first[("a",)].calls == 2 and first[("a",)].counters == {"n": 2}
    assert set(second) == {("b",)}  # a phase that did nothing in the interval is absent
    assert second[("b",)].calls == 1 and second[("b",)].hist.count == 1
    assert first[("a",)].wall_ns == tree[("a",)].wall_ns and second[("b",)].wall_ns == tree[("b",)].wall_ns


def test_threads_add_up_in_the_tree_and_in_deltas_read_meanwhile(tmp_path):
    n_threads, n_each = 4, 2000
    with Profiler(str(tmp_path), "w", snapshot_interval_s=None) as profiler:
        summed = {"calls": 0}
        done = threading.Event()

        def work():
            for _ in range(n_each):
                with profiler.phase("work"):
                    profiler.count("items", 1)

        def read():  # deltas() read while the threads record: the intervals add up to the total
            while not done.is_set():
                interval = profiler.deltas().get(("work",))
                summed["calls"] += interval.calls if interval is not None else 0

        reader = threading.Thread(target=read)
        reader.start()
        workers = [threading.Thread(target=work) for _ in range(n_threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        done.set()
        reader.join()
        last = profiler.deltas().get(("work",))
        summed["calls"] += last.calls if last is not None else 0
        tree = profiler.merged_tree()
    assert tree[("work",)].calls == n_threads * n_each
    assert tree[("work",)].counters == {"items": n_threads * n_each}
    assert summed["calls"] == n_threads * n_each


def test_on_snapshot_sees_each_interval_from_the_snapshot_thread_while_threads_record(tmp_path):
    seen = []
    with Profiler(str(tmp_path), "w", snapshot_interval_s=0.05) as profiler:
        returned = profiler.on_snapshot(lambda snapshot: seen.append((threading.current_thread().name, snapshot)))
        assert callable(returned)  # usable as a decorator: it returns the callback
        stop = threading.Event()

        def work():
            while not stop.is_set():
                with profiler.phase("work"):
                    time.sleep(0.001)

        workers = [threading.Thread(target=work) for _ in range(3)]
        for thread in workers:
            thread.start()
        wait_for(lambda: len(seen) >= 3)
        stop.set()
        for thread in workers:
            thread.join()
        total = profiler.merged_tree()[("work",)].calls
        count = len(seen)
        wait_for(lambda: len(seen) >= count + 2)  # an interval after the last entry
    assert {name for name, _ in seen} == {"lineprofiler-snapshot"}
    last = seen[-1][1]
    assert last[("work",)].calls == total  # the argument is cumulative, as 0.10.0's
    assert sum(s.interval[("work",)].calls for _, s in seen if ("work",) in s.interval) == total
    assert all(s.interval_s > 0 and s.elapsed_s >= s.interval_s for _, s in seen)


def test_a_callback_that_raises_is_named_once_unregistered_and_the_loop_goes_on(tmp_path):
    calls = {"bad": 0, "good": 0}

    def exporter_that_lost_its_connection(snapshot):
        calls["bad"] += 1
        raise ConnectionError("gone")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Profiler(str(tmp_path), "w", snapshot_interval_s=0.03) as profiler:
            profiler.on_snapshot(exporter_that_lost_its_connection)
            profiler.on_snapshot(lambda snapshot: calls.__setitem__("good", calls["good"] + 1))
            deadline = time.monotonic() + 20
            while calls["good"] < 4:  # the training loop
                assert time.monotonic() < deadline, "the snapshots stopped"
                with profiler.phase("step"):
                    time.sleep(0.005)
            assert profiler.flush()  # the writes go on
    assert calls["bad"] == 1
    named = [w for w in caught if "exporter_that_lost_its_connection" in str(w.message)]
    assert len(named) == 1 and "ConnectionError" in str(named[0].message) and "unregistered" in str(named[0].message)


def test_on_snapshot_refuses_what_it_cannot_call(tmp_path):
    with Profiler(str(tmp_path), "w", snapshot_interval_s=None) as profiler, pytest.raises(TypeError, match="callable"):
        profiler.on_snapshot("export")


def test_a_disabled_profiler_reads_an_empty_tree(tmp_path):
    profiler = Profiler(str(tmp_path), "w", enabled=False)
    assert profiler.merged_tree() == {} and profiler.deltas() == {}
    profiler.on_snapshot(lambda snapshot: None)
    profiler.close()


def test_0_10_recipe_runs_unchanged_while_an_outer_phase_stays_open(tmp_path):
    logged = []
    errors = []
    with Profiler(str(tmp_path), "w", snapshot_interval_s=0.03) as profiler:

        @profiler.on_snapshot
        def export(_tree):  # docs/accounting-recipes.md of 0.10.0, with wandb.log replaced
            try:
                for path, stats in profiler.deltas().items():
                    name = "/".join(path)
                    logged.append({
                        f"profile/{name}/wall_s": stats.wall_ns / 1e9,
                        f"profile/{name}/wait": stats.wait_ns / stats.wall_ns,
                        f"profile/{name}/p50_ms": stats.hist.quantile(0.5) / 1e6,
                        f"profile/{name}/calls": stats.calls,
                    })
            except Exception as error:
                errors.append(error)
                raise

        with profiler.phase("epoch"):  # open for the whole run: never in deltas()
            deadline = time.monotonic() + 20
            while len(logged) < 3:
                assert time.monotonic() < deadline and not errors, errors
                with profiler.phase("step"):
                    time.sleep(0.002)
    assert not errors
    assert all(set(row) == {f"profile/epoch/step/{k}" for k in ("wall_s", "wait", "p50_ms", "calls")} for row in logged)


def test_a_snapshot_interval_counts_an_open_phase_that_deltas_leaves_out(tmp_path):
    seen = []
    with Profiler(str(tmp_path), "w", snapshot_interval_s=0.03) as profiler:
        profiler.on_snapshot(seen.append)
        with profiler.phase("epoch"):  # open throughout: its time so far is open_ns
            wait_for(lambda: len(seen) >= 2)
            assert ("epoch",) not in profiler.deltas()
    epoch = seen[-1].interval[("epoch",)]
    assert epoch.calls == 0 and epoch.wall_ns == 0
    assert 0 < epoch.open_ns <= seen[-1].interval_s * 1e9 * 1.5


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")
def test_io_counters_count_a_read_in_an_io_phase(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * 100_000)
    with Profiler(str(tmp_path / "run"), "w", snapshot_interval_s=None) as profiler:
        before = profiler.io_counters()
        with profiler.phase("load", io=True), open(data, "rb") as handle:
            handle.read()
        after = profiler.io_counters()
        phase_io = profiler.merged_tree()[("load",)].io_bytes
    assert before.available and not before.is_empty()
    assert after.read_chars - before.read_chars >= 100_000
    assert phase_io is not None and phase_io["rchar"] >= 100_000


FORK = """
import json, os, sys, time
from lineprofiler.accounting import Profiler

profiler = Profiler(sys.argv[1], "w", snapshot_interval_s=0.03)
seen = []
profiler.on_snapshot(seen.append)
with profiler.phase("parent_work"):
    pass
profiler.deltas()
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    with profiler.phase("child_work"):
        profiler.count("items", 3)
    deltas = profiler.deltas()
    del seen[:]
    deadline = time.monotonic() + 20
    while not any(("child_work",) in s for s in seen) and time.monotonic() < deadline:
        time.sleep(0.01)
    out = {
        "tree": sorted("/".join(p) for p in profiler.merged_tree()),
        "deltas": {"/".join(p): s.calls for p, s in deltas.items()},
        "snapshot": sorted("/".join(p) for p in seen[-1]) if seen else None,
    }
    profiler.close()
    os.write(write, json.dumps(out).encode())
    os._exit(0)
os.close(write)
child = json.loads(os.read(read, 65536))
os.waitpid(pid, 0)
with profiler.phase("parent_after"):
    pass
print(json.dumps({"child": child, "parent_deltas": sorted("/".join(p) for p in profiler.deltas()),
                  "parent_tree": sorted("/".join(p) for p in profiler.merged_tree())}))
profiler.close()
"""


def test_a_fork_child_reads_its_own_numbers_and_fires_its_own_callbacks(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", FORK, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout)
    child = said["child"]
    assert "parent_work" not in child["tree"] and "child_work" in child["tree"]
    assert child["deltas"] == {"child_work": 1}  # not the parent's cursor: the child's tree started empty
    assert child["snapshot"] is not None and "parent_work" not in child["snapshot"]
    assert said["parent_deltas"] == ["parent_after"]
    assert "child_work" not in said["parent_tree"]
