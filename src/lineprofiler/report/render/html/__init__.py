"""The report as one self-contained HTML file: ``report --html`` and ``compare --html``; the
report's page is put together by :func:`..blocks.render_html` from the sections of :mod:`.page`.

No network, no fonts, no scripts from elsewhere: the charts are SVG written by :mod:`.svg`, the
style and the small script (tips, sorting, toggles) are inlined from :mod:`.markup`, and the
page reads the same with scripts off.
"""

from __future__ import annotations

from .compare import render_compare_html

__all__ = ["render_compare_html"]
