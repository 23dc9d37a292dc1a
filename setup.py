"""The C engine: the four extensions, built by setuptools (everything else is pyproject.toml's).

They are declared here, not in pyproject.toml's static table, because one setting depends on the
environment: with LINEPROFILER_DEV_BUILD=1 (the Makefile's test environment) the extensions get
their test and benchmark seams (``_set_test_clock``, ``_set_io_path``, ``_floor_clock`` and the
like: the C macro LP_DEV_SEAMS); a wheel, an install from the sdist and ``make demo`` have none.

-Werror is added by the Makefile and CI (CFLAGS), not here, so a user's newer compiler cannot
turn a new warning into a failed install.

A wheel's extensions are linked stripped (-s): the debug info more than quadrupled them. A
development build keeps its symbols, and so does any build whose CFLAGS ask for -g or a sanitizer
(make test-asan), whose reports need them.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEV_BUILD = os.environ.get("LINEPROFILER_DEV_BUILD") == "1"
DEV_MACROS = [("LP_DEV_SEAMS", "1")] if DEV_BUILD else []
# Hidden visibility: the files of one extension call each other directly, and only PyInit is exported.
COMPILE_ARGS = ["-std=c11", "-Wall", "-Wextra", "-O2", "-fvisibility=hidden"]
USER_CFLAGS = os.environ.get("CFLAGS", "").split()
KEEPS_SYMBOLS = DEV_BUILD or any(flag.startswith(("-g", "-fsanitize")) for flag in USER_CFLAGS)
LINK_ARGS = [] if KEEPS_SYMBOLS else ["-s"]


def files(folder: str, names: str) -> list[str]:
    """The paths of ``names`` (separated by spaces) in ``folder`` of the package."""
    return [os.path.join("src/lineprofiler", folder, name) for name in names.split()]


def extension(name: str, sources: list[str], depends: list[str], **options: list[str]) -> Extension:
    return Extension(
        name,
        sources=sources,
        depends=files("", "_clock.h _common.h") + depends,
        include_dirs=["src/lineprofiler"],
        define_macros=DEV_MACROS,
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
        **options,
    )


TRACER = extension(
    "lineprofiler.lines._tracer",
    files("lines/_tracer", (
        "module.c hook.c clock.c dev_seams.c tables.c errors.c monitoring.c settrace.c phase_regions.c timed_pause.c"
    )),
    files("lines/_tracer", "tracer.h map.h") + files("", "_procio.h accounting/_phases_capi.h"),
)

# One extension from several files by idea; phases.h is their internal header (it includes the others).
PHASES = extension(
    "lineprofiler.accounting._phases",
    files(
        "accounting/_phases",
        "module.c recorder.c errors.c phase.c stack.c tree.c counters.c histogram.c snapshot.c own_io.c noop.c "
        "live.c live_ranges.c threads.c spans.c spans_snapshot.c auto_trace.c",
    ),
    files("", "_procio.h accounting/_phases_capi.h")
    + files(
        "accounting/_phases",
        "phases.h constants.h compat.h live_file.h tree.h trace.h objects.h functions.h hot_path.h trace_hot_path.h",
    ),
)

SAMPLER = extension(
    "lineprofiler.accounting._sampler",
    files("accounting/_sampler", "module.c sampler_type.c stats.c thread.c proc.c timeline.c sched.c"),
    files("", "_procio.h accounting/_phases_capi.h accounting/_nvml.h accounting/_sampler/sampler.h"),
    libraries=["dl"],
)


SIGNAL_RELAY = extension("lineprofiler._signal_relay", files("_signal_relay", "relay.c"), [])


class BuildExt(build_ext):
    """build_ext that rebuilds everything when the seams or the stripping were switched on or off
    since the last build in this build folder: build_ext reuses an extension newer than its
    sources, whatever macros made it, so a wheel could otherwise ship a development build's seams."""

    def run(self) -> None:
        stamp = Path(self.build_temp) / "lineprofiler-dev-seams"
        wanted = f"seams={int(DEV_BUILD)} stripped={int(not KEEPS_SYMBOLS)}"
        if not stamp.is_file() or stamp.read_text(encoding="ascii") != wanted:
            self.force = True
        super().run()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(wanted, encoding="ascii")


EXTENSIONS = [TRACER, PHASES, SAMPLER, SIGNAL_RELAY]

if __name__ == "__main__":  # setuptools runs it so; benchmarks/gpu_check.py reads EXTENSIONS only
    setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": BuildExt})
