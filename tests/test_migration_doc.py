"""docs/migrating-from-0.10.md counts its own rows: the Count section must say what the tables say.

Each table row names one thing of 0.10.0 and its status (same, works, accepted, different, not
yet; "new" rows are 0.11.0's alone). When a row changes status the totals must change with it,
or the document claims a compatibility it does not have.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "migrating-from-0.10.md"
STATUSES = ("same", "works", "accepted", "different", "not yet")
# The Count table's part names, in the order of the document's sections.
PARTS = (
    "the package",
    "`LineProfiler`",
    "`FunctionStats`, `LineStats`",
    "ambient profiling and configuration",
    "`Profiler(...)` arguments",
    "`Profiler` methods and attributes",
    "module-level functions of `lineprofiler.accounting`",
    "classes of `lineprofiler.accounting`",
    "environment variables",
    "run directories",
    "the command line",
)


def _cells(line: str) -> list[str]:
    # A cell may hold an escaped pipe (`a \| b`); split on the others.
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _status(cells: list[str]) -> str | None:
    for cell in cells[1:]:
        word = cell.split(" (")[0].strip()
        if word in STATUSES or word == "new":
            return word
    return None


def _sections(text: str) -> list[Counter[str]]:
    """Per section with rows (before "## Count"), how many rows of each status."""
    body = text.split("\n## Count", 1)[0]
    counts: list[Counter[str]] = []
    current: Counter[str] | None = None
    for line in body.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            current = None
            continue
        if not line.startswith("|") or set(line) <= set("|- :"):
            continue
        cells = _cells(line)
        if cells[0] in ("0.10.0", "name"):
            continue  # a header row
        status = _status(cells)
        assert status is not None, f"a row without a status: {line}"
        if status == "new":
            continue
        if current is None:
            current = Counter()
            counts.append(current)
        current[status] += 1
    return counts


def test_the_count_section_is_what_the_rows_say():
    text = DOC.read_text(encoding="utf-8")
    sections = _sections(text)
    assert len(sections) == len(PARTS)
    table = {}
    for line in text.split("\n## Count", 1)[1].splitlines():
        cells = _cells(line) if line.startswith("|") else []
        if cells and cells[0] in PARTS:
            table[cells[0]] = [int(c) for c in cells[1:]]
    for part, counted in zip(PARTS, sections, strict=True):
        expected = [sum(counted.values()), *(counted[s] for s in STATUSES)]
        assert table[part] == expected, part
    total = sum(sections, Counter())
    sentence = (
        f"{sum(total.values())} entries above name something of 0.10.0",
        f"**{total['same']} the\nsame**, **{total['works']} work**, **{total['accepted']} accepted**, "
        f"**{total['different']} different**, **{total['not yet']} not yet**",
    )
    flat = " ".join(text.split("\n## Count", 1)[1].split())
    assert " ".join(sentence[0].split()) in flat
    assert " ".join(sentence[1].split()) in flat


def _rewrite() -> None:
    """``python tests/test_migration_doc.py``: rewrite the Count section from the rows."""
    text = DOC.read_text(encoding="utf-8")
    head, tail = text.split("\n## Count", 1)
    sections = _sections(text)
    total = sum(sections, Counter())
    rows = [
        f"| {part} | {sum(c.values())} | " + " | ".join(str(c[s]) for s in STATUSES) + " |"
        for part, c in zip(PARTS, sections, strict=True)
    ]
    lines = tail.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| ") and _cells(line)[0] in PARTS)
    last = max(i for i, line in enumerate(lines) if line.startswith("| ") and _cells(line)[0] in PARTS)
    lines[first : last + 1] = rows
    tail = "\n".join(lines)
    tail = re.sub(r"\d+ entries above name", f"{sum(total.values())} entries above name", tail)
    for status, label in (
        ("same", "the\nsame"),
        ("works", "work"),
        ("accepted", "accepted"),
        ("different", "different"),
        ("not yet", "not yet"),
    ):
        pattern = r"\*\*\d+ " + label.replace("\n", r"\s+") + r"\*\*"
        tail = re.sub(pattern, f"**{total[status]} {label}**", tail)
    DOC.write_text(
        head + "\n## Count" + tail + ("\n" if text.endswith("\n") and not tail.endswith("\n") else ""), encoding="utf-8"
    )


if __name__ == "__main__":
    _rewrite()
