"""Table models: columns, empty frames and Arrow write schemas agree."""

from __future__ import annotations

import pandas as pd
import pandera.errors
import pyarrow
import pytest

from schemas.columns import TABLE_SCHEMAS
from schemas.tables import COST_SOURCES, TABLE_MODELS, TABLES, arrow_schema, empty_frame, model_arrow_schema

EXPECTED_TYPES = {"string", "int64", "double", "bool", "timestamp[ns, tz=UTC]"}


def test_tables_are_the_five_models():
    assert TABLES == ("environments", "attempts", "llm_calls", "runs", "evaluations")
    assert tuple(TABLE_MODELS) == TABLES == tuple(TABLE_SCHEMAS)


@pytest.mark.parametrize("table", TABLES)
def test_declared_columns_are_what_the_model_implies(table):
    """schemas.columns (what readers use) and the pandera model (what writers check) name the same columns,
    in the same order, with the same types and nullability."""
    assert arrow_schema(table).equals(model_arrow_schema(table))
    assert [(f.name, f.nullable) for f in arrow_schema(table)] == \
        [(f.name, f.nullable) for f in model_arrow_schema(table)]


def test_readers_import_neither_pandas_nor_pandera():
    """`vhd query` starts fast: the catalog's import chain stays free of pandas and pandera."""
    import subprocess
    import sys

    code = ("import sys, warehouse.catalog, warehouse.maintenance, warehouse.visibility, warehouse.index, cli.main; "
            "print(sorted(m for m in ('pandas', 'pandera', 'dask', 'prefect') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("table", TABLES)
def test_empty_frame_matches_arrow_schema(table):
    frame = empty_frame(table)
    schema = arrow_schema(table)
    assert len(frame) == 0
    assert list(frame.columns) == schema.names
    assert "date" not in schema.names  # the partition lives in the directory name
    assert {str(field.type) for field in schema} <= EXPECTED_TYPES
    assert TABLE_MODELS[table].validate(frame).shape == (0, len(schema.names))
    converted = pyarrow.Table.from_pandas(frame, schema=schema, preserve_index=False)
    assert converted.schema.equals(schema)


def test_nullability_as_specified():
    nullable = {table: {field.name for field in arrow_schema(table) if field.nullable} for table in TABLES}
    assert nullable["environments"] == {"model", "llm_cost_usd", "cost_usd", "online_u", "online_score", "tier",
                                        "informed_score", "heuristic_score", "naive_score", "skill_gap", "facts_fit"}
    assert nullable["attempts"] == {"model", "reason", "env_id"}
    assert nullable["llm_calls"] == {"prompt_tokens", "completion_tokens", "cost_usd", "error"}
    assert nullable["runs"] == {"flow_run_id", "llm_cost_usd", "cost_usd", "error"}


def test_specific_types():
    calls = arrow_schema("llm_calls")
    assert str(calls.field("prompt_tokens").type) == "int64"
    assert str(calls.field("cache_hit").type) == "bool"
    assert str(arrow_schema("runs").field("finished_at").type) == "timestamp[ns, tz=UTC]"
    assert str(arrow_schema("environments").field("u_star").type) == "double"


def _run(**overrides):
    now = pd.Timestamp("2025-03-01", tz="UTC")
    row = {
        "run_id": "r",
        "flow_run_id": None,
        "run_date": "2025-03-01",
        "started_at": now,
        "finished_at": now,
        "parameters_json": "{}",
        "requested": 3,
        "admitted": 2,
        "rejected": 1,
        "new_environments": 2,
        "llm_cost_usd": None,
        "compute_seconds": 1.0,
        "cost_usd": None,
        "wall_seconds": 2.0,
        "status": "completed",
        "error": None,
    }
    return pd.DataFrame([{**row, **overrides}])


def test_runs_model_checks():
    assert len(TABLE_MODELS["runs"].validate(_run())) == 1
    for bad in (_run(status="running"), _run(run_date="01/03/2025"), _run(requested=-1), _run(extra=1)):
        with pytest.raises((pandera.errors.SchemaError, pandera.errors.SchemaErrors)):
            TABLE_MODELS["runs"].validate(bad)


def test_cost_sources():
    assert COST_SOURCES == ("provider", "price_map", "custom", "cache", "unknown")


def test_unknown_table():
    with pytest.raises(KeyError, match="unknown table"):
        arrow_schema("nope")
