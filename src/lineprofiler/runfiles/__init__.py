"""What a run directory holds: its layout, the worker file, the sample file and the histogram.

Every file kind has one module here that builds, validates and reads it. Nothing in this package
imports the profilers or a C module, so the report runs where only the files are.
"""
