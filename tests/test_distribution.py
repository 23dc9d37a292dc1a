"""The distributions as a user gets them: the sdist and the wheel built from this tree, each
installed into a fresh virtual environment outside the repository, and run there as README.md
shows (``lineprofiler --version``, the README's snippets marked to be run).

The wheel must hold the built extensions, the stubs and ``py.typed`` and no C source or header;
the sdist must hold every C file and build. The package itself is installed with ``--no-index``
from the files built here, never from an index (which has an older with-line-profiler); only the
sdist's build dependency, setuptools, comes from the configured index.
"""

from __future__ import annotations

import ast
import email.parser
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers.env import clean_env

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: What README.md puts before a fenced block that this test runs.
RUN_MARK = "<!-- README test: runs in a fresh environment -->"
EXTENSIONS = (
    "lineprofiler/lines/_tracer",
    "lineprofiler/accounting/_phases",
    "lineprofiler/accounting/_sampler",
    "lineprofiler/_signal_relay",
)
#: The distributions are built and installed on the oldest and the newest supported Python: the
#: build is the same code on each, and three builds per Python cost CI minutes on all five.
ENDS = ((3, 11), (3, 15))
built_here = pytest.mark.skipif(
    sys.version_info[:2] not in ENDS, reason="the distributions are built on 3.11 and 3.15 (the ends of the range)"
)


def _source_version() -> str:
    """``__version__`` as src/lineprofiler/__init__.py assigns it: the one place it is written."""
    tree = ast.parse((REPO / "src" / "lineprofiler" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("src/lineprofiler/__init__.py assigns no __version__")


def _clean_env(venv: Path | None = None) -> dict[str, str]:
    """This process's environment without what would point a child at the checkout or at a
    profiler of the test run; with ``venv``, its bin/ first on PATH, as an activated one."""
    env = clean_env(without=("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def _run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    command = " ".join(map(str, args))
    assert result.returncode == 0, f"{command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def readme_blocks() -> list[tuple[str, str]]:
    """The fenced blocks of README.md that follow RUN_MARK, in order: (info string, text)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() != RUN_MARK:
            continue
        fence = lines[i + 1]
        assert fence.startswith("```"), f"README.md line {i + 2}: {RUN_MARK} is not followed by a fenced block"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        blocks.append((fence[3:].strip(), "\n".join(lines[i + 2 : end]) + "\n"))
    return blocks


# -- README.md as an index page shows it -------------------------------------------------------


def test_readme_links_are_absolute():
    """PyPI shows README.md on its own: a link or an image relative to the repository is broken
    there, and so is an anchor (no heading gets an id)."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)", text) + re.findall(r"""<(?:img|a)\b[^>]*(?:src|href)=["']([^"']+)""", text)
    relative = [t for t in targets if not re.match(r"https?://", t)]
    assert relative == [], f"README.md links to {relative}: an index page cannot follow them"


def test_readme_marks_the_snippets_it_runs():
    kinds = [info for info, _ in readme_blocks()]
    assert kinds.count("python") >= 2 and "" in kinds, kinds


# -- the distributions -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist, then the wheel built from it (python -m build), with this environment's
    setuptools (no isolation: nothing is fetched)."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)], cwd=out, env=_clean_env())
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.mark.slow
@built_here
def test_wheel_holds_the_package_and_no_c_sources(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = wheel.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(wheel.read(metadata_name).decode("utf-8"))
    sources = [n for n in names if n.endswith((".c", ".h"))]
    assert sources == [], f"the wheel ships C sources: {sources}"
    assert "lineprofiler/py.typed" in names
    for extension in EXTENSIONS:
        assert any(n.startswith(extension + ".") and n.endswith(".so") for n in names), extension
        assert extension + ".pyi" in names
    assert "lineprofiler/lines/_boot/sitecustomize.py" in names  # what --children children import
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    assert metadata["Version"] == _source_version()
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    extras = metadata.get_all("Provides-Extra")
    assert {"resources", "gpu", "viztracer", "ray", "all", "dev"} <= set(extras) and "test" not in extras
    requires = metadata.get_all("Requires-Dist") or []
    assert [r for r in requires if "extra ==" not in r] == [], "the package has no runtime dependency"
    # What only working on lineprofiler needs never comes with a user's extra.
    for tool in ("mpi4py", "pytest", "mypy", "ruff"):
        assert {r.split(";")[1].strip() for r in requires if r.startswith(tool)} == {'extra == "dev"'}, tool


@pytest.mark.slow
@built_here
@pytest.mark.skipif(
    any(flag.startswith(("-g", "-fsanitize")) for flag in os.environ.get("CFLAGS", "").split()),
    reason="CFLAGS ask for debug info or a sanitizer: setup.py keeps the symbols such a build needs",
)
def test_the_wheels_extensions_are_stripped(dists):
    """No debug info and no symbol table: they more than quadrupled the extensions."""
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        for name in wheel.namelist():
            if name.endswith(".so"):
                data = wheel.read(name)
                assert data.startswith(b"\x7fELF") and b".debug_info" not in data and b".symtab" not in data, name


#: Name prefixes of the test and benchmark seams that only a development build's extensions have
#: (LINEPROFILER_DEV_BUILD=1, see setup.py).
SEAM_PREFIXES = ("_set_", "_advance_", "_floor_", "_hold_")


@pytest.mark.slow
@built_here
def test_the_wheels_extensions_have_no_test_seams(dists, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        wheel.extractall(site)
    modules = [extension.replace("/", ".") for extension in EXTENSIONS]
    script = """
import importlib, json, sys
found = {}
for name in sys.argv[2:]:
    module = importlib.import_module(name)
    found[name] = [module.__file__, [n for n in dir(module) if n.startswith(tuple(sys.argv[1].split(",")))]]
json.dump(found, sys.stdout)
"""
    env = {**_clean_env(), "PYTHONPATH": str(site)}
    ran = _run([sys.executable, "-c", script, ",".join(SEAM_PREFIXES), *modules], cwd=tmp_path, env=env)
    found = json.loads(ran.stdout)
    assert all(Path(where).is_relative_to(site) for where, _ in found.values()), found
    assert {name: seams for name, (_, seams) in found.items()} == {name: [] for name in modules}


@pytest.mark.slow
@built_here
def test_sdist_holds_the_c_sources_and_the_documents(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    c_files = {str(p.relative_to(REPO)) for p in (REPO / "src").rglob("*.[ch]")}
    assert c_files and c_files <= names, sorted(c_files - names)
    for document in ("pyproject.toml", "LICENSE", "README.md", "CHANGELOG.md", "docs/migrating-from-0.10.md",
                     "docs/report.png", "src/lineprofiler/py.typed", "examples/demo.py"):
        assert document in names, document
    assert not any(name.startswith("tests/") for name in names), "a partial test suite in the sdist"


def _fresh_venv(where: Path) -> Path:
    venv = where / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=where, env=_clean_env())
    return venv


def _check_installed(venv: Path, work: Path) -> None:
    """What a user does first, in ``work`` (outside the repository): the version, where the
    package is imported from, and README.md's marked snippets in order."""
    env = _clean_env(venv)
    python = str(venv / "bin" / "python")
    version = _run([str(venv / "bin" / "lineprofiler"), "--version"], cwd=work, env=env).stdout.strip()
    assert version == f"lineprofiler {_source_version()}"
    where = _run([python, "-c", "import lineprofiler; print(lineprofiler.__file__)"], cwd=work, env=env).stdout
    assert Path(where.strip()).is_relative_to(venv), where
    shown = _run([sys.executable, "-m", "pip", "--python", python, "show", "with-line-profiler"], cwd=work, env=env)
    assert "License-Expression: MIT" in shown.stdout.splitlines(), shown.stdout

    outputs = []
    for n, (info, text) in enumerate(readme_blocks()):
        if info == "python":
            script = work / f"readme_{n}.py"
            script.write_text(text, encoding="utf-8")
            outputs.append(_run([python, str(script)], cwd=work, env=env, timeout=300).stdout)
        else:
            for line in text.splitlines():
                command = line.split("#", 1)[0].strip()
                if command:
                    outputs.append(_run(["bash", "-c", command], cwd=work, env=env, timeout=300).stdout)
    printed = "\n".join(outputs)
    assert "is_prime" in printed and (work / "lines.json").is_file()  # the line profiler's snippet
    assert "TRAINER" in printed and (work / "profile" / "report.html").is_file()  # the training loop's


@pytest.mark.slow
@built_here
def test_the_wheel_installs_and_runs_outside_the_repository(dists, tmp_path):
    venv = _fresh_venv(tmp_path)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(dists["wheel"])],
         cwd=tmp_path, env=_clean_env())
    work = tmp_path / "work"
    work.mkdir()
    _check_installed(venv, work)


@pytest.mark.slow
@built_here
def test_the_sdist_builds_installs_and_runs_outside_the_repository(dists, tmp_path):
    venv = _fresh_venv(tmp_path)
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "setuptools>=77"], cwd=tmp_path, env=_clean_env())
    _run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation", str(dists["sdist"])],
         cwd=tmp_path, env=_clean_env())
    work = tmp_path / "work"
    work.mkdir()
    _check_installed(venv, work)
