"""No import cycles among the modules of ``arena`` and of the plugin packages under ``plugins/*/``, none
among arena's top-level packages and modules, and no import that runs back up arena's layers.

Imports point one way: cli -> training -> tournament / match -> agents / plugins -> env (:data:`LAYERS`
says where every top-level module of arena stands). A cycle works only as long as every module in it
imports the others late enough (inside a function, or after the names the other side needs), and
breaks the day someone moves an import to the top. Two packages that import each other form a circle
even when no two of their modules do (``tournament.over_training`` once imported ``training.best``,
whose ``training.evaluation`` imports ``tournament.ratings``), so the packages are checked too.

The graph is read from the source with ``ast``, nothing is imported: an import counts wherever it is,
at module level, inside a function or class, and under ``if TYPE_CHECKING:`` as well. A type-only
import never runs, but a cycle through one still ties the modules together: neither can be read or
checked without the other, and the day one needs the name at run time (an ``isinstance``, a default)
the cycle is a real one. Where two modules share a type, it goes in a module below both.

``import a.b.c`` and ``from a.b import c`` (``c`` a module) point at ``a.b.c`` alone: Python runs the
``__init__`` of ``a`` and ``a.b`` on the way, but a package's ``__init__`` and its submodules form a
cycle only when the submodule really imports from the ``__init__`` (``from a.b import name``, ``name``
not a module) while the ``__init__`` imports it.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# arena's top-level packages and modules, top layer first. An import may point at its own layer or one
# below, never up. The interfaces to other RL libraries (arena.wrappers) stand above training and share
# the learner's side of a battle with it (arena.battles, at the game loop's level). The training
# package rates on the tournament's scale (training.evaluation imports tournament.ratings), so it
# stands above the tournament, which reads a run's files only through arena.run_files. The plugin
# packages (plugins/*/arena_*) stand above all of arena: arena finds them through entry points and
# never imports one. A new top-level module of arena has to be placed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("arena.__main__", "arena.cli", "arena.export"),
    ("arena.wrappers",),
    ("arena.training",),
    ("arena.tournament", "arena.match", "arena.replay", "arena.testing"),
    ("arena.agents", "arena.agent_calls", "arena.battles", "arena.families", "arena.loop", "arena.parties",
     "arena.plugins"),
    ("arena.env",),
    ("arena", "arena.declared_settings", "arena.errors", "arena.folder_lock", "arena.guard", "arena.output_files",
     "arena.progress",
     "arena.run_files", "arena.seeds", "arena.threads", "arena.torchfile", "arena.yaml_file"),
)


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


def all_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, wherever it is (``if TYPE_CHECKING:`` included), in line order."""
    found = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
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
        for node in all_imports(ast.parse(source, str(path))):
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


def unit(module: str, main: str = "arena") -> str:
    """The top-level package or module of ``main`` that ``module`` belongs to (``arena.training.best`` ->
    ``arena.training``; ``arena`` itself is its ``__init__``); a plugin's modules are its package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == main else parts[0]


def package_graph(graph: dict[str, list[Import]], main: str = "arena") -> dict[str, list[Import]]:
    """``graph`` with each module merged into its :func:`unit`: the imports between different units."""
    merged: dict[str, list[Import]] = {}
    for module, edges in graph.items():
        source = unit(module, main)
        merged.setdefault(source, [])
        for edge in edges:
            target = unit(edge.target, main)
            if target != source:
                merged[source].append(replace(edge, source=source, target=target))
    return merged


def unplaced(graph: dict[str, list[Import]], layers: tuple[tuple[str, ...], ...], main: str = "arena"
             ) -> list[str]:
    """The units of ``main`` that no layer names."""
    placed = {name for layer in layers for name in layer}
    return sorted({unit(m, main) for m in graph if unit(m, main).split(".")[0] == main} - placed)


def upward_imports(graph: dict[str, list[Import]], layers: tuple[tuple[str, ...], ...], main: str = "arena"
                   ) -> list[Import]:
    """The imports of ``graph`` that point at a higher layer than their own (``layers`` top first); the
    units outside ``main`` (plugin packages) stand above every layer."""
    rank = {name: i for i, layer in enumerate(layers) for name in layer}

    def level(module: str) -> int:
        name = unit(module, main)
        return rank.get(name, len(layers)) if name.split(".")[0] == main else -1

    return [edge for edges in graph.values() for edge in edges if level(edge.target) < level(edge.source)]


def test_arena_and_the_plugins_have_no_import_cycles():
    packages = package_dirs()
    assert len(packages) > 1, f"expected arena and the plugin packages, found {packages}"
    graph = import_graph(packages)
    assert "arena.cli" in graph and "arena.env" in graph
    found = cycles(graph)
    assert not found, (f"{len(found)} import cycle(s); make the imports point one way "
                       f"(cli -> training -> tournament / match -> agents / plugins -> env):\n\n"
                       + "\n\n".join(describe(graph, c) for c in found))


def test_arenas_packages_do_not_import_each_other_both_ways():
    graph = package_graph(import_graph(package_dirs()))
    assert "arena.tournament" in graph and "arena.training" in graph and "arena_ppo" in graph
    found = cycles(graph)
    assert not found, (f"{len(found)} circle(s) among arena's packages; move what both sides need into a "
                       f"module below them:\n\n" + "\n\n".join(describe(graph, c) for c in found))


def test_no_import_runs_up_arenas_layers():
    # Each strictly above the next: the command line, training, the tournament, the agents, the env.
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    order = ["arena.cli", "arena.training", "arena.tournament", "arena.agents", "arena.env"]
    assert [rank[name] for name in order] == sorted({rank[name] for name in order})
    graph = import_graph(package_dirs())
    missing = unplaced(graph, LAYERS)
    assert not missing, f"place these modules of arena in LAYERS (top layer first): {missing}"
    found = upward_imports(graph, LAYERS)
    assert not found, (f"{len(found)} import(s) point up the layers (top first: "
                       f"{' / '.join(', '.join(layer) for layer in LAYERS)}):\n"
                       + "\n".join(f"    {edge}" for edge in found))


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_cycle_finder_counts_every_import(tmp_path):
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
                from fake.c import C  # type-only: counts too
            else:
                import fake.d
            B = 2
            """,
        "fake/c.py": "import fake.b\n",
        "fake/d.py": "X = 1\n",
        "fake/sub/__init__.py": "from fake.sub.leaf import LEAF\n",
        "fake/sub/leaf.py": "from fake import A\nLEAF = A  # from the package's __init__: a real edge back\n",
    })
    graph = import_graph([tmp_path / "fake"])
    assert {e.target for e in graph["fake.b"]} == {"fake.a", "fake.c", "fake.d"}
    assert {e.target for e in graph["fake"]} == {"fake.a", "fake.sub"}
    found = cycles(graph)
    assert found == [["fake", "fake.sub", "fake.sub.leaf"], ["fake.a", "fake.b", "fake.c"]]
    text = describe(graph, found[1])
    assert text.startswith("fake.a <-> fake.b <-> fake.c\n")
    assert "a.py:5: fake.a -> fake.b: from fake.b import B" in text
    assert "b.py:4: fake.b -> fake.a: from . import a" in text
    assert "b.py:6: fake.b -> fake.c: from fake.c import C" in text


def test_the_layer_check_finds_packages_in_a_circle_and_imports_up(tmp_path):
    write(tmp_path, {
        "fake/__init__.py": "",
        "fake/top.py": "T = 1\n",
        "fake/mid/__init__.py": "",
        "fake/mid/y.py": """
            from fake import low  # down: fine

            def late():
                import fake.top  # up, however late
            """,
        "fake/low/__init__.py": "",
        "fake/low/x.py": """
            X = 1

            def late():
                from fake.mid.y import late  # up: fake.low and fake.mid import each other
            """,
        "fake/low/z.py": "import fakeplug\n",  # the main package imports a plugin: up
        "fake/stray.py": "",
        "fakeplug/__init__.py": "from fake.top import T\n",  # a plugin imports the main package: down
    })
    graph = import_graph([tmp_path / "fake", tmp_path / "fakeplug"])
    packages = package_graph(graph, "fake")
    assert {e.target for e in packages["fake.low"]} == {"fake.mid", "fakeplug"}
    assert cycles(packages) == [["fake.low", "fake.mid"]]
    layers = (("fake.top",), ("fake.mid",), ("fake.low", "fake"))
    assert unplaced(graph, layers, "fake") == ["fake.stray"]
    up = upward_imports(graph, layers, "fake")
    assert sorted((e.source, e.target, e.line) for e in up) == [
        ("fake.low.x", "fake.mid.y", 5), ("fake.low.z", "fakeplug", 1), ("fake.mid.y", "fake.top", 5)]
