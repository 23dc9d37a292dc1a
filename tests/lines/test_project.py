"""What counts as the project: folder, default exclusions, include/exclude globs, own package."""

import os
from pathlib import Path

import pytest
from lp_helpers import write_module

import lineprofiler
from lineprofiler import LineProfiler
from lineprofiler.lines import DEFAULT_EXCLUDES, ProjectFilter, find_project_root

SRC = "def work(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"


def keys_files(stats):
    return {os.path.realpath(k.filename) for k in stats}


def test_code_outside_the_folder_is_absent(tmp_path):
    project, other = tmp_path / "proj", tmp_path / "other"
    inside = write_module(project, "lp_inside_mod", SRC)
    outside = write_module(other, "lp_outside_mod", SRC)
    p = LineProfiler(project_folder=project)
    with p:
        inside.work(10)
        outside.work(10)
        import json

        json.dumps({"a": [1, 2, 3]})
    files = keys_files(p.get_stats())
    assert os.path.realpath(inside.__file__) in files
    assert os.path.realpath(outside.__file__) not in files
    assert all(f.startswith(str(project.resolve())) for f in files)


def test_default_exclusions_inside_the_folder(tmp_path):
    project = tmp_path / "proj"
    venv = project / "myenv"  # a virtualenv of any name: it holds pyvenv.cfg
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    mods = {
        "keep": write_module(project / "pkg", "lp_keep", SRC),
        "venv": write_module(venv / "lib", "lp_venvmod", SRC),
        "site": write_module(project / "lib" / "site-packages", "lp_sitemod", SRC),
        "build": write_module(project / "build" / "lib", "lp_buildmod", SRC),
        "git": write_module(project / ".git" / "hooks", "lp_gitmod", SRC),
    }
    p = LineProfiler(project_folder=project)
    with p:
        for m in mods.values():
            m.work(3)
    files = keys_files(p.get_stats())
    assert files == {os.path.realpath(mods["keep"].__file__)}
    assert "site-packages" in DEFAULT_EXCLUDES and ".git" in DEFAULT_EXCLUDES


def test_include_and_exclude_globs(tmp_path):
    project = tmp_path / "proj"
    a = write_module(project / "app", "lp_app_a", SRC)
    gen = write_module(project / "app" / "generated", "lp_app_gen", SRC)
    bld = write_module(project / "build", "lp_build_keep", SRC)
    p = LineProfiler(project_folder=project, exclude=["generated"], include="build/lp_build_keep.py")
    with p:
        for m in (a, gen, bld):
            m.work(3)
    files = keys_files(p.get_stats())
    assert files == {os.path.realpath(a.__file__), os.path.realpath(bld.__file__)}


def test_filter_rules_directly(tmp_path):
    (tmp_path / "venv").mkdir()
    f = ProjectFilter(tmp_path, exclude=["*_test.py", "docs/*"], include=["venv/keep.py", "<stdin>"])
    root = str(tmp_path.resolve())
    assert f.is_project_file(f"{root}/a.py")
    assert f.is_project_file(f"{root}/sub/dir/b.py")
    assert not f.is_project_file(f"{root}/a_test.py")
    assert not f.is_project_file(f"{root}/docs/conf.py")
    assert not f.is_project_file(f"{root}/venv/other.py")
    assert f.is_project_file(f"{root}/venv/keep.py")  # include beats the default exclusion
    assert f.is_project_file("<stdin>")
    assert not f.is_project_file("<string>")
    assert not f.is_project_file("/elsewhere/x.py")
    assert not f.is_project_file(lineprofiler.lines.profiler.__file__)


def test_symlinked_folder_is_resolved(tmp_path):
    real = tmp_path / "real"
    mod = write_module(real, "lp_linked_mod", SRC)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    p = LineProfiler(project_folder=link)
    assert p.project_folder == real.resolve()
    with p:
        mod.work(2)
    assert keys_files(p.get_stats()) == {os.path.realpath(mod.__file__)}


def test_own_package_never_profiled(tmp_path):
    # A project folder that contains the profiler's own source (as this repository does).
    pkg_root = Path(lineprofiler.__file__).resolve().parent.parent
    p = LineProfiler(project_folder=pkg_root)
    with p:
        p.is_project_file(__file__)
    own = str(Path(lineprofiler.__file__).resolve().parent)
    assert not any(f.startswith(own) for f in keys_files(p.get_stats()))


def test_default_folder_is_git_root_else_cwd(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(repo / "a" / "b")
    assert find_project_root() == repo.resolve()
    assert LineProfiler().project_folder == repo.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    # tmp_path may itself sit in a git work tree: then that tree's root, else the cwd
    git_above = [d for d in plain.resolve().parents if (d / ".git").exists()]
    expected = git_above[0] if git_above else plain.resolve()
    assert find_project_root() == expected
    assert LineProfiler().project_folder == expected
    wt = tmp_path / "worktree"  # git worktrees have a .git *file*
    wt.mkdir()
    (wt / ".git").write_text("gitdir: /somewhere\n")
    assert find_project_root(wt) == wt.resolve()


@pytest.mark.parametrize("bad", ["missing", "file"])
def test_missing_folder_is_value_error(tmp_path, bad):
    target = tmp_path / "nope"
    if bad == "file":
        target.write_text("x")
    with pytest.raises(ValueError, match="project_folder"):
        LineProfiler(project_folder=target)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"project_folder": 42}, TypeError),
        ({"include": [1]}, TypeError),
        ({"exclude": 3.5}, TypeError),
        ({"exclude": [""]}, ValueError),
    ],
)
def test_bad_constructor_arguments(tmp_path, kwargs, exc):
    kwargs.setdefault("project_folder", tmp_path)
    with pytest.raises(exc):
        LineProfiler(**kwargs)


def test_pseudo_files_need_include(tmp_path):
    code = compile("def f():\n    return 1\nf()\n", "<generated>", "exec")
    p = LineProfiler(project_folder=tmp_path)
    with p:
        exec(code, {})
    assert p.get_stats() == {}
    p2 = LineProfiler(project_folder=tmp_path, include=["<generated>"])
    with p2:
        exec(code, {})
    stats = p2.get_stats()
    assert {k.filename for k in stats} == {"<generated>"}
    assert all(ln.source is None for fs in stats.values() for ln in fs.lines.values())


def test_an_exception_a_signal_handler_raises_inside_the_filter_is_the_users(tmp_path):
    """A SIGALRM handler's TimeoutError that lands while the filter runs is raised (the tracer
    hands it to the user's code); a filename that makes the filter fail every time is not ours."""
    import signal

    from lineprofiler.lines.project import ProjectFilter

    flt = ProjectFilter(tmp_path)
    code = compile("pass", str(tmp_path / "mod.py"), "exec")

    def on_alarm(signum, frame):
        raise TimeoutError("the user's deadline")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    original = flt.is_project_file
    calls = []

    def interrupted_once(filename):
        calls.append(filename)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGALRM)  # the handler runs here, inside the filter
        return original(filename)

    flt.is_project_file = interrupted_once  # type: ignore[method-assign]
    try:
        with pytest.raises(TimeoutError, match="deadline"):
            flt(code)
    finally:
        signal.signal(signal.SIGALRM, previous)

    def always_fails(filename):
        raise ValueError("an odd filename")

    flt.is_project_file = always_fails  # type: ignore[method-assign]
    assert flt(code) is False


def test_an_added_code_object_is_that_one_not_its_equal_twin(tmp_path):
    # Code objects compare equal when their text is, whatever file they came from: adding one
    # (kernprof's @profile outside the project) must not bring in its twin from another file.
    from types import CodeType

    (tmp_path / "proj").mkdir()
    text = "def work(n):\n    def inner():\n        return n\n    return inner()\n"

    def work_code(name):
        module = compile(text, str(tmp_path / name), "exec")
        return next(c for c in module.co_consts if isinstance(c, CodeType))

    first, second = work_code("a.py"), work_code("b.py")
    assert first == second and first.co_filename != second.co_filename
    project = ProjectFilter(tmp_path / "proj")
    assert not project(first) and not project(second)
    project.add_code(first)
    (inner,) = [c for c in first.co_consts if isinstance(c, CodeType)]
    assert project(first) and project(inner)  # the code nested in it comes with it
    assert not project(second)
