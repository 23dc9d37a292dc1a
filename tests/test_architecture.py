"""The package's shape, from its own source: no import cycle among its Python modules (imports
inside functions included), the core (accounting/, lines/, runfiles/) imports nothing from
integrations/, no module of the core or of report/ names integrations/ at all (not in a string
given to importlib or ``__import__``, not in a docstring: an integration registers itself), and
no Python or C file is longer than MAX_LINES.

Also a command: ``python tests/test_architecture.py`` prints every cycle, upward import and long
file it finds, and exits 1 when there is one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "lineprofiler"
MAX_LINES = 650
CORE = ("lineprofiler.accounting", "lineprofiler.lines", "lineprofiler.runfiles")
ADAPTERS = "lineprofiler.integrations"
#: The modules that may not even name an adapter: the core, and the report it feeds.
NAMES_NO_ADAPTER = (*CORE, "lineprofiler.report")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _absolute(importer: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its body (each ``from X
    import y`` counts as X.y when X.y is a module, else as X)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, is_package, node.level, node.module)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            # `import a.b.c` imports a.b.c; count the deepest module of ours it names.
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("lineprofiler"):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def packages() -> frozenset[str]:
    return frozenset(name for name, path in modules().items() if path.name == "__init__.py")


def cycles(edges: dict[str, set[str]], package_names: frozenset[str] = frozenset()) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm), each sorted.

    An edge from a package's ``__init__`` to its own submodule (re-exporting it) and an edge into
    a package's ``__init__`` from inside it are left out: importing ``a.b`` runs ``a`` first
    whatever ``a.b`` says, so those are not a module depending on another."""

    def kept(src: str, dst: str) -> bool:
        if src in package_names and dst.startswith(src + "."):
            return False
        return not (dst in package_names and src.startswith(dst + "."))

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if not kept(node, child):
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def upward_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (src, dst)
        for src, dsts in edges.items()
        if src.startswith(CORE)
        for dst in dsts
        if dst.startswith(ADAPTERS)
    )


def adapter_names_in(source: str, filename: str = "<source>") -> list[int]:
    """The lines of ``source`` where a string literal names an adapter module: an argument of
    ``importlib.import_module`` or ``__import__``, a table of module names, a docstring. Import
    statements are :func:`upward_imports`'s."""
    tree = ast.parse(source, filename)
    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ADAPTERS in node.value
        }
    )


def named_adapters() -> list[tuple[str, int]]:
    return [
        (name, line)
        for name, path in modules().items()
        if name.startswith(NAMES_NO_ADAPTER)
        for line in adapter_names_in(path.read_text(encoding="utf-8"), str(path))
    ]


def long_files() -> list[tuple[str, int]]:
    """Python modules and C sources (the extensions' .c and .h) over MAX_LINES."""
    named = [*modules().items(), *((str(p.relative_to(PACKAGE.parent)), p) for p in sorted(PACKAGE.rglob("*.[ch]")))]
    sizes = ((name, len(path.read_text(encoding="utf-8").splitlines())) for name, path in named)
    return sorted((name, n) for name, n in sizes if n > MAX_LINES)


def test_no_import_cycle():
    assert cycles(graph(), packages()) == []


def test_the_core_imports_no_adapter():
    assert upward_imports(graph()) == []


def test_the_core_and_the_report_never_name_an_adapter():
    assert named_adapters() == []


def test_no_python_file_is_too_long():
    assert long_files() == []


def test_the_checks_can_fail():
    # The walker sees imports made inside functions (the CLI imports the report late) ...
    assert any(dst.startswith("lineprofiler.report") for dst in graph()["lineprofiler.cli"])
    # ... and the cycle finder finds a cycle, through a third module too, but not a package's
    # re-export of its own submodule.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert cycles({"p": {"p.m"}, "p.m": {"p"}}, frozenset({"p"})) == []
    # The name finder sees an adapter named through importlib, __import__, a table or a
    # docstring (launchers.py's table of 0.11.0 named the Ray adapter so), not other text.
    source = (
        '"""Uses :mod:`lineprofiler.integrations.ipython`."""\n'
        "import importlib\n"
        'importlib.import_module("lineprofiler.integrations.ray")\n'
        '__import__("lineprofiler.integrations")\n'
        '_ON_IMPORT = {"ray": ("ray", "lineprofiler.integrations.ray")}\n'
        'OTHER = "lineprofiler.accounting"\n'
    )
    assert adapter_names_in(source) == [1, 3, 4, 5]


# -- the report's floors -----------------------------------------------------------------------
REPORT = "lineprofiler.report"
#: report/'s floors, lowest first: the ground (model, format, wording) below read, compute, render.
REPORT_FLOORS = ("read", "compute", "render")


def _report_floor(name: str) -> int | None:
    """0 for the report's ground, 1.. for its floors in REPORT_FLOORS' order; None outside it."""
    if name != REPORT and not name.startswith(REPORT + "."):
        return None
    part = name[len(REPORT) + 1 :].partition(".")[0]
    return REPORT_FLOORS.index(part) + 1 if part in REPORT_FLOORS else 0


def floor_violations(edges: dict[str, set[str]] | None = None) -> list[tuple[str, str]]:
    """The imports inside report/ that point up a floor: the ground importing a floor, read
    importing compute or render, compute importing render."""
    edges = graph() if edges is None else edges
    found = []
    for src, dsts in edges.items():
        here = _report_floor(src)
        if here is None:
            continue
        for dst in dsts:
            there = _report_floor(dst)
            if there is not None and there > here:
                found.append((src, dst))
    return sorted(found)


def test_report_floors_point_down():
    assert floor_violations() == []
    # ... and the check can fail: read importing render, the ground importing compute.
    upward = {f"{REPORT}.read.merge": {f"{REPORT}.render.text"}, f"{REPORT}.model": {f"{REPORT}.compute.build"}}
    assert floor_violations(upward) == sorted((src, dst) for src, dsts in upward.items() for dst in dsts)


def main() -> int:
    edges = graph()
    problems = 0
    for component in cycles(edges, packages()):
        problems += 1
        print("cycle:", " <-> ".join(component))
        for src in component:
            inside = sorted(dst for dst in edges[src] if dst in component)
            print(f"    {src} -> {', '.join(inside)}")
    for src, dst in upward_imports(edges):
        problems += 1
        print(f"core imports an adapter: {src} -> {dst}")
    for name, line in named_adapters():
        problems += 1
        print(f"core names an adapter: {name}, line {line}")
    for src, dst in floor_violations(edges):
        problems += 1
        print(f"report imports up a floor: {src} -> {dst}")
    for name, n in long_files():
        problems += 1
        print(f"longer than {MAX_LINES} lines: {name} ({n})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
