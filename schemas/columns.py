"""The warehouse tables' columns as Arrow schemas: names, types and nullability, in file order.

This is what readers need (the catalog's typed views, visibility's schema checks) without importing pandas or
pandera, which take most of a second to import; the pandera models in ``schemas.tables`` add the value checks
that writers run, and a test keeps the two in agreement. The ``date`` partition is not a column: it is the hive
directory ``date=YYYY-MM-DD``.
"""

from __future__ import annotations

import pyarrow

STRING, INT64, FLOAT64, BOOL = pyarrow.string(), pyarrow.int64(), pyarrow.float64(), pyarrow.bool_()
UTC_TIME = pyarrow.timestamp("ns", tz="UTC")
NULLABLE = True


def _schema(*columns: tuple) -> pyarrow.Schema:
    """An Arrow schema from (name, type) and (name, type, NULLABLE) entries."""
    return pyarrow.schema([pyarrow.field(name, kind, nullable=bool(rest) and rest[0]) for name, kind, *rest in columns])


# One row per admitted environment.
ENVIRONMENTS = _schema(
    ("env_id", STRING),
    ("family", STRING),
    ("family_group", STRING),
    ("version", INT64),
    ("split", STRING),
    ("modes", STRING),
    ("size", INT64),
    ("horizon", INT64),
    ("domain", STRING),
    ("passage_id", STRING),
    ("title", STRING),
    ("setter", STRING),
    ("model", STRING, NULLABLE),
    ("tool_count", INT64),
    ("turn_budget", INT64),
    ("u_star", FLOAT64),
    ("u0", FLOAT64),
    ("u_idle", FLOAT64),
    ("online_u", FLOAT64, NULLABLE),
    ("online_score", FLOAT64, NULLABLE),
    ("tier", STRING, NULLABLE),  # easy | medium | hard | frontier (envs.difficulty); null before it existed
    ("informed_score", FLOAT64, NULLABLE),  # the informed agent's score: hidden mode's reachable ceiling
    ("heuristic_score", FLOAT64, NULLABLE),  # the best heuristic agent's score
    ("naive_score", FLOAT64, NULLABLE),  # the naive prober's score: verifies figures in listing order
    ("skill_gap", FLOAT64, NULLABLE),  # informed_score - naive_score: what choosing which figures to verify is worth
    ("facts_fit", FLOAT64, NULLABLE),  # the share of the probe calls that fit in the budget beside the plan
    ("attempts", INT64),
    ("llm_cost_usd", FLOAT64, NULLABLE),
    ("compute_seconds", FLOAT64),
    ("cost_usd", FLOAT64, NULLABLE),
    ("params_hash", STRING),
    ("tool_interface", STRING),  # md5 of the sorted tool names (schemas.envspec.tool_interface_of)
    ("story", STRING),  # the written prompt's first paragraph (schemas.envspec.story_of)
    ("spec_json", STRING),
    ("shard_key", STRING),
    ("run_id", STRING),
    ("created_at", UTC_TIME),
)
# Every render attempt, admitted or not.
ATTEMPTS = _schema(
    ("attempt_id", STRING),
    ("run_id", STRING),
    ("shard_key", STRING),
    ("family", STRING),
    ("instance_key", STRING),
    ("attempt", INT64),
    ("setter", STRING),
    ("model", STRING, NULLABLE),
    ("admitted", BOOL),
    ("reason", STRING, NULLABLE),
    ("env_id", STRING, NULLABLE),
    ("checks_json", STRING),
    ("seconds", FLOAT64),
    ("created_at", UTC_TIME),
)
# Every model call, with its tokens and cost (an unknown cost stays null).
LLM_CALLS = _schema(
    ("call_id", STRING),
    ("run_id", STRING),
    ("shard_key", STRING),
    ("instance_key", STRING),
    ("attempt", INT64),
    ("stage", STRING),
    ("model", STRING),
    ("prompt_tokens", INT64, NULLABLE),
    ("completion_tokens", INT64, NULLABLE),
    ("cost_usd", FLOAT64, NULLABLE),
    ("cost_source", STRING),
    ("latency_s", FLOAT64),
    ("cache_hit", BOOL),
    ("error", STRING, NULLABLE),
    ("created_at", UTC_TIME),
)
# One row per flow run.
RUNS = _schema(
    ("run_id", STRING),
    ("flow_run_id", STRING, NULLABLE),
    ("run_date", STRING),
    ("started_at", UTC_TIME),
    ("finished_at", UTC_TIME),
    ("parameters_json", STRING),
    ("requested", INT64),
    ("admitted", INT64),
    ("rejected", INT64),
    ("new_environments", INT64),
    ("llm_cost_usd", FLOAT64, NULLABLE),
    ("compute_seconds", FLOAT64),
    ("cost_usd", FLOAT64, NULLABLE),
    ("wall_seconds", FLOAT64),
    ("status", STRING),
    ("error", STRING, NULLABLE),
)
# One row per played episode: who played what, how it scored, what it cost, and the trajectory.
EVALUATIONS = _schema(
    ("evaluation_id", STRING),
    ("eval_run_id", STRING),
    ("env_id", STRING),
    ("family", STRING),
    ("mode", STRING),
    ("agent", STRING),
    ("model", STRING, NULLABLE),
    ("seed", INT64),
    ("score", FLOAT64, NULLABLE),  # null with u when the model kept failing (error says why): no score, not 0
    ("u", FLOAT64, NULLABLE),
    ("turns", INT64),
    ("tool_errors", INT64),
    ("llm_calls", INT64),
    ("prompt_tokens", INT64, NULLABLE),
    ("completion_tokens", INT64, NULLABLE),
    ("cost_usd", FLOAT64, NULLABLE),
    ("error", STRING, NULLABLE),
    ("trajectory_json", STRING),
    ("started_at", UTC_TIME),
    ("finished_at", UTC_TIME),
)

TABLE_SCHEMAS: dict[str, pyarrow.Schema] = {
    "environments": ENVIRONMENTS,
    "attempts": ATTEMPTS,
    "llm_calls": LLM_CALLS,
    "runs": RUNS,
    "evaluations": EVALUATIONS,
}
TABLES: tuple[str, ...] = tuple(TABLE_SCHEMAS)
# Columns renamed after files were written: table -> {old name: current name}. Writers write the current name; a
# file holding the old one is read as the current one (the catalog's views, `vhd warehouse check`, compaction,
# which rewrites it under the current name). environments.difficulty became tier: one word for the label
# easy | medium | hard | frontier across the warehouse, the exports, the Task API, the tasksets and the CLI.
RENAMED: dict[str, dict[str, str]] = {"environments": {"difficulty": "tier"}}
# The order rows are written in. An env_id starts with its family, so files sorted by it hold each family's rows
# in a few row groups: a query that filters on a family or looks up an id reads only those (Parquet statistics).
SORT_KEYS: dict[str, tuple[str, ...]] = {"environments": ("env_id",), "evaluations": ("env_id", "evaluation_id")}


def arrow_schema(table: str) -> pyarrow.Schema:
    """The Arrow schema a table is written with; KeyError naming the known tables for an unknown one."""
    try:
        return TABLE_SCHEMAS[table]
    except KeyError:
        raise KeyError(f"unknown table {table!r}; known tables: {', '.join(TABLES)}") from None
