"""lineprofiler: hits and time per line of your project, and an always-on accounting layer.

The line layer lives in :mod:`lineprofiler.lines`; the accounting layer in
:mod:`lineprofiler.accounting`.
"""

__version__ = "0.1.0"
