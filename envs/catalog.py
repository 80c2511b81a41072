"""Environments from the catalog: `load_env(env_id, mode)` for trainers, and SQL selections for evaluation.

The warehouse is read through its read-only query path (`warehouse.catalog.run_query`); the import is local so the
environment library itself stays usable without the factory's storage layer.
"""

from __future__ import annotations

import hashlib
import json
import re

from envs.environment import Environment
from schemas.envspec import DEFAULT_MODE, MAX_SPEC_JSON_CHARS, EnvSpec, Mode
from schemas.errors import UserError, validation_line

_ENV_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class UnknownEnvironment(UserError, KeyError):
    """No environment of the catalog has this id (a KeyError too, for the callers that look ids up)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BadPredicate(UserError):
    """A --where predicate that is not one SQL expression over the environments table."""


def _warehouse(warehouse):
    from warehouse.location import Warehouse, resolve_warehouse

    return warehouse if isinstance(warehouse, Warehouse) else resolve_warehouse(warehouse)


def not_found(env_id: str) -> UnknownEnvironment:
    """The error of an id the catalog (or a server's selection: a served subset is the whole world) does not hold."""
    return UnknownEnvironment(f"unknown environment id {env_id!r}; "
                              'list ids with: vhd query "SELECT env_id FROM environments"')


def load_spec(env_id: str, warehouse=None, where: str = "true") -> EnvSpec:
    """The EnvSpec of one admitted environment; UnknownEnvironment if the catalog has no such id, or if `where` (a
    SQL predicate over `environments`: a server's selection) leaves it out, with the same message either way."""
    from warehouse.catalog import run_query

    if not isinstance(env_id, str) or not _ENV_ID.match(env_id):
        raise UnknownEnvironment(f"unknown environment id {env_id!r}; ids are letters, digits, '_', '.', '-'")
    scope = "" if where == "true" else f" AND ({check_predicate(where)})"
    table = run_query(_warehouse(warehouse),
                      f"SELECT {SPEC_COLUMNS} FROM environments WHERE env_id = '{env_id}'{scope} LIMIT 1")
    if table.num_rows == 0:
        raise not_found(env_id)
    return landed_spec(env_id, table.column("spec_json")[0].as_py(), table.column("spec_chars")[0].as_py())


# a row's spec text and its length, measured in SQL: a text over the limit is never brought out of DuckDB
SPEC_COLUMNS = (f"CASE WHEN length(spec_json) <= {MAX_SPEC_JSON_CHARS} THEN spec_json END AS spec_json, "
                "length(spec_json) AS spec_chars")


def landed_spec(env_id: str, spec_json: str | None, chars: int | None = None) -> EnvSpec:
    """The spec a catalog row holds, refused in one line when it no longer hashes to the row's id (edited after
    landing: it would be served under an id that is not its own), does not parse, is longer than
    MAX_SPEC_JSON_CHARS (checked before it is parsed; `chars`: its length as SQL measured it, the text itself left
    out (None) when over), or is of a family this vhd does not know. Landing stores the canonical JSON, so the
    stored text's hash is checked first; a spec stored in another key order is parsed and hashed."""
    import hashlib

    edited = (f"environment {env_id}'s stored spec was edited after landing (it {{}}); `vhd warehouse check` lists "
              "such rows: restore the file, or land the run again")
    chars = len(spec_json) if spec_json is not None else chars
    if chars is None:
        raise UserError(edited.format("is empty"))
    if chars > MAX_SPEC_JSON_CHARS:
        raise UserError(edited.format(f"is {chars:,} characters, over the limit of {MAX_SPEC_JSON_CHARS:,}; no "
                                      "real environment comes near it"))
    try:
        spec = EnvSpec.model_validate_json(spec_json)
    except ValueError as error:  # pydantic's several lines: one here
        raise UserError(edited.format(f"does not parse as a spec: {validation_line(error)}")) from None
    family = env_id.rsplit("-", 1)[0]
    if f"{family}-{hashlib.sha256(spec_json.encode()).hexdigest()[:16]}" != env_id and spec.env_id != env_id:
        raise UserError(edited.format(f"hashes to {spec.env_id}"))
    return _known_family(env_id, spec)


def _known_family(env_id: str, spec: EnvSpec) -> EnvSpec:
    """The spec, if this vhd has its family; else one line (a row landed by a newer vhd, or edited)."""
    import mechanisms

    try:
        mechanisms.get(spec.family)
    except mechanisms.UnknownFamilyError:
        known = ", ".join(m.id for m in mechanisms.families())
        raise UserError(f"environment {env_id} is of family {spec.family!r}, which this vhd does not know (it knows "
                        f"{known}): upgrade vhd if a newer one landed it, else the row was edited; `vhd warehouse "
                        "check` lists such rows") from None
    return spec


def selected_count(where: str = "true", warehouse=None) -> int:
    """How many environments a SQL predicate over `environments` selects: BadPredicate for one that is not one
    expression, QueryError (one line) for one the catalog cannot run (a column it lacks)."""
    from warehouse.catalog import run_query

    sql = f"SELECT count(*) AS n FROM environments WHERE ({check_predicate(where)})"
    return int(run_query(_warehouse(warehouse), sql).column("n")[0].as_py())


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


def sample_ids(members: list[tuple[str, str]], limit: int, seed: int = 0) -> list[str]:
    """A seeded sample of `limit` env ids out of (env_id, family) pairs, stratified by family: the families in a
    seeded order take turns (round-robin), each giving its next environment in a seeded order, so a limit of at
    least the number of families holds every family. The same pairs and seed give the same sample, in draw order;
    the order is a SHA-256 of the seed and the name, the same on every machine and version."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"the sample seed must be an integer, got {seed!r}")

    def key(*parts: object) -> bytes:
        return hashlib.sha256(":".join(map(str, parts)).encode()).digest()

    families: dict[str, list[str]] = {}
    for env_id, family in members:
        families.setdefault(family, []).append(env_id)
    queues = [sorted(ids, key=lambda env_id: key(seed, "env", env_id))
              for _, ids in sorted(families.items(), key=lambda item: key(seed, "family", item[0]))]
    drawn: list[str] = []
    for turn in range(max(map(len, queues), default=0)):
        drawn.extend(queue[turn] for queue in queues if turn < len(queue))
    return drawn[:limit]


def select_specs(where: str = "true", limit: int | None = None, warehouse=None, seed: int = 0) -> list[EnvSpec]:
    """The EnvSpecs matching a SQL predicate over `environments`: all of them in env_id order, or with `limit` a
    seeded sample of at most `limit` (`sample_ids`: stratified by family, the same for one seed, in draw order)."""
    from warehouse.catalog import run_query

    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"--seed must be an integer, got {seed!r}")
    wh, predicate = _warehouse(warehouse), check_predicate(where)
    if limit is None:
        table = run_query(wh, f"SELECT env_id, {SPEC_COLUMNS} FROM environments WHERE ({predicate}) ORDER BY env_id")
        return [landed_spec(env_id, text, chars) for env_id, text, chars in
                zip(table.column("env_id").to_pylist(), table.column("spec_json").to_pylist(),
                    table.column("spec_chars").to_pylist(), strict=True)]
    members = run_query(wh, f"SELECT DISTINCT env_id, family FROM environments WHERE ({predicate})")
    pairs = zip(members.column("env_id").to_pylist(), members.column("family").to_pylist(), strict=True)
    drawn = sample_ids(list(pairs), int(limit), seed)
    if not drawn:
        return []
    if not all(_ENV_ID.match(env_id) for env_id in drawn):  # ids are quoted into the query below
        raise UserError("the catalog holds an env id that is not letters, digits, '_', '.', '-'; check the warehouse")
    quoted = ", ".join(f"'{env_id}'" for env_id in drawn)
    table = run_query(wh, f"SELECT env_id, {SPEC_COLUMNS} FROM environments WHERE env_id IN ({quoted})")
    specs = {env_id: (text, chars) for env_id, text, chars in
             zip(table.column("env_id").to_pylist(), table.column("spec_json").to_pylist(),
                 table.column("spec_chars").to_pylist(), strict=True)}
    return [landed_spec(env_id, *specs[env_id]) for env_id in drawn if env_id in specs]
