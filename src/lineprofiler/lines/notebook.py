"""The file names IPython gives the code of notebook cells, which lie outside any project folder:
every LineProfiler made under IPython includes them (the ``%lprofile`` magics of
the IPython integration too).

Found from the running shell, without importing IPython: outside IPython there is none.
"""

from __future__ import annotations

import os
import sys

__all__ = ["INPUT_GLOB", "cell_globs"]

#: The file names a terminal IPython gives the code of its cells.
INPUT_GLOB = "<ipython-input-*>"


def cell_globs() -> list[str]:
    """Globs for the file names of cell code in the running IPython; [] outside IPython."""
    ipython_mod = sys.modules.get("IPython")
    if ipython_mod is None:
        return []
    try:
        shell = ipython_mod.get_ipython()
    except Exception:
        return []
    if shell is None:
        return []
    globs = [INPUT_GLOB]
    try:
        # ipykernel's compiler names cells /tmp/ipykernel_<pid>/<hash>.py: find that folder.
        name = shell.compile.get_code_name("", "", 0)
    except Exception:
        name = None
    if isinstance(name, str) and name and not name.startswith("<"):
        globs.append(os.path.join(os.path.dirname(name), "*"))
    return globs
