"""No import cycles among the modules of ``arena`` and of the plugin packages under ``plugins/*/``.

Imports point one way: cli -> tournament / training / match -> agents / plugins -> env. A cycle works
only as long as every module in it imports the others late enough (inside a function, or after the
names the other side needs), and breaks the day someone moves an import to the top.

The graph is read from the source with ``ast``, nothing is imported: an import counts wherever it is
(module level or inside a function or class) except under ``if TYPE_CHECKING:``, which never runs.
``import a.b.c`` and ``from a.b import c`` (``c`` a module) point at ``a.b.c`` alone: Python runs the
``__init__`` of ``a`` and ``a.b`` on the way, but a package's ``__init__`` and its submodules form a
cycle only when the submodule really imports from the ``__init__`` (``from a.b import name``, ``name``
not a module) while the ``__init__`` imports it.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Import:
    """One import statement of ``source`` that reaches ``target`` (both module names)."""

    source: str
    target: str
    path: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} -> {self.target}: {self.text}"


def package_dirs(root: Path = ROOT) -> list[Path]:
    """``arena`` and every plugin's top-level package (a folder with an ``__init__.py`` in ``plugins/*/``)."""
    found = [root / "arena"]
    for plugin in sorted((root / "plugins").glob("*/")):
        found += [p.parent for p in sorted(plugin.glob("*/__init__.py")) if p.parent.name != "tests"]
    return found


def modules_of(packages: list[Path]) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file of ``packages`` (a package is its ``__init__``)."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            parts = [package.name, *path.relative_to(package).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` that can run: all but those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            todo.extend(node.orelse)  # the ``else:`` branch runs
        else:
            todo.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: n.lineno)


def known(name: str, modules: dict[str, Path]) -> str | None:
    """``name``, or the closest package above it that is one of ``modules``; None for outside modules."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
            modules: dict[str, Path]) -> list[str]:
    """The modules of ``modules`` that import statement ``node`` in ``module`` reaches."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the package of ``module`` (itself, for an __init__), then up
            package = module.split(".")
            if not is_package:
                package.pop()
            package = package[:len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        # ``from pkg import name``: the submodule ``pkg.name`` when there is one, else ``pkg`` itself.
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    reached = [known(name, modules) for name in names]
    return sorted({t for t in reached if t is not None and t != module})


def import_graph(packages: list[Path]) -> dict[str, list[Import]]:
    """Module -> the imports by which it reaches other modules of ``packages``."""
    modules = modules_of(packages)
    graph: dict[str, list[Import]] = {}
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        edges = graph.setdefault(module, [])
        for node in runtime_imports(ast.parse(source, str(path))):
            text = " ".join(lines[node.lineno - 1].split())
            for target in targets(node, module, path.name == "__init__.py", modules):
                edges.append(Import(module, target, shown, node.lineno, text))
    return graph


def cycles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for edge in graph.get(v, []):
            w = edge.target
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def describe(graph: dict[str, list[Import]], component: list[str]) -> str:
    """A cycle: its modules, then each import that links two of them."""
    members = set(component)
    links = [str(e) for m in component for e in graph[m] if e.target in members]
    return " <-> ".join(component) + "\n" + "\n".join(f"    {link}" for link in links)


def test_arena_and_the_plugins_have_no_import_cycles():
    packages = package_dirs()
    assert len(packages) > 1, f"expected arena and the plugin packages, found {packages}"
    graph = import_graph(packages)
    assert "arena.cli" in graph and "arena.env" in graph
    found = cycles(graph)
    assert not found, (f"{len(found)} import cycle(s); make the imports point one way "
                       f"(cli -> tournament/training/match -> agents/plugins -> env):\n\n"
                       + "\n\n".join(describe(graph, c) for c in found))


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_cycle_finder_finds_what_runs_and_only_that(tmp_path):
    write(tmp_path, {
        "fake/__init__.py": """
            from fake.a import A  # the package's own submodules: no cycle by themselves
            from fake import sub
            """,
        "fake/a.py": """
            import os

            def late():
                from fake.b import B  # inside a function: counts
            A = 1
            """,
        "fake/b.py": """
            from typing import TYPE_CHECKING

            from . import a  # relative, and a module: fake.a
            if TYPE_CHECKING:
                from fake.c import C  # never runs: no edge
            else:
                import fake.d  # runs
            B = 2
            """,
        "fake/c.py": "import fake.b\n",
        "fake/d.py": "X = 1\n",
        "fake/sub/__init__.py": "from fake.sub.leaf import LEAF\n",
        "fake/sub/leaf.py": "from fake import A\nLEAF = A  # from the package's __init__: a real edge back\n",
    })
    graph = import_graph([tmp_path / "fake"])
    assert {e.target for e in graph["fake.b"]} == {"fake.a", "fake.d"}
    assert {e.target for e in graph["fake"]} == {"fake.a", "fake.sub"}
    found = cycles(graph)
    assert found == [["fake", "fake.sub", "fake.sub.leaf"], ["fake.a", "fake.b"]]
    text = describe(graph, found[1])
    assert text.startswith("fake.a <-> fake.b\n")
    assert "a.py:5: fake.a -> fake.b: from fake.b import B" in text
    assert "b.py:4: fake.b -> fake.a: from . import a" in text
