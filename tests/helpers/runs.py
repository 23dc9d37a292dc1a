"""Run directories made by real processes, for the tests that read or mangle their files."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from .env import clean_env


def healthy_and_killed(folder: Path, job: str, run_id: str) -> tuple[Path, Path]:
    """A run directory of ``job`` run twice: once as role ``healthy`` (it exits) and once as role
    ``victim`` (it SIGKILLs itself before its first snapshot). ``job`` is a script taking
    ``RUN_DIR ROLE MODE`` (``exit`` or ``kill``). Returns the run directory and the victim's live
    file. The children keep this environment (LD_PRELOAD under ASan), less lineprofiler's
    variables, with ``run_id``."""
    script = folder / "job.py"
    script.write_text(job)
    run_dir = folder / "run"
    env = clean_env(LINEPROFILER_RUN_ID=run_id)
    for role, mode in (("healthy", "exit"), ("victim", "kill")):
        done = subprocess.run(
            [sys.executable, str(script), str(run_dir), role, mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == (-signal.SIGKILL if mode == "kill" else 0), done.stderr
    victims = [p for p in run_dir.glob("workers/*/*.live") if '"victim"' in p.with_suffix(".json").read_text()]
    assert len(victims) == 1, victims
    return run_dir, victims[0]
