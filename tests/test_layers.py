"""Imports point one way: down the layers of the code, never up (issue 17).

The layers, lowest first; a module may import from its own package and from lower layers only:

    platformkit, schemas         process helpers on the standard library alone (pids, ports, locks); the data's
                                 shapes (pydantic models, table schemas, the user-error type)
    mechanisms                   the families: sampling, solving, dynamics
    warehouse                    Parquet landing, commits, the catalog
    setter                       renderings of a solved instance (template, LLM client and budget)
    envs                         the runtime: environments, admission, difficulty, the catalog of landed ones
    evaluation, reports          libraries over envs and the warehouse: agent episodes, the HTML report
    tasks                        the Prefect tasks: the stages of generation, evaluation, reporting
    flows                        the Prefect flows that wire the tasks
    serving                      the session store and the HTTP and MCP servers over the environments
    integrations                 trainer adapters (the OpenEnv server is built on serving's session store)
    cli, vhdplay_catalog,        the command line, and the verifiers entry modules
      vhdplay_endless

Two packages of one layer do not import each other. Every import counts, also one inside a function: a lazy import
that points up is still a dependency that points up. A new package must be given its layer here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS: list[tuple[str, ...]] = [
    ("platformkit", "schemas"),
    ("mechanisms",),
    ("warehouse",),
    ("setter",),
    ("envs",),
    ("evaluation", "reports"),
    ("tasks",),
    ("flows",),
    ("serving",),
    ("integrations",),
    ("cli", "vhdplay_catalog", "vhdplay_endless"),
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    """Every module of the project's code, by top-level name: the packages' files and the top-level modules."""
    found = {}
    for path in sorted(ROOT.glob("*.py")):
        if path.stem in RANK:
            found[path.stem] = path
    for package in sorted(p.parent for p in ROOT.glob("*/__init__.py")):
        for path in sorted(package.rglob("*.py")):
            found[".".join(path.relative_to(ROOT).with_suffix("").parts)] = path
    return found


def _imported(module: str, path: Path, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, imported module) of every import in the module, relative ones resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                names.append((node.lineno, ".".join([*base, *([node.module] if node.module else [])])))
            else:
                names.append((node.lineno, node.module))
    return names


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    unplaced = sorted(packages - set(RANK))
    assert not unplaced, f"give these packages a layer in tests/test_layers.py: {unplaced}"


def test_no_import_points_up_the_layers():
    upward = []
    for module, path in _modules().items():
        own = module.split(".")[0]
        if own not in RANK:
            continue  # tests, benchmarks and scripts may import anything
        for line, imported in _imported(module, path, ast.parse(path.read_text(), str(path))):
            target = imported.split(".")[0]
            if target == own or target not in RANK:
                continue
            if RANK[target] >= RANK[own]:
                where = "up" if RANK[target] > RANK[own] else "across"
                upward.append(f"{path.relative_to(ROOT)}:{line}: {own} imports {imported} ({where} the layers)")
    assert not upward, "imports that point up or across the layers:\n" + "\n".join(upward)
