"""Environments from the catalog: `load_env(env_id, mode)` for trainers, and SQL selections for evaluation.

The warehouse is read through its read-only query path (`warehouse.catalog.run_query`); the import is local so the
environment library itself stays usable without the factory's storage layer.
"""

from __future__ import annotations

import json
import re

from envs.environment import Environment
from schemas.envspec import DEFAULT_MODE, EnvSpec, Mode

_ENV_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class UnknownEnvironment(KeyError):
    """No environment of the catalog has this id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BadPredicate(ValueError):
    """A --where predicate that is not one SQL expression over the environments table."""


def _warehouse(warehouse):
    from warehouse.location import Warehouse, resolve_warehouse

    return warehouse if isinstance(warehouse, Warehouse) else resolve_warehouse(warehouse)


def load_spec(env_id: str, warehouse=None) -> EnvSpec:
    """The EnvSpec of one admitted environment; UnknownEnvironment if the catalog has no such id."""
    from warehouse.catalog import run_query

    if not isinstance(env_id, str) or not _ENV_ID.match(env_id):
        raise UnknownEnvironment(f"unknown environment id {env_id!r}; ids are letters, digits, '_', '.', '-'")
    table = run_query(_warehouse(warehouse), f"SELECT spec_json FROM environments WHERE env_id = '{env_id}' LIMIT 1")
    if table.num_rows == 0:
        raise UnknownEnvironment(f"unknown environment id {env_id!r}; "
                                 'list ids with: vhd query "SELECT env_id FROM environments"')
    return EnvSpec.model_validate_json(table.column("spec_json")[0].as_py())


def load_env(env_id: str, mode: Mode = DEFAULT_MODE, warehouse=None) -> Environment:
    """The playable Environment of a catalog entry in one mode (warehouse: a Warehouse, a location, or the default)."""
    return Environment(load_spec(env_id, warehouse), mode)


def check_predicate(predicate: str) -> str:
    """The predicate if it is one SQL expression usable as `WHERE (<predicate>)`; BadPredicate otherwise."""
    import duckdb

    if not isinstance(predicate, str) or not predicate.strip():
        raise BadPredicate("--where is empty; give one SQL condition, e.g. \"family = 'knapsack'\"")
    if ";" in predicate:
        raise BadPredicate("--where must be a single SQL expression (no ';'), e.g. \"family = 'knapsack'\"")
    sql = f"SELECT env_id FROM environments WHERE ({predicate})"
    tree = json.loads(duckdb.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    if tree.get("error"):
        raise BadPredicate(f"--where does not parse as SQL: {tree.get('error_message', 'syntax error')}")
    node = tree["statements"][0]["node"] if len(tree.get("statements", [])) == 1 else {}
    # anything that closes the parenthesis to add clauses (UNION, GROUP BY, LIMIT, ...) changes the query's shape
    if (node.get("type") != "SELECT_NODE" or node.get("modifiers") or node.get("group_expressions")
            or node.get("having") or len(node.get("select_list", [])) != 1
            or node.get("from_table", {}).get("table_name") != "environments"):
        raise BadPredicate("--where must be one SQL expression over the environments table's columns, "
                           "e.g. \"family = 'knapsack' AND size >= 8\"")
    return predicate


def select_specs(where: str = "true", limit: int | None = None, warehouse=None) -> list[EnvSpec]:
    """The EnvSpecs matching a SQL predicate over `environments`, in env_id order, at most `limit` of them."""
    from warehouse.catalog import run_query

    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be at least 1, got {limit}")
    sql = f"SELECT env_id, spec_json FROM environments WHERE ({check_predicate(where)}) ORDER BY env_id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    table = run_query(_warehouse(warehouse), sql)
    return [EnvSpec.model_validate_json(text) for text in table.column("spec_json").to_pylist()]
