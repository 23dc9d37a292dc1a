"""Human formatting: the units of the seed's report."""

import pytest

from lineprofiler.report import format as fmt

MS = 1_000_000
S = 1_000_000_000


@pytest.mark.parametrize(
    "ns, text",
    [
        (0, "0ns"),
        (850, "850ns"),
        (156_800, "156.8us"),
        (9_400_000, "9.4ms"),
        (18_500_000, "18.5ms"),
        (12_300_000_000, "12.3s"),
        (245 * S, "4m 05s"),
        (27 * 60 * S, "27m"),
        ((2 * 3600 + 31 * 60) * S, "2h 31m"),
        ((4 * 3600 + 12 * 60 + 20) * S, "4h 12m"),
        ((64 * 3600 + 12 * 60) * S, "64h 12m"),
        (None, "n/a"),
        (float("nan"), "n/a"),
    ],
)
def test_duration(ns, text):
    assert fmt.duration(ns) == text


def test_duration_rounds_up_across_units():
    # 999.96 us must not print as "1000.0us".
    assert fmt.duration(999_960) == "1.0ms"
    assert fmt.duration(999_960_000) == "1.0s"
    assert fmt.duration(59_960_000_000) == "1m 00s"


@pytest.mark.parametrize(
    "n, text",
    [(0, "0 B"), (512, "512 B"), (408_700_000, "408.7 MB"), (1_100_000_000, "1.1 GB"), (40_000_000, "40.0 MB")],
)
def test_size(n, text):
    assert fmt.size(n) == text


def test_rates_counts_percent():
    assert fmt.count(4800) == "4,800"
    assert fmt.rate(4800 / 0.7527) == "6,377.0/s"
    assert fmt.per_each(0.7527e9 / 4800) == "156.8us/ea"
    assert fmt.byte_rate(327_600_000) == "327.6 MB/s"
    assert fmt.percent(0.829) == "82.9%"
    assert fmt.percent(0.18, 0) == "18%"
    assert fmt.percent(None) == "n/a"
    assert fmt.ratio(1.2249) == "1.22"


def test_int_ranges_and_clipping():
    assert fmt.int_ranges([3, 0, 1, 2, 7, 9, 10]) == "0-3, 7, 9-10"
    assert fmt.clip_left("iteration/self_play/mcts", 10) == "\u2026play/mcts"
    assert fmt.printable("actor\nrole\x1b") == "actor\\nrole\\x1b"
