"""What the user's objects say is kept to a stated length: a worker whose link keys' ``__str__``
raises with a 3 MB message, a hundred times, writes a worker file of kilobytes (not 96 MB) that
its own report reads, showing the error cut; the engine's hook errors are cut the same way."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lineprofiler.accounting import _phases
from lineprofiler.accounting._error_text import MAX_ERROR_CHARS
from lineprofiler.cli import main
from lineprofiler.runfiles import workerfile

MESSAGE_CHARS = 3_000_000
#: An error line: the kept characters, the note of how many more there were, and its prefix.
LINE_BOUND = MAX_ERROR_CHARS + 100


def test_a_worker_whose_keys_raise_with_megabytes_writes_a_small_file_its_report_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from lineprofiler.accounting import Profiler

        class Key:
            def __str__(self):
                raise ValueError("x" * {MESSAGE_CHARS})

        class Unprintable(Exception):
            def __str__(self):
                raise RuntimeError("not even this")

        class WorseKey:
            def __str__(self):
                raise Unprintable()

        prof = Profiler({str(tmp_path)!r}, role="keys", trace=True, snapshot_interval_s=None)
        for i in range(100):
            with prof.phase("step"):
                prof.signal("replies", Key())
                prof.wait_on("replies", Key())
                prof.trace_mark("replies", Key(), "seen", sample=0.5)
        prof.signal("replies", WorseKey())  # an exception whose own __str__ raises: still no raise
        prof.close()
        """
    )
    env = dict(os.environ, LINEPROFILER_RUN_ID="keys")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env=env)
    (path,) = workerfile.find_worker_files(tmp_path)
    assert path.stat().st_size < 200_000
    errors = workerfile.read_worker_file(path)["errors"]
    prefix = "trace link: ValueError: "
    link_errors = [e for e in errors if e.startswith(prefix)]
    assert len(link_errors) == 32 and all(len(e) <= LINE_BOUND for e in errors)
    cut = f"... ({len(prefix) + MESSAGE_CHARS - MAX_ERROR_CHARS} more characters not kept)"
    assert all(e == prefix + "x" * (MAX_ERROR_CHARS - len(prefix)) + cut for e in link_errors)

    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "profiler error(s); first: trace link: ValueError: xxx" in out


def test_the_engine_cuts_a_hooks_megabyte_message() -> None:
    rec = _phases.Recorder(measure_cpu=False)

    def bad() -> None:
        raise RuntimeError("y" * MESSAGE_CHARS)

    rec.set_sync(bad)  # called at the entry and at the exit
    for _ in range(40):
        with rec.phase("p", sync=True):
            pass
    snapshot = rec.snapshot()
    assert snapshot["callback_errors"] == 80 and len(snapshot["errors"]) == 32
    for error in snapshot["errors"]:
        assert len(error) <= LINE_BOUND
        assert error.endswith(f"... ({MESSAGE_CHARS - MAX_ERROR_CHARS} more characters not kept)")


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("the user's __str__ fails too")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (RuntimeError("z" * MESSAGE_CHARS), "RuntimeError: " + "z" * (MAX_ERROR_CHARS - len("RuntimeError: "))),
        (_Unprintable(), "_Unprintable: (its message could not be read)"),
    ],
    ids=["megabytes", "unprintable"],
)
def test_the_gpu_annotators_last_error_is_bounded_and_never_raises(error: Exception, expected: str) -> None:
    from lineprofiler.accounting import gpu

    def push(name: str) -> None:  # an NVTX push that fails as a broken installation's would
        raise error

    annotator = gpu.Annotator(nvtx=False, record_function=False)
    annotator._push, annotator._pop = push, lambda: None
    annotator.enter("step")  # must not raise into the user's code
    annotator.exit("step")
    described = annotator.describe()
    assert described["errors"] == 1
    assert described["last_error"].startswith(expected)
    assert len(described["last_error"]) <= LINE_BOUND
