"""Human formatting for the report: durations, counts, rates, bytes, percentages.

The one place units are formatted, so every block of the report (text.py's, the resource and
GPU blocks, compare) prints the same way, and the line tables' durations too
(:func:`table_duration`): ``2h 31m``, ``9.4ms``, ``156.8us``, ``4,800``,
``6,377.0/s``, ``408.7 MB``, ``1.1 GB/s``. Bytes use decimal (SI) units, spelled ``B``, ``kB``,
``MB``, ``GB`` ... as disk and network rates are usually quoted. Every function accepts None
and prints ``n/a`` for it: "could not measure" is never printed as zero.

Values come from files, so any in-range value must print readably: durations past
:data:`YEARS_FROM_HOURS` hours print in years, and large counts, rates, percentages and
ratios keep their thousands separators rather than turning into a wall of digits.
"""

from __future__ import annotations

import math

from .._terminal import printable  # noqa: F401  (re-exported: the report calls fmt.printable)

NA = "n/a"
#: The width of a block's rule line, as in the seed's report.
RULE_WIDTH = 62
RULE = "\u2500" * RULE_WIDTH

_NS_PER_S = 1_000_000_000
#: Hours keep counting up to this many (about 1.1 years of summed process time); past it a
#: duration prints in years, which is what a corrupt or absurd value usually is.
YEARS_FROM_HOURS = 10_000
_NS_PER_YEAR = 365.25 * 24 * 3600 * _NS_PER_S


def _finite(value: float | int | None) -> bool:
    if value is None:
        return False
    if isinstance(value, int):
        return abs(value) < 10**300  # beyond a float: no unit makes it readable
    return math.isfinite(value)


def table_duration(ns: float) -> str:
    """A duration for the line tables (``print_stats``, the annotated page), in a unit that keeps
    three or four significant digits: ``850 ns``, ``156.80 us``, ``9.40 ms``, ``12.300 s``. The
    columns of those tables line up on it; the report's blocks use :func:`duration`."""
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.3f} s"


def duration(ns: float | int | None) -> str:
    """A duration in nanoseconds, human-sized.

    ``850ns``, ``156.8us``, ``9.4ms``, ``12.3s``, ``4m 05s`` (under ten minutes), ``27m``,
    ``2h 31m``. Hours keep counting past a day (``64h 12m``): summed process time reads more
    plainly in hours than in days. From :data:`YEARS_FROM_HOURS` hours on, years (of 365.25
    days): ``146.1y`` (2**62 ns).
    """
    if not _finite(ns):
        return NA
    assert ns is not None
    if ns < 0:
        return "-" + duration(-ns)
    if ns < 999.5:
        return f"{ns:.0f}ns"
    if ns < 999_950:
        return f"{ns / 1e3:.1f}us"
    if ns < 999_950_000:
        return f"{ns / 1e6:.1f}ms"
    if ns < 59_950_000_000:
        return f"{ns / 1e9:.1f}s"
    seconds = int(round(ns / _NS_PER_S))
    if seconds < 600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    minutes = int(round(ns / (60 * _NS_PER_S)))
    if minutes < 60:
        return f"{minutes}m"
    if minutes < YEARS_FROM_HOURS * 60:
        return f"{minutes // 60}h {minutes % 60:02d}m"
    return f"{ns / _NS_PER_YEAR:,.1f}y"


def moment(ns: float | int | None) -> str:
    """How far into the run something happened, coarsely: ``13s``, ``4m``, ``2h 05m``
    (whole seconds under a minute, then whole minutes); years as :func:`duration` prints them."""
    if not _finite(ns):
        return NA
    assert ns is not None
    if ns < 0:
        return "-" + moment(-ns)
    seconds = ns / _NS_PER_S
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m"
    if minutes < YEARS_FROM_HOURS * 60:
        return f"{minutes // 60}h {minutes % 60:02d}m"
    return duration(ns)


def count(value: int | None) -> str:
    """An integer with thousands separators: ``4,800``."""
    if value is None:
        return NA
    return f"{int(value):,}"


def rate(per_second: float | None) -> str:
    """Events per second with one decimal: ``6,377.0/s``."""
    if not _finite(per_second):
        return NA
    return f"{per_second:,.1f}/s"


def per_each(ns: float | None) -> str:
    """Time per event: ``156.8us/ea``."""
    if not _finite(ns):
        return NA
    return f"{duration(ns)}/ea"


_BYTE_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")


def size(n_bytes: float | int | None) -> str:
    """Bytes in decimal units: ``0 B``, ``512 B``, ``408.7 MB``, ``1.1 GB``."""
    if not _finite(n_bytes):
        return NA
    assert n_bytes is not None
    if n_bytes < 0:
        return "-" + size(-n_bytes)
    if n_bytes < 1000:
        return f"{n_bytes:.0f} B"
    value = float(n_bytes)
    for unit in _BYTE_UNITS[1:]:
        value /= 1000.0
        if value < 999.95 or unit == _BYTE_UNITS[-1]:
            return f"{value:,.1f} {unit}"
    raise AssertionError("unreachable")


def byte_rate(bytes_per_second: float | None) -> str:
    """A transfer rate: ``327.6 MB/s``."""
    if not _finite(bytes_per_second):
        return NA
    return f"{size(bytes_per_second)}/s"


def byte_change_per_hour(bytes_per_second: float | None) -> str:
    """A growth rate, signed, per hour: ``+300.0 MB/h``, ``-1.2 kB/h``, ``+0 B/h``."""
    if not _finite(bytes_per_second):
        return NA
    assert bytes_per_second is not None
    sign = "-" if bytes_per_second < 0 else "+"
    return f"{sign}{size(abs(bytes_per_second) * 3600)}/h"


def percent(fraction: float | None, digits: int = 1) -> str:
    """A fraction (0..1) as a percentage: ``82.9%``; ``digits=0`` gives ``18%``."""
    if not _finite(fraction):
        return NA
    assert fraction is not None
    return f"{fraction * 100:,.{digits}f}%"


def signed_percent(change: float | None) -> str:
    """A relative change (a fraction) with its sign: ``+12.5%``, ``-8.3%``."""
    if not _finite(change):
        return NA
    assert change is not None
    return f"{change * 100:+,.1f}%"


def points(change: float | None) -> str:
    """A change of a share (a fraction) in percentage points: ``+2.0pp``."""
    if not _finite(change):
        return NA
    assert change is not None
    return f"{change * 100:+,.1f}pp"


def ratio(value: float | None) -> str:
    """A dimensionless ratio with two decimals: ``1.22``."""
    if not _finite(value):
        return NA
    return f"{value:,.2f}"


def int_ranges(values: list[int]) -> str:
    """Sorted distinct integers as compact ranges: ``0-15, 17, 20-21``."""
    ordered = sorted(set(values))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ", ".join(parts)


def clip_left(text: str, width: int) -> str:
    """Keep the end of ``text`` (a phase path's leaf matters most) within ``width`` characters."""
    if len(text) <= width:
        return text
    return "\u2026" + text[-(width - 1):]


