"""The report: merge worker files of a run, render text, compare runs."""
