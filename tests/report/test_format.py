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
    [
        (0, "0 B"),
        (512, "512 B"),
        (999, "999 B"),
        (1000, "1.0 kB"),
        (999_960, "1.0 MB"),
        (408_700_000, "408.7 MB"),
        (1_100_000_000, "1.1 GB"),
        (40_000_000, "40.0 MB"),
        (2**63, "9.2 EB"),
        (None, "n/a"),
    ],
)
def test_size(n, text):
    assert fmt.size(n) == text


def test_one_spelling_of_byte_units():
    assert [fmt.size(10**k) for k in range(0, 25, 3)] == [
        "1 B", "1.0 kB", "1.0 MB", "1.0 GB", "1.0 TB", "1.0 PB", "1.0 EB", "1.0 ZB", "1.0 YB",
    ]
    assert fmt.byte_rate(133_100) == "133.1 kB/s"
    assert fmt.byte_change_per_hour(300_000_000 / 3600) == "+300.0 MB/h"
    assert fmt.byte_change_per_hour(-1200 / 3600) == "-1.2 kB/h"
    assert fmt.byte_change_per_hour(0.0) == "+0 B/h"


@pytest.mark.parametrize(
    "ns, text",
    [
        (2**62, "146.1y"),
        (6 * (2**63 - 1), "1,753.6y"),
        ((9_999 * 3600 + 59 * 60) * S, "9999h 59m"),
        (10_000 * 3600 * S, "1.1y"),
        (-(2**62), "-146.1y"),
    ],
)
def test_absurd_durations_print_in_years(ns, text):
    assert fmt.duration(ns) == text


def test_values_beyond_a_float_are_not_measured_not_a_crash():
    assert fmt.duration(10**400) == "n/a"
    assert fmt.size(10**400) == "n/a"
    assert fmt.rate(float("inf")) == "n/a"


def test_moment_into_the_run():
    assert fmt.moment(13_400_000_000) == "13s"
    assert fmt.moment(125 * S) == "2m"
    assert fmt.moment((2 * 3600 + 5 * 60) * S) == "2h 05m"
    assert fmt.moment(2**62) == "146.1y"


def test_rates_counts_percent():
    assert fmt.count(4800) == "4,800"
    assert fmt.rate(4800 / 0.7527) == "6,377.0/s"
    assert fmt.per_each(0.7527e9 / 4800) == "156.8us/ea"
    assert fmt.byte_rate(327_600_000) == "327.6 MB/s"
    assert fmt.percent(0.829) == "82.9%"
    assert fmt.percent(0.18, 0) == "18%"
    assert fmt.percent(None) == "n/a"
    assert fmt.ratio(1.2249) == "1.22"
    assert fmt.ratio(2.0**62) == "4,611,686,018,427,387,904.00"
    assert fmt.percent(12_345.6) == "1,234,560.0%"
    assert fmt.signed_percent(0.125) == "+12.5%" and fmt.signed_percent(-0.0834) == "-8.3%"
    assert fmt.points(0.02) == "+2.0pp" and fmt.points(None) == "n/a"


def test_int_ranges_and_clipping():
    assert fmt.int_ranges([3, 0, 1, 2, 7, 9, 10]) == "0-3, 7, 9-10"
    assert fmt.clip_left("iteration/self_play/mcts", 10) == "\u2026play/mcts"
    assert fmt.printable("actor\nrole\x1b") == "actor\\nrole\\x1b"
