"""The shape of runner/: no import cycle between its modules, and no module over MAX_LINES lines.

The import graph is read from the source with `ast` (nothing is imported): every `import runner...` and
`from runner... import ...` (or relative import), at module level or inside a function, is an edge.
`from runner.pkg import name` points at the submodule runner.pkg.name when there is one, else at the
package (its __init__). Importing a submodule does not add an edge to its parent package, so an __init__
that re-exports its own submodules is no cycle with them unless one of them imports the package back.
Imports under `if TYPE_CHECKING:` are left out: they never run, so they cannot form a runtime cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "runner"
MAX_LINES = 400


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # "runner/x.py:12: from runner.y import z", for the failure message


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runner_files(package: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of the tree, at any depth, except the bodies of `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the `else:` branch does run
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _existing(name: str, modules: set[str]) -> str | None:
    """`name` if it is a module of runner/, else its longest prefix that is one (None outside runner)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path = ROOT, package: str = "runner") -> tuple[set[str], list[Edge]]:
    files = runner_files(root / package)
    modules = {module_name(p, root) for p in files}
    edges: list[Edge] = []
    for path in files:
        source = module_name(path, root)
        is_package = path.name == "__init__.py"
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in _runtime_imports(ast.parse(text, filename=str(path))):
            where = f"{path.relative_to(root)}:{node.lineno}: {lines[node.lineno - 1].strip()}"
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_existing(alias.name, modules) for alias in node.names]
            else:
                if node.level:  # relative: resolved against the importing module's package
                    base = source.split(".")
                    if not is_package:
                        base = base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    base_name = ".".join(base + ([node.module] if node.module else []))
                else:
                    base_name = node.module or ""
                package = _existing(base_name, modules)
                for alias in node.names:
                    submodule = f"{base_name}.{alias.name}"
                    targets.append(submodule if submodule in modules else package)
            for target in dict.fromkeys(targets):
                if target is not None and target != source:
                    edges.append(Edge(source, target, where))
    return modules, edges


def find_cycles(modules: set[str], edges: list[Edge]) -> list[list[Edge]]:
    """One cycle (as the import statements that form it) per strongly connected component (Tarjan)."""
    adjacency: dict[str, list[Edge]] = {m: [] for m in modules}
    for edge in edges:
        adjacency[edge.source].append(edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in adjacency[node]:
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return [_cycle_in(component, adjacency) for component in components]


def _cycle_in(component: list[str], adjacency: dict[str, list[Edge]]) -> list[Edge]:
    """A shortest cycle through the component's first module, found breadth-first inside the component."""
    members = set(component)
    start = component[0]
    came_by: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in adjacency[node]:
                if edge.target not in members:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, came_by[path[0].source])
                    return path
                if edge.target not in came_by:
                    came_by[edge.target] = edge
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"no cycle in the component {component}")  # Tarjan guarantees one


def describe(cycle: list[Edge]) -> str:
    chain = " -> ".join([edge.source for edge in cycle] + [cycle[0].source])
    return "\n".join([chain] + [f"    {edge.where}" for edge in cycle])


def test_no_import_cycle_in_runner() -> None:
    modules, edges = import_graph()
    cycles = find_cycles(modules, edges)
    report = "\n".join(describe(cycle) for cycle in cycles)
    print(report)
    assert not cycles, f"{len(cycles)} import cycle(s) in runner/:\n{report}"


def test_no_module_over_max_lines() -> None:
    too_long = {}
    for path in runner_files():
        with path.open(encoding="utf-8") as handle:
            count = sum(1 for _ in handle)
        if count > MAX_LINES:
            too_long[str(path.relative_to(ROOT))] = count
    assert not too_long, f"modules over {MAX_LINES} lines (split them): {too_long}"


def test_the_graph_reader_resolves_imports(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "from pkg.sub import thing\n",  # re-export: no cycle with pkg.sub by itself
        "pkg/sub/__init__.py": "from .leaf import thing\n",
        "pkg/sub/leaf.py": "import json\nthing = 1\n",
        "pkg/sub/other.py": "from pkg.sub import leaf\nfrom pkg import sub\n",  # submodules, not packages
        "pkg/late.py": "def f():\n    from pkg.sub.leaf import thing\n    return thing\n",  # function-level
        "pkg/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.late\n",
        "pkg/back.py": "import pkg\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    modules, edges = import_graph(tmp_path, "pkg")
    assert modules == {"pkg", "pkg.sub", "pkg.sub.leaf", "pkg.sub.other", "pkg.late", "pkg.typed", "pkg.back"}
    assert sorted((e.source, e.target) for e in edges) == [
        ("pkg", "pkg.sub"), ("pkg.back", "pkg"), ("pkg.late", "pkg.sub.leaf"), ("pkg.sub", "pkg.sub.leaf"),
        ("pkg.sub.other", "pkg.sub"), ("pkg.sub.other", "pkg.sub.leaf"),
    ]
    assert find_cycles(modules, edges) == []
    # The package imported back by what it re-exports is a cycle, told with its import lines.
    (tmp_path / "pkg/sub/leaf.py").write_text("import json\nfrom pkg import back\nthing = 1\n")
    (tmp_path / "pkg/__init__.py").write_text("from pkg.sub import thing\nfrom pkg.sub.leaf import thing\n")
    cycles = find_cycles(*import_graph(tmp_path, "pkg"))
    assert [describe(cycle) for cycle in cycles] == [
        "pkg -> pkg.sub.leaf -> pkg.back -> pkg\n"
        "    pkg/__init__.py:2: from pkg.sub.leaf import thing\n"
        "    pkg/sub/leaf.py:2: from pkg import back\n"
        "    pkg/back.py:1: import pkg"
    ]
