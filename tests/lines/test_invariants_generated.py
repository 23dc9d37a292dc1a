"""The line tables' invariants over generated programs (hypothesis).

Each example is a small module of functions that call each other (recursion included, bounded by
a depth argument), loop, run generators, raise and catch across frames. On the test clock, whose
every callback costs 1000 ns that must not be billed, the C tracer must match the pure-Python
reference model (lp_reference.py) exactly, line by line, and its tables must hold together:

- calls exact (the hits of each function's first line, which every frame runs once);
- for every line ``0 <= self <= time``, and ``time == self`` for a line that calls nothing;
- no function's total exceeds the outermost call's (``main``), which is the wall time;
- the self times add up to at most the wall time.

The same programs then run in several threads at once on the real clock, taking turns inside
each other's frames: hits and calls are the single-thread ones times the runs, and
``0 <= self <= time`` on every line. A failing example prints the generated program.

Not generated here: an accounting Profiler beside the line profiler (its snapshot thread's
events are the threads case; test_other_threads_events.py runs one for real).
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from lp_helpers import load_module
from lp_reference import Reference

from lineprofiler import LineProfiler
from lineprofiler.lines._tracer_testing import fake_clock

# -- programs ----------------------------------------------------------------------------------
# A statement is a tuple: ("adv", n) | ("call", j) | ("loop", k, body) | ("catch", body).
# A function is (kind, body) with kind "plain", "gen" (a generator) or "raises" (ends raising
# KeyError, so its callers catch it).

_amounts = st.integers(1, 9)


def _statements(n_funcs: int) -> st.SearchStrategy[list[tuple]]:
    leaf = st.one_of(st.tuples(st.just("adv"), _amounts), st.tuples(st.just("call"), st.integers(0, n_funcs - 1)))
    return st.recursive(
        st.lists(leaf, min_size=1, max_size=3),
        lambda inner: st.lists(
            st.one_of(
                leaf,
                st.tuples(st.just("loop"), st.integers(1, 2), inner),
                st.tuples(st.just("catch"), inner),
            ),
            min_size=1,
            max_size=3,
        ),
        max_leaves=6,
    )


@st.composite
def programs(draw) -> list[tuple[str, list[tuple]]]:
    n = draw(st.integers(1, 4))
    kinds = ["plain"] + [draw(st.sampled_from(["plain", "gen", "raises"])) for _ in range(n - 1)]
    return [(kind, draw(_statements(n))) for kind in kinds]


class _Source:
    """Python source of a program, and the numbers of the lines that call nothing of it."""

    def __init__(self, program: list[tuple[str, list[tuple]]]) -> None:
        self.program = program
        self.lines: list[str] = []
        self.leaves: set[int] = set()
        for i, (kind, body) in enumerate(program):
            self._emit(f"def f{i}(adv, d):", 0)
            self._leaf("adv(1)", 1)  # every frame runs it once: its hits are the calls
            self._body(body, 1)
            if kind == "gen":
                self._leaf("yield adv(2)", 1)
            elif kind == "raises":
                self._leaf("raise KeyError(d)", 1)
            self._emit("", 0)
        self._emit("def main(adv, d):", 0)
        self._body([("call", 0)], 1)
        self.text = "\n".join(self.lines) + "\n"

    def _emit(self, text: str, indent: int) -> int:
        self.lines.append("    " * indent + text)
        return len(self.lines)

    def _leaf(self, text: str, indent: int) -> None:
        self.leaves.add(self._emit(text, indent))

    def _body(self, body: list[tuple], indent: int) -> None:
        for stmt in body:
            what = stmt[0]
            if what == "adv":
                self._leaf(f"adv({stmt[1]})", indent)
            elif what == "call":
                self._call(stmt[1], indent)
            elif what == "loop":
                self._emit(f"for _ in range({stmt[1]}):", indent)
                self._body(stmt[2], indent + 1)
            else:
                self._emit("try:", indent)
                self._body(stmt[1], indent + 1)
                self._leaf("raise ValueError(d)", indent + 1)
                self._emit("except ValueError:", indent)
                self._leaf("adv(3)", indent + 1)

    def _call(self, j: int, indent: int) -> None:
        kind = self.program[j][0]
        if kind == "gen":
            self._emit(f"for _x in (f{j}(adv, d - 1) if d > 0 else ()):", indent)
            self._leaf("adv(4)", indent + 1)
        elif kind == "raises":
            self._emit("try:", indent)
            self._emit(f"f{j}(adv, d - 1) if d > 0 else adv(5)", indent + 1)
            self._emit("except KeyError:", indent)
            self._leaf("adv(6)", indent + 1)
        else:
            self._emit(f"f{j}(adv, d - 1) if d > 0 else adv(7)", indent)


# -- running -----------------------------------------------------------------------------------

RUNNER = "def run(p, fn, *args):\n    with p:\n        return fn(*args)\n"
DEPTH = 3
_serial = iter(range(10**9))


def _load(folder: Path, source: _Source):
    """The program as a fresh module in `folder/proj`, and a runner outside the project."""
    serial = next(_serial)
    (folder / "proj").mkdir()
    (folder / "outside").mkdir()
    proj = folder / "proj" / f"lp_gen_{serial}.py"
    proj.write_text(source.text)
    (folder / "outside" / f"lp_gen_runner_{serial}.py").write_text(RUNNER)
    module = load_module(proj, f"lp_gen_{serial}")
    runner = load_module(folder / "outside" / f"lp_gen_runner_{serial}.py", f"lp_gen_runner_{serial}")
    return module, runner


def _lines_of(stats) -> dict[int, tuple[int, int, int]]:
    """line -> (hits, time_ns, self_ns) over the program's one file."""
    out: dict[int, tuple[int, int, int]] = {}
    for fs in stats.values():
        for n, line in fs.lines.items():
            assert line.self_ns is not None
            out[n] = (line.hits, line.time_ns, line.self_ns)
    return out


def _first_lines(module, source: _Source) -> dict[str, int]:
    return {f"f{i}": getattr(module, f"f{i}").__code__.co_firstlineno + 1 for i in range(len(source.program))}


_settings = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@_settings
@given(programs())
@example([("plain", [("call", 0), ("adv", 2)])])  # direct recursion
@example([("plain", [("call", 1)]), ("gen", [("call", 0), ("call", 1)])])  # through a generator
@example([("plain", [("catch", [("call", 1)])]), ("raises", [("call", 0)])])  # unwinding frames
def test_generated_programs_match_the_reference_and_add_up(program):
    source = _Source(program)
    note(f"program:\n{source.text}")
    with tempfile.TemporaryDirectory() as tmp:
        module, runner = _load(Path(tmp), source)
        filename = module.__file__
        try:
            ref = Reference(lambda code: code.co_filename == filename)
            ref.run(module.main, DEPTH)
            wall = ref.now()
            expected = {n: tuple(v) for fs in ref.result().values() for n, v in fs.items()}
            p = LineProfiler(project_folder=Path(tmp) / "proj")
            with fake_clock(callback_cost=1000) as advance:
                runner.run(p, module.main, advance, DEPTH)
            stats = p.get_stats()
        finally:
            sys.modules.pop(module.__name__, None)
            sys.modules.pop(runner.__name__, None)
    got = _lines_of(stats)
    assert {n: v[:2] for n, v in got.items()} == expected, source.text
    by_name = {fs.qualname: fs for fs in stats.values()}
    for name, first in _first_lines(module, source).items():
        if name in by_name:
            assert by_name[name].calls == by_name[name].lines[first].hits, (name, source.text)
    for n, (_hits, time_ns, self_ns) in got.items():
        assert 0 <= self_ns <= time_ns, (n, source.text)
        if n in source.leaves:
            assert self_ns == time_ns, (n, source.text)  # the test clock is exact
        assert time_ns <= wall, (n, source.text)
    main = by_name["main"]
    assert main.time_ns <= wall, source.text
    for fs in stats.values():
        assert fs.time_ns <= main.time_ns, (fs.qualname, source.text)
    assert sum(self_ns for _, _, self_ns in got.values()) <= wall, source.text


THREADS = 3
REPEAT = 20


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(programs())
def test_generated_programs_in_threads_count_every_thread(program):
    source = _Source(program)
    note(f"program:\n{source.text}")
    with tempfile.TemporaryDirectory() as tmp:
        module, runner = _load(Path(tmp), source)
        try:
            p = LineProfiler(project_folder=Path(tmp) / "proj")
            with p:
                module.main(abs, DEPTH)
            single = _lines_of(p.get_stats())
            p = LineProfiler(project_folder=Path(tmp) / "proj")
            start = threading.Barrier(THREADS)

            def each() -> None:
                start.wait()
                for _ in range(REPEAT):
                    module.main(abs, DEPTH)

            threads = [threading.Thread(target=each) for _ in range(THREADS)]
            interval = sys.getswitchinterval()
            sys.setswitchinterval(1e-5)  # threads take turns inside each other's frames
            try:
                with p:
                    for t in threads:
                        t.start()
                    for t in threads:
                        t.join()
            finally:
                sys.setswitchinterval(interval)
            stats = p.get_stats()
        finally:
            sys.modules.pop(module.__name__, None)
            sys.modules.pop(runner.__name__, None)
    got = _lines_of(stats)
    assert {n: v[0] for n, v in got.items()} == {n: THREADS * REPEAT * v[0] for n, v in single.items()}, source.text
    by_name = {fs.qualname: fs for fs in stats.values()}
    for name, first in _first_lines(module, source).items():
        if name in by_name:
            assert by_name[name].calls == by_name[name].lines[first].hits, (name, source.text)
    for n, (_hits, time_ns, self_ns) in got.items():
        assert 0 <= self_ns <= time_ns, (n, source.text)
