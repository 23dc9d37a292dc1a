"""signal() and wait_on() in two real processes, a producer and a consumer over a
multiprocessing.Queue: each side's document holds its links, with the same channel and keys, each
under the phase that was open when it was made."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

from lineprofiler.runfiles import tracesection, workerfile

N_ITEMS = 6


def _producer(run_dir: str, queue: Any) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="producer", enabled=True, trace=True, snapshot_interval_s=None)
    for i in range(N_ITEMS):
        with prof.phase("produce"):
            queue.put(("item", i))
            prof.signal("batches", i)
    prof.close()


def _consumer(run_dir: str, queue: Any) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(run_dir, role="consumer", enabled=True, trace=True, snapshot_interval_s=None)
    with prof.phase("consume"):
        for _ in range(N_ITEMS):
            with prof.phase("wait"):
                _, key = queue.get(timeout=30)
            prof.wait_on("batches", key)
    prof.close()


def test_links_of_a_producer_and_a_consumer_match(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=target, args=(str(tmp_path), queue)) for target in (_producer, _consumer)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    paths = {workerfile.read_worker_file(p)["identity"]["role"]: p for p in workerfile.find_worker_files(tmp_path)}
    docs = {role: workerfile.read_worker_file(p) for role, p in paths.items()}
    keys = [str(i) for i in range(N_ITEMS)]
    for role, kind, path in (("producer", "signal", "produce"), ("consumer", "wait", "consume")):
        doc = docs[role]
        trace = doc["trace"]
        phase_id = next(p["id"] for p in doc["phases"] if p["path"] == path)
        links = trace["links"]
        assert (trace["links_recorded"], trace["links_dropped"], trace["links_truncated"]) == (N_ITEMS, 0, 0)
        assert [link[0] for link in links] == [kind] * N_ITEMS
        assert [link[1] for link in links] == ["batches"] * N_ITEMS
        assert [link[2] for link in links] == keys
        assert [link[5] for link in links] == [phase_id] * N_ITEMS  # the innermost phase open then
        assert [link[4] for link in links] == [0] * N_ITEMS and trace["threads"][0]["name"] == "MainThread"
        times = [link[3] for link in links]
        assert times == sorted(times)
        spans = [s for s in tracesection.span_rows(trace, paths[role]) if s[2] == phase_id]
        assert all(spans[0][0] <= t <= spans[-1][1] for t in times)


def test_long_channels_and_keys_are_cut_and_counted_and_a_bad_key_never_raises(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    prof = Profiler(tmp_path, role="cut", enabled=True, trace=True, snapshot_interval_s=None)
    prof.signal("é" * 40, "k" * 300)  # 80 bytes of channel: cut at a character boundary
    prof.wait_on("q", Unprintable())
    trace = prof.recorder.trace_snapshot()  # type: ignore[union-attr]
    prof.close()
    assert trace["links_recorded"] == 1 and trace["links_truncated"] == 1
    kind, channel, key, _, _, phase_id = trace["links"][0]
    assert (kind, channel, key, phase_id) == ("signal", "é" * 28, "k" * 56, -1)
    doc = workerfile.read_worker_file(next(iter(workerfile.find_worker_files(tmp_path))))
    assert any("trace link: RuntimeError: no text" in e for e in doc["errors"])


def test_a_lifecycle_mark_of_unprintable_values_never_raises_and_records_nothing(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    prof = Profiler(tmp_path, role="marks", enabled=True, trace=True, snapshot_interval_s=None)
    prof.trace_mark(Unprintable(), "k", "admitted")  # the channel
    prof.trace_mark("c", Unprintable(), "admitted", sample=0.5)  # the key, hashed for the sample
    prof.trace_mark("c", "k", Unprintable())  # the name
    prof.trace_mark("c", "k", "admitted", sample="half")  # type: ignore[arg-type]
    prof.trace_mark("c", "k", "kept")
    trace = prof.recorder.trace_snapshot()  # type: ignore[union-attr]
    prof.close()
    assert [link[:3] for link in trace["links"]] == [["mark:kept", "c", "k"]]
    doc = workerfile.read_worker_file(next(iter(workerfile.find_worker_files(tmp_path))))
    assert sum("trace link:" in e for e in doc["errors"]) == 4, doc["errors"]
