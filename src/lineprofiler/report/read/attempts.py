"""Which worker files of a run directory are one attempt, which attempt the report merges,
and what it says about the others.

The worker files are grouped by their identity's ``(run_id, attempt)``. A group's id is
*generated* when nobody chose it: its ``run_id_source`` is ``generated`` or
``parent-process`` (a file without a source counts as generated when its id has the shape
those ids have); every other id is *explicit*: ``LINEPROFILER_RUN_ID`` or a launcher's job.

Groups become attempts by time, newest first:

1. **Restarts.** A group with an explicit attempt number below that of another group of the
   same job (a Slurm requeue, a torchrun restart, a higher ``LINEPROFILER_ATTEMPT`` for the
   same ``LINEPROFILER_RUN_ID``) is superseded, whenever it ran.
2. **The newest attempt.** Of the other groups, take the one that started last. If explicit
   groups overlap it in time, the attempt is the latest-started of them; otherwise it is the
   generated groups that overlap it. Every generated group whose lifetime overlaps the
   attempt's is merged into it: processes of one job that could not agree on an id (children
   of an unprofiled parent started by ``subprocess``, files from older versions) are one run,
   and the report says in one line how many processes that merged.
3. **Concurrent jobs.** An explicit group that overlaps the newest attempt but has another id
   is another job: not merged, named in the header, an attempt of its own (with the generated
   groups that overlap it and not the newest).
4. **Superseded attempts.** A group that ended before the newest attempt began is an earlier
   attempt (a rerun into the same directory). The rest are grouped the same way, newest first,
   each named in the header with its process count and time span.

A lifetime runs from a group's earliest start to its newest flush or exit. This module reads
only :class:`~.run.Worker` fields; it never opens a file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .. import format as fmt
from ..wording import CONCURRENT, NEWEST, RESTARTED, SUPERSEDED
from .run import AttemptSpan, AttemptSummary, Worker

#: Sources of ids nobody chose: such groups merge with what overlaps them in time.
GENERATED_SOURCES = frozenset({"generated", "parent-process"})
#: Sources whose attempt number is a launcher's restart count (``1000 x requeue + restart``).
LAUNCHER_SOURCES = frozenset({"slurm", "torchrun", "mpi", "pmix"})
#: The shapes of generated ids, for files that do not say where their id came from.
_GENERATED_SHAPE = re.compile(r"(\d{8}T\d{4}-[0-9a-f]{6}|mp\d+-[0-9a-f]{6})\Z")


@dataclass
class Group(AttemptSpan):
    """The worker files of one ``(run_id, attempt)``."""

    run_id: str
    attempt: int
    workers: list[Worker]

    @property
    def sources(self) -> set[str]:
        return {w.run_id_source for w in self.workers if w.run_id_source}

    @property
    def generated(self) -> bool:
        sources = self.sources
        if sources:
            return bool(sources & GENERATED_SOURCES)
        return _GENERATED_SHAPE.match(self.run_id) is not None

    @property
    def lineage(self) -> str:
        """The job this group is an attempt of: its run id without a launcher's restart suffix."""
        if self.attempt and self.sources & LAUNCHER_SOURCES:
            requeue, restart = divmod(self.attempt, 1000)
            suffix = (f"-r{requeue}" if requeue else "") + (f"-t{restart}" if restart else "")
            if suffix and self.run_id.endswith(suffix):
                return self.run_id[: -len(suffix)]
        return self.run_id

    def overlaps(self, other: Group) -> bool:
        return self.start_ns <= other.end_ns and other.start_ns <= self.end_ns


@dataclass
class Attempt:
    """One attempt: a primary group (which names it) and the generated groups merged into it."""

    primary: Group
    members: list[Group]
    status: str

    @property
    def workers(self) -> list[Worker]:
        return [w for group in self.members for w in group.workers]

    @property
    def names(self) -> list[str]:
        return [g.name for g in self.members]

    def summary(self) -> AttemptSummary:
        workers = self.workers
        return AttemptSummary(
            run_id=self.primary.run_id,
            attempt=self.primary.attempt,
            start_ns=min(w.start_ns for w in workers),
            end_ns=max(w.stop_ns for w in workers),
            files=len(workers),
            roles=dict(Counter(w.role for w in workers)),
            status=self.status,
            generated=self.primary.generated,
            merged=[g.name for g in self.members[1:]],
        )


def group_workers(workers: Iterable[Worker]) -> list[Group]:
    """The workers grouped by ``(run_id, attempt)``."""
    by_key: dict[tuple[str, int], list[Worker]] = {}
    for worker in workers:
        by_key.setdefault((worker.run_id, worker.attempt), []).append(worker)
    return [Group(run_id, attempt, members) for (run_id, attempt), members in by_key.items()]


def _order(group: Group) -> tuple[int, int, str]:
    # Newest by its earliest start; ties by attempt number, then run id.
    return (group.start_ns, group.attempt, group.run_id)


def partition(groups: list[Group]) -> list[Attempt]:
    """Every group in exactly one attempt; the newest attempt first, then the jobs concurrent
    with it, then the superseded attempts newest first, then the restarted ones."""
    best: dict[str, int] = {}
    for group in groups:
        best[group.lineage] = max(best.get(group.lineage, group.attempt), group.attempt)
    restarted = [g for g in groups if g.attempt < best[g.lineage]]
    candidates = [g for g in groups if g.attempt == best[g.lineage]]
    attempts: list[Attempt] = []
    first = True
    while candidates:
        newest = max(candidates, key=_order)
        explicit = [g for g in candidates if not g.generated and g.overlaps(newest)]
        if explicit:
            primary = max(explicit, key=_order)
            merged = [g for g in candidates if g.generated and g.overlaps(primary)]
        else:
            merged = [g for g in candidates if g.overlaps(newest)]
            # The group with the most files names the attempt (a profiled parent's tree),
            # then the earliest.
            primary = max(merged, key=lambda g: (len(g.workers), -g.start_ns, g.run_id))
        others = sorted((g for g in merged if g is not primary), key=_order, reverse=True)
        attempts.append(Attempt(primary, [primary, *others], NEWEST if first else SUPERSEDED))
        taken = {id(g) for g in merged} | {id(primary)}
        for group in sorted(candidates, key=_order, reverse=True):
            if id(group) not in taken and not group.generated and group.overlaps(primary):
                # Another job: its own attempt, with the generated groups that overlap it alone.
                own = [g for g in candidates if id(g) not in taken and g.generated and g.overlaps(group)]
                own.sort(key=_order, reverse=True)
                attempts.append(Attempt(group, [group, *own], CONCURRENT if first else SUPERSEDED))
                taken.update(id(g) for g in (group, *own))
        candidates = [g for g in candidates if id(g) not in taken]
        first = False
    attempts.extend(Attempt(g, [g], RESTARTED) for g in sorted(restarted, key=_order, reverse=True))
    return attempts


def parse_attempt_id(text: str) -> tuple[str, int | None]:
    """``run_id``, ``run_id#N`` or ``run_id #N`` (as the header prints it) -> ``(run_id, N)``;
    N is None when not given."""
    text = text.strip()
    head, sep, tail = text.rpartition("#")
    if sep and tail.strip().isdigit() and head.strip():
        return head.strip(), int(tail.strip())
    return text, None


def select(attempts: list[Attempt], wanted: str) -> Attempt | None:
    """The attempt holding the group ``wanted`` names; None when no group matches.

    A bare run id means its attempt 0, or its only attempt when it has one.
    """
    wanted = wanted.strip()
    exact = [a for a in attempts for g in a.members if g.name == wanted]
    if len(exact) == 1:
        return exact[0]
    run_id, number = parse_attempt_id(wanted)
    matches = [
        (a, g) for a in attempts for g in a.members
        if run_id in (g.run_id, fmt.printable(g.run_id)) and (number is None or g.attempt == number)
    ]
    if len(matches) > 1 and number is None:
        matches = [(a, g) for a, g in matches if g.attempt == 0]
    return matches[0][0] if len(matches) == 1 else None


def known_names(attempts: list[Attempt], limit: int = 6) -> str:
    """The attempts' names for an error line, newest first: ``a, b, c and 4 more``."""
    names = [a.primary.name for a in attempts]
    text = ", ".join(names[:limit])
    if len(names) > limit:
        text += f" and {len(names) - limit} more"
    return text
