"""What the header and the role blocks say beside the figures: the code the run ran (its source
commit), and where a role's work first divides (0.10.0's breakdown, with its ``Other`` share)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Split:
    """0.10.0's breakdown: below the phases that have one child each, the first phase whose
    time divides among children, as shares of its wall time; ``other`` is what it held in none
    of them (its self time)."""

    parent: str
    #: ``(child name, share of the parent's wall time)``, most first.
    children: list[tuple[str, float]]
    other: float


@dataclass
class Source:
    commit: str
    #: Tracked files that differed from the commit (0: clean); None: not known.
    dirty_files: int | None
    #: Tells two dirty trees of one commit apart; None when clean or not known.
    diff_sha: str | None
    roles: list[str]
