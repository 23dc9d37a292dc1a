"""Region names are capped per process, as phase paths are: a name made per request must not grow
the profiler without bound. Past the cap, entries go to the region "(overflow)", are counted,
and every table of regions says how many were not kept."""

import io
import json

import pytest
from lp_helpers import write_module

from lineprofiler import LineProfiler
from lineprofiler.cli import main
from lineprofiler.lines.regions import MAX_REGIONS, OVERFLOW

WORK = """\
def work(n):
    total = 0
    for i in range(n):
        total += i
    return total


def per_request(p, first, count):
    for i in range(first, first + count):
        with p.region(f"request {i}"):
            work(2)
"""


@pytest.fixture
def mod(tmp_path):
    return write_module(tmp_path / "proj", "lp_regions_cap_work", WORK)


def test_two_hundred_thousand_names_keep_the_cap_and_count_the_rest(tmp_path, mod):
    names = 200_000
    prof = LineProfiler(project_folder=tmp_path / "proj")
    with prof:
        mod.per_request(prof, 0, names)
    regions = prof.region_stats()
    assert prof.max_regions == MAX_REGIONS
    assert len(regions) == MAX_REGIONS + 1 and OVERFLOW in regions
    assert "request 0" in regions and f"request {MAX_REGIONS - 1}" in regions
    assert f"request {MAX_REGIONS}" not in regions
    entries = prof.region_entries()
    assert len(entries) == MAX_REGIONS + 1
    assert prof.regions_overflowed == entries[OVERFLOW] == names - MAX_REGIONS
    # What the overflow region holds is real: work's loop ran twice per entry past the cap.
    body = [
        line.hits
        for f in regions[OVERFLOW].values()
        if f.qualname == "work"
        for line in f.lines.values()
        if line.source == "        total += i"
    ]
    assert body == [2 * (names - MAX_REGIONS)]

    out = io.StringIO()
    prof.print_regions(top_n=1, stream=out)
    said = f"cap of {MAX_REGIONS:,} distinct names per process were not kept: their {names - MAX_REGIONS:,} entries"
    assert said in out.getvalue()

    saved = prof.dump(tmp_path / "l.json")
    profile = json.loads(saved.read_text())["profile"]
    assert profile["max_regions"] == MAX_REGIONS and profile["regions_overflowed"] == names - MAX_REGIONS
    loaded = LineProfiler.load(saved)
    assert len(loaded.region_stats()) == MAX_REGIONS + 1
    assert loaded.regions_overflowed == names - MAX_REGIONS


def test_view_says_how_many_were_not_kept(tmp_path, mod, capsys):
    prof = LineProfiler(project_folder=tmp_path / "proj")
    with prof:
        mod.per_request(prof, 0, MAX_REGIONS + 1000)
    saved = prof.dump(tmp_path / "l.json")
    capsys.readouterr()
    assert main(["view", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "were not kept: their 1,000 entries are in the region (overflow)" in out
    assert out.count("Region: ") == MAX_REGIONS + 1


def test_a_merge_of_processes_keeps_the_cap_too(tmp_path, mod):
    """Two processes with 600 names each, none shared: 1,200 names over the merge, the 200
    past the cap added to "(overflow)" and counted with their entries."""
    folder = tmp_path / "files"
    folder.mkdir()
    for first in (0, 600):
        prof = LineProfiler(project_folder=tmp_path / "proj")
        with prof:
            mod.per_request(prof, first, 600)
        prof.dump(folder / f"l_host_{first + 1}_{first:08x}.json")
    loaded = LineProfiler.load(folder)
    regions = loaded.region_stats()
    assert len(regions) == MAX_REGIONS + 1 and OVERFLOW in regions
    assert loaded.merged.regions_folded == 200
    assert loaded.regions_overflowed == loaded.region_entries()[OVERFLOW] == 200


def test_a_region_named_like_the_overflow_is_the_overflow(tmp_path, mod):
    prof = LineProfiler(project_folder=tmp_path / "proj")
    assert prof.region(OVERFLOW) is prof.region(OVERFLOW)
    with prof, prof.region(OVERFLOW):
        mod.work(3)
    assert prof.regions_overflowed == 1
