"""No import circle: no two modules of the project import each other, directly or around a loop (issue 29).

tests/test_layers.py keeps the imports between packages pointing down; this keeps the modules of one package from
leaning on each other. A name two modules both need goes to a module that imports neither of them (cli.shared: the
parser's and the handlers' names; integrations.vf.state: the state the task reads and the toolset writes). Every
import counts, also one inside a function. `from package import name` is an import of the module package.name where
there is one, else of the package's __init__.
"""

from __future__ import annotations

import ast

from tests.test_layers import RANK, _modules

# circles of packages outside issue 29's item 4, known when it was fixed: each one left is to be broken, none added
KNOWN: set[tuple[str, ...]] = set()


def _graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (a package by its dotted name, not name.__init__)."""
    paths = {name.removesuffix(".__init__"): path for name, path in _modules().items() if name.split(".")[0] in RANK}
    graph: dict[str, set[str]] = {name: set() for name in paths}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names]
            else:
                continue
            for target in targets:
                found = known(target)
                if found is not None and found != module:
                    graph[module].add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_around_a_circle():
    graph = _graph()
    new = [circle for circle in circles(graph) if circle not in KNOWN]
    lines = [f"{' <-> '.join(circle)}: " + "; ".join(f"{m} imports {', '.join(sorted(graph[m] & set(circle)))}"
                                                  for m in circle) for circle in new]
    assert not new, ("modules that import each other (move what both need to a module that imports neither):\n"
                     + "\n".join(lines))
