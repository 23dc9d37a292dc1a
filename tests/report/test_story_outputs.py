"""The story in Perfetto and in a real browser: counts equal the documents', the bound says what
it left out, and the lanes draw, zoom, pan and show figures on hover."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from lineprofiler.cli import main
from lineprofiler.report.read.merge import load_run
from lineprofiler.report.render.perfetto import trace_json
from lineprofiler.runfiles import tracesection, workerfile

from . import chromium
from .test_story_path import slow_actor_run, two_host_run


def _events(text):
    document = json.loads(text)
    return document, Counter((e["ph"], e.get("cat")) for e in document["traceEvents"])


def test_perfetto_has_a_slice_per_span_and_a_flow_per_matched_link(tmp_path):
    slow_actor_run(tmp_path)
    files = workerfile.find_worker_files(tmp_path)
    spans = sum(len(tracesection.span_rows(workerfile.read_worker_file(p)["trace"], p)) for p in files)
    waits = sum(sum(1 for link in workerfile.read_worker_file(p)["trace"]["links"] if link[0] == "wait") for p in files)
    document, counts = _events(trace_json(load_run(tmp_path)))
    assert counts[("X", "span")] == spans == 100
    assert counts[("s", "link")] == counts[("f", "link")] == waits == 40
    assert document["otherData"]["story"]["spans_left_out"] == 0
    # Every flow ends no earlier than it starts, on the run's one timeline.
    flows = {}
    for event in document["traceEvents"]:
        if event.get("cat") == "link":
            flows.setdefault(event["id"], {})[event["ph"]] = event["ts"]
    assert all(f["f"] >= f["s"] for f in flows.values())


def test_perfetto_across_hosts_draws_no_flow_backwards(tmp_path):
    two_host_run(tmp_path, wall_error=3_000_000)
    document, counts = _events(trace_json(load_run(tmp_path)))
    flows = {}
    for event in document["traceEvents"]:
        if event.get("cat") == "link":
            flows.setdefault(event["id"], {})[event["ph"]] = event["ts"]
            assert "clocks disagree" not in event["name"]
    assert flows and all(f["f"] >= f["s"] for f in flows.values())


def test_perfetto_bounds_the_spans_and_says_what_it_left_out(tmp_path):
    slow_actor_run(tmp_path)
    document, counts = _events(trace_json(load_run(tmp_path), max_spans=30))
    assert counts[("X", "span")] == 30
    story = document["otherData"]["story"]
    assert story["spans_written"] == 30 and story["spans_left_out"] == 70
    assert "70 more left out here: each process keeps its newest 10" in story["note"]


def test_export_writes_the_file_streamed(tmp_path, capsys):
    slow_actor_run(tmp_path / "run")
    out = tmp_path / "trace.json"
    assert main(["export", str(tmp_path / "run"), "--perfetto", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert _events(out.read_text())[1][("X", "span")] == 100
    assert main(["export", str(tmp_path / "run"), "--perfetto", str(tmp_path)]) == 2


EXECUTABLE = chromium.find_chromium()


@pytest.mark.skipif(EXECUTABLE is None, reason="no Chromium on this machine (apt-get install chromium)")
def test_the_lanes_in_chromium(tmp_path):
    _, slow, _ = slow_actor_run(tmp_path / "run")
    page = tmp_path / "trace.html"
    assert main(["trace", str(tmp_path / "run"), "--html", str(page), "-q"]) == 0
    report_page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "--html", str(report_page)]) == 0
    assert 'id="story-lanes"' in report_page.read_text()
    with chromium.Browser(EXECUTABLE, width=1280, height=900) as browser:
        browser.open(page.as_uri())
        drawn = browser.evaluate(
            "(() => { const seen = s => [...document.querySelectorAll(s)].filter(e => {"
            " const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; }).length;"
            " return {spans: seen('#story-lanes rect.span'), crit: seen('#story-lanes rect.crit'),"
            " arrows: document.querySelectorAll('#story-lanes line.arrow').length,"
            " onPath: document.querySelectorAll('#story-lanes line.arrow.on-path').length,"
            " first: document.querySelector('ol.findings li').textContent}; })()"
        )
        assert drawn["spans"] == 100 and drawn["crit"] >= 2
        assert drawn["arrows"] == 40 and drawn["onPath"] == 1
        assert f"pid {slow.pid}" in drawn["first"]
        # Hover over the critical path's bar of the slow actor: its figures.
        box = browser.evaluate(
            "(() => { const r = [...document.querySelectorAll('#story-lanes rect.crit')]"
            ".map(e => e.getBoundingClientRect()).sort((a, b) => b.width - a.width)[0];"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        browser.mouse("mouseMoved", box[0], box[1])
        tip = browser.evaluate("[getComputedStyle(tip).display, tip.textContent]")
        assert tip[0] == "block" and f"pid {slow.pid}" in tip[1] and "99.7% of the run" in tip[1]
        # A legend of the phases' colours and the marks, and a time axis from the run's start.
        legend = browser.evaluate("[...document.querySelectorAll('.story-legend li')].map(li => li.textContent)")
        assert {"produce", "step", "critical path", "link: signal to wait"} <= set(legend)
        ticks = "[...document.querySelectorAll('#story-lanes text.tick[data-at]')].map(t => t.textContent)"
        axis = browser.evaluate(ticks)
        assert len(axis) == 6 and axis[0] == "+0ns"
        assert f"traced length {axis[-1][1:]}." in page.read_text()  # the axis ends at the run's end
        # The wheel zooms around the pointer; a drag pans; a double click resets.
        width = "document.querySelector('#story-lanes rect.span').getBoundingClientRect().width"
        before = browser.evaluate(width)
        browser.call("Input.dispatchMouseEvent", type="mouseWheel", x=box[0], y=box[1], deltaX=0, deltaY=-100)
        browser.call("Input.dispatchMouseEvent", type="mouseWheel", x=box[0], y=box[1], deltaX=0, deltaY=-100)
        assert browser.evaluate("+document.getElementById('story-lanes').dataset.zoom") == pytest.approx(1.5625)
        assert browser.evaluate(width) == pytest.approx(before * 1.5625, rel=0.01)
        zoomed_axis = browser.evaluate(ticks)  # the labels follow the zoom: the plot shows less time
        assert zoomed_axis != axis and len(zoomed_axis) == 6
        transform = "document.querySelector('#story-lanes g.zoom').getAttribute('transform')"
        zoomed = browser.evaluate(transform)
        browser.mouse("mousePressed", box[0], box[1], "left")
        browser.mouse("mouseMoved", box[0] - 200, box[1], "left")
        browser.mouse("mouseReleased", box[0] - 200, box[1], "left")
        assert browser.evaluate(transform) != zoomed
        browser.call("Input.dispatchMouseEvent", type="mousePressed", x=box[0], y=box[1], button="left", clickCount=2)
        browser.call("Input.dispatchMouseEvent", type="mouseReleased", x=box[0], y=box[1], button="left", clickCount=2)
        assert browser.evaluate("+document.getElementById('story-lanes').dataset.zoom") == 1
        assert browser.evaluate(ticks) == axis  # the script labels as the page does
        assert browser.errors() == []
