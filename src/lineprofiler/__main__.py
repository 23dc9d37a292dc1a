"""``python -m lineprofiler``: the same command line as the ``lineprofiler`` console script."""

import sys

from lineprofiler.cli import main

if __name__ == "__main__":
    sys.exit(main())
