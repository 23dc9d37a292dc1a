"""The story's headline never exceeds the run: after the span ring wraps, the links ring still
holds signals older than the oldest kept span, and the critical path must not walk back along
them past what the rings kept (it once printed "Critical path 108.1ms of 7.0ms", shares of 730%,
and failed ``--fail-over``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lp_report_builders import MS, US

from lineprofiler.cli import main
from lineprofiler.report.compute.story.assemble import story
from lineprofiler.report.read.merge import load_run

from .test_story_docs import Host, TracedWorker, write_all

#: Two threads of one process hand a token back and forth through queues, each hand-over a
#: signal and a wait_on: 6,000 spans and links into a ring of 200 spans (links keep 50,000).
PING_PONG = textwrap.dedent(
    """
    import queue, sys, threading
    from lineprofiler.accounting import Profiler
    prof = Profiler(sys.argv[1], role="pingpong", trace=True, trace_capacity=200, snapshot_interval_s=None)
    ab, ba = queue.Queue(), queue.Queue()
    def side(name, out, inbox, send, receive):
        for i in range(1500):
            with prof.phase(name + "_work"):
                sum(range(200))
                prof.signal(send, i)
                out.put(i)
            with prof.phase(name + "_wait"):
                inbox.get()
                prof.wait_on(receive, i)
    other = threading.Thread(target=side, args=("b", ba, ab, "ba", "ab"))
    other.start()
    side("a", ab, ba, "ab", "ba")
    other.join()
    prof.close()
    """
)


def _ns(text: str) -> float:
    """``2.3ms`` -> 2300000.0: a duration as the text report prints it."""
    for unit, ns in (("us", US), ("ms", MS), ("ns", 1), ("s", 1_000_000_000)):
        if text.endswith(unit):
            return float(text.removesuffix(unit)) * ns
    raise ValueError(text)


def _assert_within_the_run(document: dict) -> None:  # type: ignore[type-arg]
    result = document["story"]
    path = result["path"]
    assert path is not None
    assert result["run_start_ns"] <= path["start_ns"] <= path["end_ns"] <= result["run_end_ns"]
    assert sum(share["duration_ns"] for share in path["shares"]) <= path["end_ns"] - path["start_ns"]
    assert all(0 <= share["fraction"] <= 1 for share in path["shares"]), path["shares"]
    for finding in result["findings"]:
        assert finding["cost_fraction"] is None or finding["cost_fraction"] <= 1, finding


def test_a_wrapped_ring_gives_a_critical_path_within_the_run_and_says_what_it_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = dict(os.environ, LINEPROFILER_RUN_ID="wrapped")
    subprocess.run([sys.executable, "-c", PING_PONG, str(tmp_path)], check=True, timeout=120, env=env)
    assert main(["trace", str(tmp_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    _assert_within_the_run(document)
    result = document["story"]
    assert result["kept_line"] == "200 of 6,000 spans kept (the oldest dropped)"
    caveats = document["caveats"]
    assert any("200 of 6,000 spans kept" in line for line in caveats), caveats
    # Where the walk met a signal older than the oldest kept span (nearly always here), it says so.
    cut = any("its ring dropped the older spans" in line for line in caveats)
    assert cut == (result["path"]["unknown_before"] is not None), caveats
    # The text headline, and --fail-over: no finding can cost more than the whole run.
    assert main(["trace", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("Critical path"))
    shown, _, run = lines[at].removeprefix("Critical path ").partition(" of ")
    assert _ns(shown) <= _ns(run.split(",")[0]), lines[at]
    for row in lines[at + 1 :]:
        if not row.startswith("  "):
            break
        assert float(row.split("%")[0]) <= 100, row
    assert main(["trace", str(tmp_path), "--fail-over", "100", "-q"]) == 0


def _ping_pong_run(run_dir: Path, rng: random.Random) -> None:
    """Two processes of one host hand work back and forth (random lengths, random wake-ups);
    each ring then loses a random number of its oldest spans, its links all kept."""
    node = Host("node07")
    a, b = TracedWorker("a", node, pid=8001), TracedWorker("b", node, pid=8002)
    rounds = rng.randrange(2, 40)
    for n in range(rounds):
        for me, other, channel in ((a, b, "ab"), (b, a, "ba")):
            other.wait_until(me.now)
            with me.phase("work"):
                me.work(rng.randrange(1, 50) * US)
                me.signal(channel, n)
            with other.phase("wait"):
                other.wait_until(me.now + rng.randrange(0, 30) * US)
                other.wait_on(channel, n)
            if rng.random() < 0.2:  # a thread that goes its own way a while
                with other.phase("aside"):
                    other.work(rng.randrange(1, 3) * MS)
    for worker in (a, b):
        worker.drop_oldest(rng.randrange(0, len(worker.spans)))
    write_all(run_dir, [a, b])


@pytest.mark.parametrize("seed", range(40))
def test_the_path_of_any_dropped_prefix_lies_within_the_run(tmp_path: Path, seed: int) -> None:
    _ping_pong_run(tmp_path, random.Random(seed))
    result, _ = story(load_run(tmp_path))
    assert result is not None
    path = result.path
    if path is None:
        return
    assert result.run_start_ns <= path.start_ns <= path.end_ns <= result.run_end_ns
    assert path.duration_ns <= result.duration_ns
    assert all(0 <= share.fraction <= 1 for share in path.shares), path.shares
    assert sum(share.fraction for share in path.shares) <= 1 + 1e-9
    assert all(f.cost_fraction is None or f.cost_fraction <= 1 for f in result.findings)


def test_skew_over_rings_that_kept_different_steps_costs_at_most_the_run(tmp_path: Path) -> None:
    """Rank 1 stopped at step 70; rank 0 ran to 100 but its ring kept only the last 50: counted
    from the end, step n of one is step n + 30 of the other, each "30 ms late"."""
    node = Host("node07")
    ranks = [TracedWorker("trainer", node, rank=r, pid=9000 + r) for r in range(2)]
    for step in range(100):
        for rank, worker in enumerate(ranks):
            if rank == 1 and step >= 70:
                continue
            worker.wait_until(step * MS)
            with worker.phase("allreduce", sync=True):
                worker.work(200 * US)
    ranks[0].drop_oldest(50)
    write_all(tmp_path, ranks)
    result, _ = story(load_run(tmp_path))
    assert result is not None and result.skew
    (row,) = result.skew
    assert row.late_ns <= result.duration_ns
    assert all(f.cost_fraction is None or f.cost_fraction <= 1 for f in result.findings), result.findings


def test_a_process_that_only_stamps_lifecycles_does_not_stretch_the_traced_length(tmp_path: Path) -> None:
    """A client that calls trace_begin / trace_end and opens no phase has links and no span: its
    monotonic clock's zero (1,000 s before the run here) is no moment of the run."""
    node = Host("node07")
    server, client = TracedWorker("server", node, pid=8101), TracedWorker("client", node, pid=8102)
    for i in range(5):
        client.links.append(["begin", "req", str(i), client.mono(), 0, -1])
        with server.phase("handle"):
            server.work(10 * MS)
        client.wait_until(server.now)
        client.links.append(["end", "req", str(i), client.mono(), 0, -1])
    write_all(tmp_path, [server, client])
    result, _ = story(load_run(tmp_path))
    assert result is not None and result.path is not None
    assert result.duration_ns == 50 * MS == result.path.duration_ns
    assert result.path.shares[0].fraction == 1.0
