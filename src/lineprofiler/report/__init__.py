"""The report: merge the worker files of a run, compute the report's model, write it out.

Three floors over a ground of :mod:`.model` (the report's types), :mod:`.format` (numbers for
people) and :mod:`.wording` (sentences and names said once): :mod:`.read` (files in, the run's
types out), :mod:`.compute` (the blocks' and the story's numbers: no I/O, no text) and
:mod:`.render` (text, JSON, HTML, Perfetto, top, compare: the one way out). A floor imports only
the ground and the floors below it.
"""
