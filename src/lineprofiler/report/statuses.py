"""The statuses the report tells apart: a worker's (from its file) and an attempt's (from merge).

Their own module, importing nothing, so that every floor of the report and the integrations can
spell them the same way without importing what reads the files.
"""

from __future__ import annotations

#: The statuses of a worker that exited (normally, or flushing on a signal): its file is final.
FINAL_STATUSES = ("exited", "signalled")

# What an attempt is to the one the report shows (see :mod:`.attempts`): the newest, another job
# overlapping it in time, one that ended before it began, or one a launcher restarted since.
NEWEST = "newest"
CONCURRENT = "concurrent"
SUPERSEDED = "superseded"
RESTARTED = "restarted"
