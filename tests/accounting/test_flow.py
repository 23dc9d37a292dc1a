"""Phases follow the flow of control: one stack per context (asyncio task), and a phase left by
a generator on another thread is closed where it was opened."""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import threading
import time

from lineprofiler.accounting import _phases

STEP_S = 0.02
STEP_NS = int(STEP_S * 1e9)
SLACK_NS = 1_000_000  # an asyncio timer may fire up to its clock resolution early


def phases_by_path(rec):
    return {p["path"]: p for p in rec.snapshot()["phases"]}


def repairs_of(rec):
    return rec.snapshot()["repairs"]


class _CApi(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int),
        ("main_thread_phase", ctypes.POINTER(ctypes.c_int32)),
        ("own_io", ctypes.POINTER(ctypes.c_int64)),
    ]


def main_thread_phase():
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    pointer = get(_phases._C_API, b"lineprofiler.accounting._phases._C_API")
    return ctypes.cast(pointer, ctypes.POINTER(_CApi)).contents.main_thread_phase[0]


# ----------------------------------------------------------------------------- asyncio


def test_two_asyncio_tasks_interleaving_on_one_thread_each_get_their_own_stack():
    rec = _phases.Recorder(measure_cpu=False)

    async def worker(name):
        with rec.phase(name):
            await asyncio.sleep(STEP_S)
            with rec.phase("inner"):
                await asyncio.sleep(STEP_S)
            await asyncio.sleep(STEP_S)

    async def main():
        a = asyncio.create_task(worker("A"))
        await asyncio.sleep(STEP_S / 2)  # A is suspended inside its phase when B starts
        b = asyncio.create_task(worker("B"))
        await asyncio.gather(a, b)

    t0 = time.monotonic_ns()
    asyncio.run(main())
    elapsed = time.monotonic_ns() - t0
    got = phases_by_path(rec)
    assert set(got) == {"A", "A/inner", "B", "B/inner"}
    assert all(p["entries"] == 1 and p["open_entries"] == 0 for p in got.values())
    for name in "AB":
        outer, inner = got[name], got[f"{name}/inner"]
        assert 3 * STEP_NS - SLACK_NS <= outer["wall_ns"] <= elapsed
        assert STEP_NS - SLACK_NS <= inner["wall_ns"] <= outer["wall_ns"]
        assert outer["self_ns"] == outer["wall_ns"] - inner["wall_ns"]
    assert repairs_of(rec) == {"mismatched_exits": 0, "stale_exits": 0, "dropped_entries": 0, "cross_stack_exits": 0}


def test_tasks_nest_under_the_phase_open_where_they_started():
    rec = _phases.Recorder(measure_cpu=False)

    async def worker(name):
        with rec.phase(name):
            await asyncio.sleep(STEP_S)

    async def main():
        with rec.phase("epoch"):
            await asyncio.gather(worker("load"), worker("train"))

    with rec.phase("run"):
        asyncio.run(main())
    got = phases_by_path(rec)
    assert set(got) == {"run", "run/epoch", "run/epoch/load", "run/epoch/train"}
    assert all(p["entries"] == 1 for p in got.values())
    run, epoch, load, train = (got[p] for p in ("run", "run/epoch", "run/epoch/load", "run/epoch/train"))
    # A child in another task still counts as the parent's child time (here concurrently: twice).
    assert run["self_ns"] == run["wall_ns"] - epoch["wall_ns"]
    assert epoch["self_ns"] == max(0, epoch["wall_ns"] - load["wall_ns"] - train["wall_ns"])
    assert repairs_of(rec)["mismatched_exits"] == repairs_of(rec)["cross_stack_exits"] == 0


def test_work_sent_to_a_thread_by_asyncio_to_thread_nests_under_the_awaiting_phase():
    rec = _phases.Recorder(measure_cpu=False)

    def blocking():
        with rec.phase("read"):
            time.sleep(STEP_S)

    async def main():
        with rec.phase("step"):
            await asyncio.to_thread(blocking)

    asyncio.run(main())
    got = phases_by_path(rec)
    assert set(got) == {"step", "step/read"}
    assert got["step"]["self_ns"] == got["step"]["wall_ns"] - got["step/read"]["wall_ns"]
    assert got["step/read"]["wall_ns"] >= STEP_NS


def test_a_context_entered_with_run_inherits_without_changing_the_callers_stack():
    rec = _phases.Recorder(measure_cpu=False)

    def in_copy():
        with rec.phase("copy"):
            rec.count("n")

    with rec.phase("outer"):
        contextvars.copy_context().run(in_copy)
        with rec.phase("after"):
            pass
    got = phases_by_path(rec)
    assert set(got) == {"outer", "outer/copy", "outer/after"}
    assert {(c["phase"], c["name"]) for c in rec.snapshot()["counters"]} == {("outer/copy", "n")}


def test_the_main_thread_phase_follows_the_task_that_entered_or_left_last():
    rec = _phases.Recorder(measure_cpu=False)
    rec.make_primary()
    seen = {}

    async def worker(name, gate, done):
        with rec.phase(name):
            seen[name] = rec.path_of(main_thread_phase())
            gate.set()
            await done.wait()
        seen[name + " left"] = rec.path_of(main_thread_phase())

    async def main():
        a_in, b_in, a_done, b_done = (asyncio.Event() for _ in range(4))
        a = asyncio.create_task(worker("A", a_in, a_done))
        await a_in.wait()
        b = asyncio.create_task(worker("B", b_in, b_done))
        await b_in.wait()
        a_done.set()
        await a
        b_done.set()
        await b

    asyncio.run(main())
    assert seen == {"A": "A", "B": "B", "A left": None, "B left": None}
    assert main_thread_phase() == -1


def test_a_new_threads_context_made_lazily_inside_a_phase_does_not_change_its_stack():
    rec = _phases.Recorder(measure_cpu=False)
    var = contextvars.ContextVar("user")
    out = []

    def body():  # a fresh thread has no context until something needs one
        with rec.phase("outer"):
            contextvars.copy_context()
            var.set(1)
            with rec.phase("inner"):
                out.append(rec.current_path())
        with rec.phase("after"):
            out.append(rec.current_path())

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out == ["outer/inner", "after"]
    assert set(phases_by_path(rec)) == {"outer", "outer/inner", "after"}
    assert repairs_of(rec)["mismatched_exits"] == repairs_of(rec)["cross_stack_exits"] == 0


# ----------------------------------------------------------------------------- generators and threads


def test_a_generator_resumed_on_another_thread_closes_its_phase_where_it_was_opened():
    rec = _phases.Recorder(measure_cpu=True)
    rec.make_primary()

    def gen():
        with rec.phase("gen"):
            yield 1
        yield 2

    g = gen()
    next(g)  # "gen" opens on this thread
    assert rec.path_of(main_thread_phase()) == "gen"
    t = threading.Thread(target=next, args=(g,))
    t.start()
    t.join()  # ... and is left on that one
    assert main_thread_phase() == -1  # the main thread's view is repaired too
    with rec.phase("later"):
        pass
    got = phases_by_path(rec)
    assert set(got) == {"gen", "later"}
    assert got["gen"]["entries"] == got["later"]["entries"] == 1
    assert got["gen"]["open_entries"] == 0
    # the CPU clock of the thread that entered cannot be read on the one that left
    assert got["gen"]["cpu_missing"] == 1 and got["gen"]["cpu_ns"] is None
    assert got["later"]["cpu_ns"] is not None
    assert repairs_of(rec)["cross_stack_exits"] == 1 and repairs_of(rec)["mismatched_exits"] == 0


def test_a_phase_closed_from_another_thread_leaves_the_phases_opened_after_it_open():
    rec = _phases.Recorder(measure_cpu=False)

    def gen():
        with rec.phase("gen"):
            yield 1
        yield 2

    g = gen()
    with rec.phase("outer"):
        next(g)
        with rec.phase("inside"):  # opened under the generator's phase, still open when it closes
            t = threading.Thread(target=next, args=(g,))
            t.start()
            t.join()
            assert rec.current_path() == "outer/gen/inside"
        assert rec.current_path() == "outer"
        with rec.phase("next"):
            pass
    got = phases_by_path(rec)
    assert set(got) == {"outer", "outer/gen", "outer/gen/inside", "outer/next"}
    assert all(p["entries"] == 1 for p in got.values())
    assert repairs_of(rec)["cross_stack_exits"] == 1 and repairs_of(rec)["mismatched_exits"] == 0


def test_an_exit_nowhere_open_is_still_a_mismatch():
    rec = _phases.Recorder(measure_cpu=False)
    p = rec.phase("p")
    t = threading.Thread(target=p.__exit__, args=(None, None, None))
    t.start()
    t.join()
    p.__exit__(None, None, None)
    assert repairs_of(rec)["mismatched_exits"] == 2 and repairs_of(rec)["cross_stack_exits"] == 0


# ----------------------------------------------------------------------------- arithmetic and lifetime


class FakeClock:
    """An integer clock that returns the values it is told, then keeps the last one."""

    def __init__(self, values=()):
        self.values = list(values)
        self.now = 0

    def __call__(self):
        if self.values:
            self.now = self.values.pop(0)
        return self.now


def test_open_and_closed_time_of_a_child_in_another_context_counts_against_its_parent():
    clock = FakeClock([0, 10, 25, 30, 40])
    rec = _phases.Recorder(measure_cpu=False, clock=clock)
    outer, inner = rec.phase("outer"), rec.phase("inner")
    outer.__enter__()  # 0
    ctx = contextvars.copy_context()
    ctx.run(inner.__enter__)  # 10, in another context, left open there
    assert rec.current_path() == "outer"  # this flow's stack did not change
    got = phases_by_path(rec)  # snapshot at 25
    assert (got["outer"]["open_ns"], got["outer"]["open_self_ns"]) == (25, 10)
    assert (got["outer/inner"]["open_ns"], got["outer/inner"]["open_self_ns"]) == (15, 15)
    ctx.run(inner.__exit__, None, None, None)  # 30
    outer.__exit__(None, None, None)  # 40
    got = phases_by_path(rec)
    assert (got["outer"]["wall_ns"], got["outer"]["self_ns"]) == (40, 20)
    assert got["outer/inner"]["wall_ns"] == got["outer/inner"]["self_ns"] == 20
    assert repairs_of(rec)["cross_stack_exits"] == 0


def test_finished_tasks_leave_no_stack_behind():
    import gc

    rec = _phases.Recorder(measure_cpu=False)

    async def worker(i):
        with rec.phase("task"):
            await asyncio.sleep(0)
            rec.count("i", i)

    async def main():
        await asyncio.gather(*(worker(i) for i in range(2000)))

    def stacks():
        return sum(1 for o in gc.get_objects() if type(o).__name__ == "_Stack")

    before = stacks()
    gc.disable()  # freed by reference counting alone: no cycle left behind
    try:
        asyncio.run(main())
        after = stacks()
    finally:
        gc.enable()
    assert after - before <= 2
    assert phases_by_path(rec)["task"]["entries"] == 2000


def test_random_misuse_across_contexts_threads_and_generators_keeps_the_tree_sound():
    import gc
    import random

    rng = random.Random(11)
    recs = [_phases.Recorder(measure_cpu=False, max_depth=4), _phases.Recorder(measure_cpu=False)]
    recs[0].make_primary()
    names = ["a", "b", "c"]
    opened, gens = [], []

    def gen(rec):
        with rec.phase(rng.choice(names)):
            yield 1
            with rec.phase("g"):
                yield 2

    def step(in_loop=False):
        r, rec = rng.random(), rng.choice(recs)
        if r < 0.3:
            p = rec.phase(rng.choice(names))
            p.__enter__()
            opened.append(p)
        elif r < 0.5 and opened:
            opened.pop(rng.randrange(len(opened))).__exit__(None, None, None)
        elif r < 0.57:
            g = gen(rec)
            next(g)
            gens.append(g)
        elif r < 0.62 and gens:
            g = gens.pop(rng.randrange(len(gens)))
            t = threading.Thread(target=lambda: list(g))
            t.start()
            t.join()
        elif r < 0.65 and gens:
            gens.pop(rng.randrange(len(gens))).close()
        elif r < 0.72:
            contextvars.copy_context().run(step, in_loop)
        elif r < 0.75:
            rec.snapshot()
        elif r < 0.76:
            rec.stop()
            rec.start()
        elif r < 0.8:
            rec.count(rng.choice(names))
        elif r < 0.84 and not in_loop:

            async def task(depth):
                step(True)
                await asyncio.sleep(0)
                step(True)
                if depth < 2:
                    await asyncio.gather(task(depth + 1), task(depth + 1))

            asyncio.run(task(0))
        elif r < 0.86:
            t = threading.Thread(target=lambda: [step(in_loop) for _ in range(4)])
            t.start()
            t.join()
        elif r < 0.87:
            gc.collect()

    for _ in range(3000):
        step()
    for p in reversed(opened):
        p.__exit__(None, None, None)
    gens.clear()
    gc.collect()
    for rec in recs:
        snap = rec.snapshot()
        for p in snap["phases"]:
            assert 0 <= p["self_ns"] <= p["wall_ns"] and 0 <= p["open_self_ns"] <= p["open_ns"], p
            assert p["path"] == "(overflow)" or len(p["path"].split("/")) <= snap["caps"]["max_depth"]
