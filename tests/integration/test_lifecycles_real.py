"""Request lifecycles across real processes: a client stamps ``trace_begin`` and ``trace_end``, a
server in another spawned process stamps the checkpoints in between, and ``lineprofiler trace``
splits each request into the intervals the server's known sleeps make."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.accounting._links import lifecycle_admits
from lineprofiler.cli import main

pytestmark = pytest.mark.slow

REQUESTS = 12
WORKLOAD = textwrap.dedent(
    """
    import sys, time
    import multiprocessing as mp
    from lineprofiler import accounting


    def server(run_dir, requests, replies):
        profiler = accounting.Profiler(run_dir, role="server", trace=True, install=True)
        while True:
            key = requests.get()
            if key is None:
                break
            accounting.trace_mark("infer", key, "admitted")
            time.sleep(0.030)  # the batch window
            accounting.trace_mark("infer", key, "compute_start")
            time.sleep(0.020)  # the model
            accounting.trace_mark("infer", key, "compute_end")
            accounting.trace_mark("infer", key, "sampled", sample=0.5)
            replies.put(key)
        profiler.close()


    if __name__ == "__main__":
        run_dir, n = sys.argv[1], int(sys.argv[2])
        ctx = mp.get_context("spawn")
        requests, replies = ctx.Queue(), ctx.Queue()
        process = ctx.Process(target=server, args=(run_dir, requests, replies))
        process.start()
        client = accounting.Profiler(run_dir, role="client", trace=True)
        for i in range(n):
            client.trace_begin("infer", f"req-{i}")
            requests.put(f"req-{i}")
            if i < n - 1:  # the last reply is never awaited: its lifecycle has no end
                replies.get()
                client.trace_end("infer", f"req-{i}")
        client.trace_end("other", "stray")  # an end with no begin
        requests.put(None)
        process.join(60)
        client.close()
    """
)


def test_a_request_is_split_between_the_checkpoints_its_processes_stamped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "serve.py"
    script.write_text(WORKLOAD)
    run_dir = tmp_path / "run"
    env = dict(os.environ, LINEPROFILER_RUN_ID="lifecycles")
    subprocess.run([sys.executable, str(script), str(run_dir), str(REQUESTS)], check=True, timeout=120, env=env)
    assert main(["trace", str(run_dir), "--json"]) == 0
    story = json.loads(capsys.readouterr().out)["story"]
    channels = {c["channel"]: c for c in story["lifecycles"]}
    assert set(channels) == {"infer", "other"}
    other = channels["other"]
    assert (other["requests"], other["incomplete"], other["segments"]) == (0, 1, [])
    infer = channels["infer"]
    assert (infer["requests"], infer["incomplete"], infer["out_of_order"]) == (REQUESTS - 1, 1, 0)
    sampled = sum(lifecycle_admits(f"req-{i}", 0.5) for i in range(REQUESTS - 1))
    assert 0 < sampled < REQUESTS - 1  # the sample keeps some keys and drops others
    segments = {s["name"]: s for s in infer["segments"]}
    assert segments["admitted -> compute_start"]["count"] == REQUESTS - 1
    window, model = segments["admitted -> compute_start"], segments["compute_start -> compute_end"]
    assert 0.030e9 <= window["mean_ns"] < 0.060e9 and 0.020e9 <= model["mean_ns"] < 0.045e9
    assert model["max_ns"] >= model["p95_ns"] >= model["p50_ns"] >= 0.020e9
    # The sampled mark is kept or dropped by key, the same in every process.
    kept = segments.get("compute_end -> sampled", {"count": 0})["count"]
    dropped = segments.get("compute_end -> end", {"count": 0})["count"]
    assert (kept, dropped) == (sampled, REQUESTS - 1 - sampled)
    # The segments of a request add up to it: their sum is the channel's total.
    assert sum(s["total_ns"] for s in infer["segments"]) == infer["total_ns"]
    key, ns, begun, ended = infer["slowest"][0]
    roles = {p["index"]: p["role"] for p in story["processes"]}
    assert key.startswith("req-") and ns == infer["max_ns"] and roles[begun] == roles[ended] == "client"
    assert main(["trace", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "Request lifecycles" in text and "admitted -> compute_start" in text
