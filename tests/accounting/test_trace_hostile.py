"""The trace block under the live file's rules: a file shrunk under its writer costs the file,
never a span (the SIGBUS rescue); a cut or damaged block is a problem line for its reader, never
an exception; asyncio tasks show their own open entries once."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

from lineprofiler.runfiles import livefile, livetrace


def test_a_live_file_shrunk_under_a_traced_writer_loses_no_span(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="s", enabled=True, trace=True, trace_capacity=500, snapshot_interval_s=None)
    for _ in range(10):
        with prof.phase("before"):
            pass
    assert prof.live_path is not None
    os.truncate(prof.live_path, 0)  # the trace block's pages are gone: the next store faults
    for _ in range(20):
        with prof.phase("after"):
            prof.signal("c", "k")
    trace = prof.recorder.trace_snapshot()  # type: ignore[union-attr]
    document = prof._document("running", False)  # noqa: SLF001 - the snapshot's own errors
    prof.close()
    assert trace["recorded"] == 30 and len(trace["spans"]) == 30 and trace["links_recorded"] == 20
    assert any("live file lost" in e for e in document["errors"]), document["errors"]


def test_a_cut_or_damaged_trace_block_is_a_problem_never_an_error(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="d", enabled=True, trace=True, trace_capacity=300, snapshot_interval_s=None)
    for i in range(400):
        with prof.phase(f"p{i % 5}"):
            prof.wait_on("q", i)
    assert prof.live_path is not None
    data = prof.live_path.read_bytes()
    prof.close()
    whole = livefile.read_live(prof.live_path, data=data)
    assert whole.trace is not None and not whole.problems
    assert (whole.trace["recorded"], len(whole.trace["spans"])) == (400, 300)
    start, size = livetrace.find_block(data, 4096, 64)  # type: ignore[misc]
    cut = livefile.read_live(prof.live_path, data=data[: start + size // 2])
    assert cut.trace is None and any("trace block is cut short" in p for p in cut.problems)
    rng = random.Random(27)
    for _ in range(300):
        damaged = bytearray(data)
        at = start + rng.choice([rng.randrange(256), rng.randrange(size)])
        damaged[at : at + 8] = rng.randbytes(8)
        read = livefile.read_live(prof.live_path, data=bytes(damaged))  # never raises
        if read.trace is not None:
            assert len(read.trace["spans"]) <= read.trace["capacity"]
            assert read.trace["dropped"] == read.trace["recorded"] - len(read.trace["spans"])


def test_asyncio_tasks_show_their_own_open_entries_once(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="a", enabled=True, trace=True, snapshot_interval_s=None)
    assert prof.live_path is not None
    seen: dict[str, object] = {}

    async def task(name: str, ready: asyncio.Event, go: asyncio.Event) -> None:
        with prof.phase(name):
            ready.set()
            await go.wait()

    async def main() -> None:
        with prof.phase("outer"):
            go = asyncio.Event()
            readies = [asyncio.Event(), asyncio.Event()]
            tasks = [asyncio.create_task(task(f"t{i}", readies[i], go)) for i in range(2)]
            for ready in readies:
                await ready.wait()
            seen["live"] = livefile.read_live(prof.live_path).trace  # type: ignore[arg-type]
            seen["snapshot"] = prof.recorder.trace_snapshot()  # type: ignore[union-attr]
            seen["paths"] = {p: prof.recorder.path_of(p) for p in range(2, 6)}  # type: ignore[union-attr]
            go.set()
            await asyncio.gather(*tasks)

    asyncio.run(main())
    prof.close()
    paths = seen["paths"]
    for trace in (seen["live"], seen["snapshot"]):
        opened = sorted(paths[o[1]] for o in trace["open"])  # type: ignore[index]
        assert opened == ["outer", "outer/t0", "outer/t1"], opened


def test_entries_open_when_tracing_starts_close_without_a_span() -> None:
    from lineprofiler.accounting import _phases

    recorder = _phases.Recorder(measure_cpu=False)
    outer = recorder.phase("outer")
    outer.__enter__()
    recorder.trace_enable(10, 0)
    with recorder.phase("inner"):
        opened = recorder.trace_snapshot()["open"]  # type: ignore[index]
    outer.__exit__(None, None, None)
    trace = recorder.trace_snapshot()
    assert trace is not None
    assert [recorder.path_of(s[2]) for s in trace["spans"]] == ["outer/inner"]
    assert [recorder.path_of(o[1]) for o in opened] == ["outer/inner"]  # outer was never traced
    assert trace["recorded"] == 1 and trace["links_capacity"] == 0


def test_a_wrapped_ring_of_nested_spans_reads_back_as_the_recorders_own_rows(tmp_path: Path) -> None:
    import threading

    from lineprofiler.accounting import Profiler

    prof = Profiler(tmp_path, role="w", enabled=True, trace=True, trace_capacity=1000, snapshot_interval_s=None)

    def nested(n: int) -> None:
        for i in range(n):
            with prof.phase("outer"):
                with prof.phase("mid"):
                    with prof.phase("inner" if i % 3 else "other"):
                        pass

    thread = threading.Thread(target=nested, args=(400,))
    thread.start()
    nested(700)
    thread.join()
    assert prof.live_path is not None and prof.recorder is not None
    data = prof.live_path.read_bytes()
    rows = prof.recorder.trace_snapshot()["spans"]  # type: ignore[index]
    prof.close()
    read = livefile.read_live(prof.live_path, data=data)
    assert read.trace is not None and not read.problems
    assert (read.trace["recorded"], len(read.trace["spans"])) == (3300, 1000)
    assert list(read.trace["spans"]) == rows  # the ring's order, wrapped, then sorted by start as the C does
