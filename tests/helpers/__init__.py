"""What many test folders share, imported by name (``from helpers.cli import run_cli``): the
``tests`` folder is on pytest's ``pythonpath``.

- ``cli``: the command line, in this process or in a fresh interpreter;
- ``env``: the one clean environment for a child process;
- ``native``: the C test libraries (the NVML stub and shim, the NVTX tool), compiled once a session;
- ``once``: build something once for every xdist worker of a session.
"""
