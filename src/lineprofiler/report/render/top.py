"""``lineprofiler top RUN_DIR``: a live terminal view of a running job, from its live files.

Every interval (1 s) each process's live file (``workers/<host>/w_<run>_<pid>_<uuid8>.live``)
is read through :mod:`lineprofiler.runfiles.livefile`; what changed since the previous read gives, per
role, each phase's share of the phase time of the interval, its entries per second and its
mean duration, and each counter's rate. The first frame, having nothing to compare with,
shows the same over each process's life so far (``--once`` prints just that frame).

A process whose live file has not changed for :data:`STALLED_INTERVALS` intervals is marked
``stalled`` (hung, stopped, or killed without a final flush); one whose worker file says it
exited or was signalled is marked so. Only the newest attempt in the run directory is shown.

Plain ANSI on the alternate screen, keys read in cbreak mode (``termios``/``tty``/``select``):
``q`` or Ctrl-C quits and the terminal is restored as it was. This module reads run files
only; it imports nothing of the profilers.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ...errors import InputError
from ...runfiles import layout, livefile, workerfile
from .. import format as fmt
from ..wording import FINAL_STATUSES

#: A process is marked stalled after this many intervals without a change in its live file.
STALLED_INTERVALS = 3
#: Phases and counters shown per role (fewer when the terminal is short).
MAX_PHASES = 12
MAX_COUNTERS = 5
#: Unreadable live files named at the foot of a frame.
MAX_UNREADABLE = 5
_LIVE_RE = re.compile(r"^w_(.+)_(\d+)_([0-9a-f]{8})" + re.escape(layout.LIVE_SUFFIX) + "$")


@dataclass
class _Sample:
    at: float  # time.monotonic() of the read
    phases: dict[str, tuple[int, int, int]]  # path -> (entries, self_ns, wall_ns)
    counters: dict[tuple[str, str], int]  # (phase, name) -> total

    def signature(self) -> tuple[int, int, int, int]:
        return (
            sum(e for e, _, _ in self.phases.values()),
            sum(s for _, s, _ in self.phases.values()),
            sum(self.counters.values()),
            len(self.phases) + len(self.counters),
        )


@dataclass
class _Process:
    live_path: Path
    run_component: str
    pid: int
    identity: dict[str, Any] = field(default_factory=dict)
    created_unix_ns: int = 0
    status: str | None = None  # the worker file's times.status
    elapsed_ns: int | None = None  # the worker file's times.elapsed_ns: its lifetime, once final
    worker_mtime_ns: int = -1
    previous: _Sample | None = None
    current: _Sample | None = None
    last_change: float = 0.0
    problem: str | None = None

    @property
    def role(self) -> str:
        return str(self.identity.get("role") or "?")

    @property
    def attempt(self) -> int:
        value = self.identity.get("attempt")
        return value if isinstance(value, int) else 0

    def label(self) -> str:
        rank = self.identity.get("rank")
        host = self.identity.get("host")
        text = f"pid {self.pid}"
        if isinstance(rank, int):
            text += f" rank {rank}"
        if host:
            text += f" on {fmt.printable(str(host))}"
        return text


def _live_files(run_dir: Path) -> Iterator[tuple[Path, str, int]]:
    root = run_dir / layout.WORKERS_DIR
    try:
        hosts = sorted(root.iterdir())
    except OSError:
        return
    for host_dir in hosts:
        try:
            names = sorted(p.name for p in host_dir.iterdir()) if host_dir.is_dir() else []
        except OSError:
            continue
        for name in names:
            match = _LIVE_RE.match(name)
            if match:
                yield host_dir / name, match.group(1), int(match.group(2))


class Top:
    """The state of a ``top`` view: what each process's live file held at the last two reads."""

    def __init__(self, run_dir: str | os.PathLike[str], interval_s: float = 1.0) -> None:
        self.run_dir = Path(run_dir)
        self.interval_s = interval_s
        self.processes: dict[Path, _Process] = {}
        self.polls = 0
        if not self.run_dir.exists():
            raise InputError(f"top: no such directory: {self.run_dir}")
        if not self.run_dir.is_dir():
            raise InputError(f"top: not a directory: {self.run_dir} (give the run directory that holds workers/)")

    def poll(self) -> None:
        """Read every live file once more (new processes are picked up as they appear)."""
        now = time.monotonic()
        for path, run_component, pid in _live_files(self.run_dir):
            proc = self.processes.get(path)
            if proc is None:
                proc = self.processes[path] = _Process(path, run_component, pid, last_change=now)
            self._read(proc, now)
        self.polls += 1

    def _read(self, proc: _Process, now: float) -> None:
        self._read_worker_file(proc)
        try:
            live = livefile.read_live_retrying(proc.live_path)
        except livefile.LiveFileError as error:
            proc.problem = error.reason
            return
        except Exception as error:  # a reader's bug costs this file, not the view
            if os.environ.get("LINEPROFILER_DEBUG"):
                raise
            proc.problem = f"internal error: {error.__class__.__name__}"
            return
        if not proc.identity:
            proc.identity = dict(live.identity)
        if not live.usable:
            proc.problem = "; ".join(live.problems) or "live file not usable"
            return
        proc.created_unix_ns = live.created_unix_ns
        proc.problem = f"read in part: {'; '.join(live.problems)}" if live.problems else None
        sample = _Sample(
            now,
            {p["path"]: (p["entries"], p["self_ns"], p["wall_ns"]) for p in live.phases},
            {(c["phase"], c["name"]): c["total"] for c in live.counters},
        )
        if proc.current is None or sample.signature() != proc.current.signature():
            proc.last_change = now
        proc.previous, proc.current = proc.current, sample

    def _read_worker_file(self, proc: _Process) -> None:
        worker = proc.live_path.with_suffix(layout.JSON_SUFFIX)
        try:
            mtime = worker.stat().st_mtime_ns
        except OSError:
            return
        if mtime == proc.worker_mtime_ns:
            return
        try:
            document = workerfile.read_worker_file(worker, skip_samples=True)
        except workerfile.WorkerFileError:
            return
        proc.worker_mtime_ns = mtime
        identity = document.get("identity")
        if isinstance(identity, dict):
            proc.identity = identity
        times = document.get("times")
        if isinstance(times, dict) and isinstance(times.get("status"), str):
            proc.status = times["status"]
            elapsed = times.get("elapsed_ns")
            proc.elapsed_ns = elapsed if isinstance(elapsed, int) and not isinstance(elapsed, bool) else None

    def shown(self) -> tuple[list[_Process], int]:
        """The processes of the newest attempt, and how many others there are. The newest is
        told by the creation times of the files that could be read (an unreadable one's time
        is not known)."""
        every = list(self.processes.values())
        if not every:
            return [], 0
        readable = [p for p in every if p.current is not None] or every
        newest = max(readable, key=lambda p: p.created_unix_ns)
        key = (newest.run_component, newest.attempt)
        shown = [p for p in every if (p.run_component, p.attempt) == key]
        return shown, len(every) - len(shown)

    def unreadable(self) -> list[_Process]:
        """The processes whose live file could not be read whole at the last poll, of any attempt."""
        return sorted((p for p in self.processes.values() if p.problem is not None), key=lambda p: p.live_path)

    def state(self, proc: _Process, now: float) -> str:
        """``updating``, ``stalled``, ``exited``, ``signalled`` or ``unreadable``."""
        if proc.status in FINAL_STATUSES:
            return proc.status
        if proc.current is None:
            return "unreadable"
        if self.polls > STALLED_INTERVALS and now - proc.last_change >= STALLED_INTERVALS * self.interval_s:
            return "stalled"
        return "updating"

    def frame(self, width: int = 100, height: int | None = None) -> list[str]:
        """The lines of one frame (no ANSI codes), at most ``height`` of them."""
        now = time.monotonic()
        shown, others = self.shown()
        first = all(p.previous is None for p in shown)
        span = "since start" if first else f"last {self.interval_s:g}s"
        if first and shown and all(p.status in FINAL_STATUSES for p in shown):
            span = "over each process's lifetime (finished)"
        run_id = shown[0].identity.get("run_id", shown[0].run_component) if shown else "?"
        lines = [
            f"lineprofiler top  {time.strftime('%H:%M:%S')}  rates: {span}  (q quits)  "
            f"run {fmt.printable(str(run_id))}  {fmt.printable(str(self.run_dir))}"
        ]
        states: dict[str, int] = {}
        for proc in shown:
            kind = self.state(proc, now)
            states[kind] = states.get(kind, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(states.items()))
        lines.append(
            f"{len(shown)} process{'es' if len(shown) != 1 else ''}: {summary or 'none yet'}"
            + (f"  ({others} of older runs not shown)" if others else "")
        )
        roles: dict[str, list[_Process]] = {}
        for proc in shown:
            roles.setdefault(proc.role, []).append(proc)
        trailer = self._unreadable_lines(self.unreadable())
        budget = None if height is None else max(1, (height - len(lines) - len(trailer)) // max(1, len(roles)))
        for role in sorted(roles):
            block = self._role_block(role, roles[role], now, first)
            lines.append("")
            lines.extend(block if budget is None else block[: max(budget - 1, 2)])
        lines.extend(trailer)
        clipped = [line if len(line) <= width else line[: max(width - 1, 1)] + "\u2026" for line in lines]
        return clipped if height is None else clipped[:height]

    def _unreadable_lines(self, bad: list[_Process]) -> list[str]:
        """Which live files could not be read, and why (the rest of the view goes on without them)."""
        if not bad:
            return []
        lines = ["", f"{len(bad)} live file{'s' if len(bad) != 1 else ''} could not be read (or only in part):"]
        for proc in bad[:MAX_UNREADABLE]:
            try:
                shown = str(proc.live_path.relative_to(self.run_dir))
            except ValueError:
                shown = str(proc.live_path)
            lines.append(f"  {fmt.printable(shown)}: {fmt.printable(proc.problem or '')}")
        if len(bad) > MAX_UNREADABLE:
            lines.append(f"  ... and {len(bad) - MAX_UNREADABLE} more")
        return lines

    def _role_block(self, role: str, procs: list[_Process], now: float, first: bool) -> list[str]:
        deltas: dict[str, list[float]] = {}  # path -> [entries/s, self_ns, wall_ns, entries]
        counters: dict[tuple[str, str], list[float]] = {}  # -> [rate, total]
        seconds = 0.0
        busy_ns = 0.0
        for proc in procs:
            if proc.current is None:
                continue
            if proc.previous is not None:
                base, dt = proc.previous, proc.current.at - proc.previous.at
            elif first:
                base = _Sample(0.0, {}, {})
                dt = self._lifetime_s(proc)
            else:
                continue  # appeared this interval: its rates start with the next frame
            if dt <= 0:
                continue
            seconds += dt
            top_level_ns = 0
            for path, (entries, self_ns, wall_ns) in proc.current.phases.items():
                old = base.phases.get(path, (0, 0, 0))
                row = deltas.setdefault(path, [0.0, 0.0, 0.0, 0.0])
                row[0] += (entries - old[0]) / dt
                row[1] += self_ns - old[1]
                row[2] += wall_ns - old[2]
                row[3] += entries - old[0]
                if "/" not in path:
                    top_level_ns += wall_ns - old[2]
            # As the report counts it: a process's top-level phases, at most its whole time (threads
            # in phases at once), and entries counted when they exit (one that began before the
            # interval counts whole in it).
            busy_ns += min(max(top_level_ns, 0), dt * 1e9)
            for key, total in proc.current.counters.items():
                row = counters.setdefault(key, [0.0, 0.0])
                row[0] += (total - base.counters.get(key, 0)) / dt
                row[1] += total
        phase_ns = sum(max(row[1], 0.0) for row in deltas.values())
        busy = fmt.percent(busy_ns / (seconds * 1e9)) if seconds > 0 else fmt.NA
        plural = "es" if len(procs) != 1 else ""
        lines = [f"role {fmt.printable(role)}  ({len(procs)} process{plural}, in phases {busy})"]
        lines.append(f"  {'phase':<40} {'share':>7} {'entries/s':>12} {'mean':>10}")
        ranked = sorted(deltas.items(), key=lambda item: (-item[1][1], -item[1][0], item[0]))
        active = [(path, row) for path, row in ranked if row[3] > 0]
        for path, row in active[:MAX_PHASES]:
            share = fmt.percent(max(row[1], 0.0) / phase_ns) if phase_ns > 0 else fmt.NA
            mean = fmt.duration(row[2] / row[3]) if row[3] > 0 else fmt.NA
            lines.append(f"  {fmt.clip_left(fmt.printable(path), 40):<40} {share:>7} {fmt.rate(row[0]):>12} {mean:>10}")
        if not active:
            lines.append("  (no phase exited " + ("yet)" if first else "in this interval)"))
        elif len(active) > MAX_PHASES:
            lines.append(f"  ... {len(active) - MAX_PHASES} more phases")
        top_counters = sorted(counters.items(), key=lambda item: (-abs(item[1][0]), item[0]))[:MAX_COUNTERS]
        for (phase, name), (per_s, so_far) in top_counters:
            where = f"{fmt.printable(name)}" + (f" ({fmt.printable(phase)})" if phase else "")
            lines.append(f"  counter {where}: {fmt.rate(per_s)}, total {fmt.count(int(so_far))}")
        lines.extend(self._process_lines(procs, now))
        return lines

    @staticmethod
    def _lifetime_s(proc: _Process) -> float:
        """How long a process has lived, for the first frame's rates: a finished one's whole
        lifetime from its worker file (as the report counts it), not the time since it started
        up to now, which, read a day later, makes every rate and share of it near nothing."""
        if proc.status in FINAL_STATUSES and proc.elapsed_ns is not None and proc.elapsed_ns > 0:
            return proc.elapsed_ns / 1e9
        return max(time.time() - proc.created_unix_ns / 1e9, 1e-3) if proc.created_unix_ns else 0.0

    def _process_lines(self, procs: list[_Process], now: float) -> list[str]:
        by_state: dict[str, list[str]] = {}
        for proc in sorted(procs, key=lambda p: p.pid):
            kind = self.state(proc, now)
            text = proc.label()
            if kind == "stalled":
                text += f" (no change for {fmt.moment((now - proc.last_change) * 1e9)})"
            elif kind == "unreadable" and proc.problem:
                text += " (its live file could not be read: see below)"
            by_state.setdefault(kind, []).append(text)
        lines = []
        for kind in ("updating", "stalled", "unreadable", "signalled", "exited"):
            names = by_state.get(kind, [])
            if not names:
                continue
            shown = "; ".join(names[:6]) + (f"; and {len(names) - 6} more" if len(names) > 6 else "")
            lines.append(f"  {kind.upper() if kind == 'stalled' else kind}: {shown}")
        return lines


# --------------------------------------------------------------------------- the terminal loop


def _check_input(top: Top) -> None:
    top.poll()
    if not top.processes:
        where = top.run_dir / layout.WORKERS_DIR
        raise InputError(f"top: no live files under {where} (is {top.run_dir} the run directory of a running job?)")


def run_top(run_dir: str, interval_s: float = 1.0, once: bool = False, out: TextIO | None = None) -> int:
    """Show the view until ``q`` or Ctrl-C (``once``: print one frame); returns the exit status."""
    stream = out or sys.stdout
    top = Top(run_dir, interval_s)
    _check_input(top)
    size = shutil.get_terminal_size((100, 40))
    if once:
        stream.write("\n".join(top.frame(size.columns)) + "\n")
        stream.flush()
        return 0
    return _loop(top, stream)


def _loop(top: Top, stream: TextIO) -> int:
    try:
        keys: int | None = sys.stdin.fileno() if sys.stdin.isatty() else None
    except (ValueError, OSError):
        keys = None
    terminal = keys  # restored at the end even if stdin reached its end meanwhile
    saved: Any = None
    previous_term = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    import termios
    import tty

    try:
        if keys is not None:
            saved = termios.tcgetattr(keys)
            tty.setcbreak(keys)
        signal.signal(signal.SIGTERM, on_term)
        stream.write("\x1b[?1049h\x1b[?25l")
        while True:
            size = shutil.get_terminal_size((100, 40))
            lines = top.frame(size.columns, size.lines)
            if lines:
                lines[0] = "\x1b[1m" + lines[0] + "\x1b[0m"
            stream.write("\x1b[H" + "".join(line + "\x1b[K\n" for line in lines[:-1]) + lines[-1] + "\x1b[K\x1b[J")
            stream.flush()
            deadline = time.monotonic() + top.interval_s
            while (left := deadline - time.monotonic()) > 0:
                if keys is None:
                    time.sleep(left)
                    break
                ready, _, _ = select.select([keys], [], [], left)
                if ready:
                    typed = os.read(keys, 64)
                    if not typed:
                        keys = None  # stdin closed: keep refreshing until Ctrl-C
                    elif b"q" in typed.lower():
                        return 0
            top.poll()
    except KeyboardInterrupt:
        return 0
    finally:
        stream.write("\x1b[?25h\x1b[?1049l")
        stream.flush()
        signal.signal(signal.SIGTERM, previous_term)
        if saved is not None and terminal is not None:
            try:
                termios.tcsetattr(terminal, termios.TCSADRAIN, saved)
            except termios.error:
                pass
