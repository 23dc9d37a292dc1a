"""0.10.0-style programs run unchanged on 0.11.0, or fail with one line naming what to use instead.

Each program is written as a 0.10.0 user would write it (its documented usage: a library
instrumented with the module-level ``accounting.phase``/``count``, a script that installs a
profiler and saves its own report) and runs in a fresh interpreter, against real run
directories and real files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

TIMEOUT = 300


def run_program(tmp_path, body, *args, files=None, python_options=(), env=None):
    """Write ``body`` (and ``files``, name to text) into ``tmp_path`` and run it there."""
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(body))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LINEPROFILER_")}, **(env or {})}
    done = subprocess.run(
        [sys.executable, *python_options, str(script), *map(str, args)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


LIBRARY = """
    # A library instrumented for lineprofiler 0.10.0: it holds no profiler, and its phases
    # record only in a process that installed one.
    from lineprofiler import accounting


    def rollout(steps):
        with accounting.phase("rollout"):
            for _ in range(steps):
                with accounting.phase("env_step"):
                    accounting.count("frames", 4)
"""

SPAWN_JOB = """
    import multiprocessing
    import sys

    from lineprofiler import accounting

    import library


    def actor():
        accounting.start(role="actor")  # the run comes from the parent, through the environment
        for _ in range(3):
            library.rollout(5)
        accounting.stop()


    if __name__ == "__main__":
        run_dir, out = sys.argv[1], sys.argv[2]
        library.rollout(1)  # nothing installed yet: records nothing
        accounting.Profiler(run_dir=run_dir, role="learner", run_id="exp-7", install=True)
        context = multiprocessing.get_context("spawn")
        actors = [context.Process(target=actor) for _ in range(2)]
        for process in actors:
            process.start()
        for _ in range(4):
            with accounting.phase("update"):
                accounting.count("batches")
        for process in actors:
            process.join()
            assert process.exitcode == 0, process.exitcode
        accounting.stop()
        assert accounting.installed_profiler() is None
        for form in ("text", "json", "html"):
            accounting.write_report(run_dir, f"{out}/reports/report.{form}", format=form)
"""


def _written(folder):
    return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")


def _dominant(document, role, path):
    (row,) = [row for row in document["dominant"]["phases"] if row["role"] == role and row["path"] == path]
    return row


def test_a_spawned_job_records_through_the_module_level_api_and_writes_each_report(tmp_path):
    run_program(tmp_path, SPAWN_JOB, "run", "out", files={"library.py": LIBRARY})

    reports = tmp_path / "out" / "reports"
    document = json.loads((reports / "report.json").read_text())
    assert document["header"]["run_id"] == "exp-7"
    roles = {role["name"]: role for role in document["roles"]}
    assert roles["learner"]["processes"] == 1
    assert roles["actor"]["processes"] == 2
    # Two actors, three rollouts of five steps each; the learner's rollout before install is not there.
    env_step = _dominant(document, "actor", "rollout/env_step")
    assert env_step["entries"] == 30
    assert {c["name"]: c["total"] for c in env_step["counters"]} == {"frames": 120}
    update = _dominant(document, "learner", "update")
    assert update["entries"] == 4
    assert {c["name"]: c["total"] for c in update["counters"]} == {"batches": 4}
    assert not [row for row in document["dominant"]["phases"] if row["role"] == "learner" and "rollout" in row["path"]]

    text = (reports / "report.text").read_text()
    assert "LEARNER" in text and "ACTOR" in text and "rollout/env_step" in text
    assert (reports / "report.html").read_text().startswith("<!DOCTYPE html>")
    # Nothing written but the run directory and the reports asked for.
    assert _written(tmp_path) == ["library.py", "out", "program.py", "run"]


def test_a_forked_child_records_into_its_own_file_through_the_installed_profiler(tmp_path):
    run_program(
        tmp_path,
        """
        import multiprocessing
        import sys

        from lineprofiler import accounting

        import library

        if __name__ == "__main__":
            accounting.start(sys.argv[1], role="worker")
            child = multiprocessing.get_context("fork").Process(target=library.rollout, args=(2,))
            child.start()
            child.join()
            assert child.exitcode == 0
            library.rollout(1)
            accounting.stop()
            accounting.write_report(sys.argv[1], "report.json", format="json")
        """,
        "run",
        files={"library.py": LIBRARY},
    )
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["roles"][0]["processes"] == 2
    assert _dominant(document, "worker", "rollout/env_step")["entries"] == 3


def test_a_guest_with_nothing_installed_records_nothing_and_never_raises(tmp_path):
    # -W error: not even a warning escapes into the host program.
    done = run_program(
        tmp_path,
        """
        from lineprofiler import accounting

        import library

        library.rollout(3)
        with accounting.phase(None):  # a wrong name, too, is the host's business only
            accounting.count(None, "x")
        with accounting.phase("io", io=True, sync=True, sample=0.5, async_work=True):
            pass
        assert accounting.current() == ""
        accounting.signal_ready("queue", 1)
        accounting.wait_on("queue", 1)
        accounting.trace_begin("request", 1)
        accounting.trace_mark("request", 1, "admitted")
        accounting.trace_end("request", 1)
        accounting.stop()
        assert accounting.installed_profiler() is None

        # start() with no run_dir and no LINEPROFILER_PROFILE: installed, off, writes nothing.
        profiler = accounting.start(role="actor")
        assert accounting.installed_profiler() is profiler and not profiler.enabled
        library.rollout(2)
        accounting.stop()
        print("ok")
        """,
        files={"library.py": LIBRARY},
        python_options=("-W", "error"),
    )
    assert done.stdout.strip() == "ok" and done.stderr == ""
    assert _written(tmp_path) == ["library.py", "program.py"]


def test_a_profiler_in_use_says_once_what_it_does_not_record(tmp_path):
    done = run_program(
        tmp_path,
        """
        import sys

        from lineprofiler import accounting

        profiler = accounting.Profiler(run_dir=sys.argv[1], install=True, trace=True, strict_names=True)
        for _ in range(3):
            with accounting.phase("step", sample=0.1):
                accounting.wait_on("queue", 7)
        accounting.stop()
        second = accounting.Profiler(run_dir=sys.argv[1] + "-2", trace="auto")  # said once per process
        second.close()
        """,
        "run",
    )
    from_environment = run_program(
        tmp_path, "from lineprofiler import accounting\naccounting.Profiler(enabled=False)\n",
        env={"LINEPROFILER_TRACE": "auto"},
    )
    # trace='auto' traces the project's function calls where sys.monitoring exists (3.12+)
    auto_said = sys.version_info < (3, 12)
    assert ("trace='auto' needs sys.monitoring" in from_environment.stderr) == auto_said
    warnings = [line for line in done.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 2 + auto_said, done.stderr
    said = "\n".join(warnings)
    assert ("trace='auto' needs sys.monitoring" in said) == auto_said
    assert "strict_names" in said
    assert "sample=" in said and "measures every entry" in said


def test_the_0_10_profiler_methods_and_keywords(tmp_path):
    done = run_program(
        tmp_path,
        """
        import json
        import sys

        from lineprofiler.accounting import Profiler, current, installed_profiler

        with Profiler(run_dir=sys.argv[1], role="learner", install=True, cuda_sync=False) as profiler:
            @profiler.profile
            def train_step():
                return current()

            @profiler.profile(name="evaluate")
            def check():
                return profiler.current_phase()

            assert installed_profiler() is profiler
            assert train_step() == "train_step"
            assert check() == "evaluate"
            assert train_step.__name__ == "train_step"
            profiler.snapshot()
        assert installed_profiler() is None
        assert current() == ""
        print(json.dumps({"strict": profiler.strict_names, "threads": profiler.thread_names}))
        """,
        "run",
    )
    assert json.loads(done.stdout) == {"strict": False, "threads": False}


ERRORS = """
    import json
    import os
    import sys
    import warnings

    import lineprofiler
    import with_line_profiler
    from lineprofiler import accounting

    warnings.simplefilter("ignore")
    said = {}


    def attempt(label, action):
        try:
            action()
        except Exception as error:
            said[label] = [type(error).__name__, str(error)]
        else:
            said[label] = None


    def from_import(module, name):
        exec(f"from {module} import {name}", {})


    attempt("from accounting import merge_run", lambda: from_import("lineprofiler.accounting", "merge_run"))
    attempt("accounting.Backend", lambda: accounting.Backend)
    attempt("accounting.TraceBuffer", lambda: accounting.TraceBuffer)
    attempt("write_trace", lambda: accounting.write_trace(sys.argv[1], "trace.html"))
    attempt("thread_names", lambda: accounting.Profiler(run_dir=sys.argv[1], thread_names=True))
    attempt("run_id third", lambda: accounting.Profiler(sys.argv[1], "actor", "run-1"))
    attempt("format pdf", lambda: accounting.write_report(sys.argv[1], "report.pdf", format="pdf"))
    attempt("no run", lambda: accounting.write_report(sys.argv[1] + "-missing", "report.txt"))
    attempt("bad option", lambda: accounting.Profiler(run_dir=sys.argv[1], run_id="r9", snapshot_interval_s="5"))
    said["run id after a bad option"] = os.environ.get("LINEPROFILER_RUN_ID")
    said["hasattr Backend"] = hasattr(accounting, "Backend")
    said["unknown"] = getattr(lineprofiler, "no_such_name", "default")
    print(json.dumps(said))
"""


def test_what_0_11_cannot_provide_fails_with_one_line_naming_the_replacement(tmp_path):
    said = json.loads(run_program(tmp_path, ERRORS, "run").stdout)

    def error(label, kind, *words):
        assert said[label] is not None, label
        assert said[label][0] == kind, said[label]
        message = said[label][1]
        assert "\n" not in message
        for word in words:
            assert word in message, (label, message)

    error("from accounting import merge_run", "ImportError", "merge_run", "write_report(")
    error("accounting.Backend", "AttributeError", "backend='torch'")
    error("accounting.TraceBuffer", "AttributeError", "--perfetto")
    error("write_trace", "ReportError")
    error("thread_names", "NotImplementedError", "threading.current_thread().name")
    error("run_id third", "TypeError", "run_id=")
    error("format pdf", "ValueError", "'text', 'json' or 'html'")
    error("no run", "ReportError", "no such directory")
    error("bad option", "TypeError", "snapshot_interval_s")
    assert said["run id after a bad option"] is None
    assert said["hasattr Backend"] is False
    assert said["unknown"] == "default"
    assert not (tmp_path / "report.pdf").exists() and not (tmp_path / "trace.html").exists()


def test_import_with_line_profiler_is_lineprofiler_under_the_distribution_name(tmp_path):
    done = run_program(
        tmp_path,
        """
        import json

        import with_line_profiler as lp

        import lineprofiler


        def work(n):
            total = 0
            for i in range(n):
                total += i * i
            return total


        with lp.LineProfiler(project_folder=".") as profiler:
            work(2000)
        stats = profiler.get_stats()
        print(json.dumps({
            "all": sorted(lp.__all__),
            "same": [getattr(lp, name) is getattr(lineprofiler, name) for name in lp.__all__],
            "functions": sorted(s.qualname for s in stats.values()),
            "accounting_phase": lp.accounting.phase is lineprofiler.accounting.phase,
        }))
        """,
    )
    seen = json.loads(done.stdout)
    assert seen["all"] == [
        "FunctionStats", "LineProfiler", "LineStats", "__version__", "accounting", "load_ipython_extension",
        "start_profiling", "stop_profiling", "unload_ipython_extension",
    ]
    assert all(seen["same"])
    assert "work" in seen["functions"]
    assert seen["accounting_phase"] is True


AMBIENT = """
    import json

    from lineprofiler import start_profiling, stop_profiling


    def work(n):
        total = 0
        for i in range(n):
            total += i
        return total


    profiler = start_profiling()  # the two lines 0.10.0 let a script keep committed
    work(500)
    stopped = stop_profiling(print_stats=False)
    print(json.dumps({
        "enabled": stopped is not None,
        "folder": str(profiler.project_folder),
        "functions": sorted(s.qualname for s in profiler.get_stats().values()),
    }))
"""


AMBIENT_TABLE = """
    import json

    from lineprofiler import start_profiling, stop_profiling
    from helpers.generated import made
    from helpers.slow import measured


    class Model:
        def step(self, n):
            return sum(range(n))


    def work(n):
        total = 0
        for i in range(n):
            total += i
        return total + made(n) + measured(n) + Model().step(n)


    start_profiling()
    work(500)
    stopped = stop_profiling(print_stats=False)
    print(json.dumps(sorted(s.qualname for s in stopped.get_stats().values())))
"""

HELPERS = {
    "helpers/__init__.py": "",
    "helpers/generated.py": "def made(n):\n    return n + 1\n",
    "helpers/slow.py": "def measured(n):\n    return n * 2\n",
}


def test_start_profiling_records_only_when_asked(tmp_path):
    (tmp_path / ".git").mkdir()  # the project's root, found from the calling file

    quiet = json.loads(run_program(tmp_path, AMBIENT).stdout)
    assert quiet == {"enabled": False, "folder": str(tmp_path), "functions": []}

    done = run_program(tmp_path, AMBIENT, env={"LINEPROFILER_ENABLED": "1"})
    asked = json.loads(done.stdout)
    assert asked["enabled"] is True and "work" in asked["functions"]
    assert done.stderr == ""
    assert _written(tmp_path) == [".git", "program.py"]


@pytest.mark.parametrize(
    ("table", "kept"),
    [
        ("", ["<module>", "Model.step", "made", "measured", "work"]),
        ('exclude = ["helpers/generated.py"]', ["<module>", "Model.step", "measured", "work"]),
        ('include = ["helpers/*"]', ["made", "measured"]),
        ('include = ["helpers/*"]\nexclude = ["*/slow.py"]', ["made"]),
        ('functions = ["Model.*", "made"]', ["Model.step", "made"]),
    ],
)
def test_start_profiling_narrows_to_the_projects_tool_table(tmp_path, table, kept):
    # 0.10.0's [tool.lineprofiler] table: include/exclude globs on the path relative to the
    # root, functions globs on the qualified name; each only narrows.
    (tmp_path / ".git").mkdir()
    (tmp_path / "helpers").mkdir()
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.lineprofiler]\n{table}\n")
    done = run_program(tmp_path, AMBIENT_TABLE, files=HELPERS, env={"LINEPROFILER_ENABLED": "1"})
    assert json.loads(done.stdout) == kept
    assert done.stderr == ""


def test_a_bad_tool_table_warns_in_one_line_each_and_narrows_nothing(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "helpers").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.lineprofiler]\nexclude = "helpers/*"\nfunction = ["x"]\n')
    done = run_program(tmp_path, AMBIENT_TABLE, files=HELPERS, env={"LINEPROFILER_ENABLED": "1"})
    assert json.loads(done.stdout) == ["<module>", "Model.step", "made", "measured", "work"]
    warnings = [line for line in done.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 2, done.stderr
    assert "exclude" in warnings[0] and "not a list of strings" in warnings[0]
    assert "keys this version does not know: function" in warnings[1]


def test_lineprofiler_config_is_0_10_0s_module():
    import with_line_profiler
    from lineprofiler import config

    assert with_line_profiler.config is config
    assert config.ENV_ENABLED == "LINEPROFILER_ENABLED"
    table = config.ProfilerConfig(include=("src/*",), exclude=("src/gen/*",), functions=("Model.*",))
    assert table.allows_path("src/a/b.py") and not table.allows_path("src/gen/x.py")
    assert not table.allows_path("t.py")
    assert table.allows_function("Model.step") and not table.allows_function("helper")
    assert config.ProfilerConfig().allows_path("anything.py") and config.ProfilerConfig().allows_function("f")


TRACED = """
    import json, sys
    from lineprofiler import accounting

    profiler = accounting.Profiler(sys.argv[1], role="actor", trace=True, install=True)
    for step in range(3):
        with profiler.phase("step"):
            accounting.signal_ready("items", step)
        accounting.wait_on("items", step)
    profiler.close()
    html = accounting.write_trace(sys.argv[1], sys.argv[1] + "/out/trace.html")
    doc = accounting.write_trace(sys.argv[1], sys.argv[1] + "/out/trace.json", format="json")
    print(json.dumps([html, doc]))
"""


def test_write_trace_writes_the_story_of_a_traced_run(tmp_path):
    run_dir = tmp_path / "run"
    done = run_program(tmp_path, TRACED, run_dir, python_options=("-W", "error"))
    html, doc = json.loads(done.stdout)
    page = (run_dir / "out" / "trace.html").read_text()
    assert html.endswith("trace.html") and doc.endswith("trace.json")
    assert "lineprofiler trace" in page and "3 of 3 spans kept" in page
    story = json.loads((run_dir / "out" / "trace.json").read_text())["story"]
    assert story["spans_kept"] == story["spans_recorded"] == 3
    assert story["processes"][0]["links"] == 6  # three signals, three waits


def test_line_profiler_takes_0_10_0s_backend_and_engine(tmp_path):
    import warnings

    from lineprofiler import LineProfiler

    ours = "monitoring" if sys.version_info >= (3, 12) else "settrace"
    other = "settrace" if ours == "monitoring" else "monitoring"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profiler = LineProfiler(tmp_path, backend=ours, engine="builtin")  # 0.11.0's own choice: silent
    assert (profiler.backend, profiler.engine) == (ours, "builtin")
    with pytest.warns(RuntimeWarning, match="own C engine"):
        LineProfiler(tmp_path, engine="line_profiler")
    if other == "settrace":
        with pytest.warns(RuntimeWarning, match="sys.monitoring on Python 3.12"):
            assert LineProfiler(tmp_path, backend="settrace").backend == "monitoring"
    else:
        with pytest.raises(ValueError, match="needs Python 3.12"):
            LineProfiler(tmp_path, backend="monitoring")
    with pytest.raises(ValueError, match="backend must be"):
        LineProfiler(tmp_path, backend="ptrace")
    with pytest.raises(ValueError, match="engine must be"):
        LineProfiler(tmp_path, engine="cython")
