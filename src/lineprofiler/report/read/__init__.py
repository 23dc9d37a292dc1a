"""The report's first floor: a run's files in, its types out (:class:`.run.Run`, its workers,
roles, attempts and caveats). Imports the run-files layer and the report's ground only."""
