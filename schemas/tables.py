"""Pandera models of the warehouse tables (the value checks every written frame passes), and their empty frames.

The columns themselves (names, Arrow types, nullability) are declared in ``schemas.columns``, which readers import
without pandas or pandera; ``model_arrow_schema`` is what a model implies, and a test keeps the two equal. The
``date`` partition is not a column of any model: it is the hive directory ``date=YYYY-MM-DD``.
"""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa
import pyarrow
from pandera.typing import Series

from schemas.columns import TABLES, arrow_schema  # noqa: F401 - re-exported for writers

COST_SOURCES = ("provider", "price_map", "custom", "cache", "unknown")
RUN_STATUSES = ("completed", "failed", "partial")
_UTC = {"unit": "ns", "tz": "UTC"}


class EnvironmentsModel(pa.DataFrameModel):
    """One row per admitted environment."""

    env_id: Series[str] = pa.Field(unique=True)
    family: Series[str]
    family_group: Series[str]  # trained | near_ood | far_ood_structure | far_ood_probe | external
    version: Series[int]
    split: Series[str]
    modes: Series[str]
    size: Series[int] = pa.Field(ge=1)
    horizon: Series[int] = pa.Field(ge=1)
    domain: Series[str]
    passage_id: Series[str]
    title: Series[str]
    setter: Series[str]
    model: Series[str] = pa.Field(nullable=True)
    tool_count: Series[int] = pa.Field(ge=10)
    turn_budget: Series[int] = pa.Field(ge=1)
    u_star: Series[float]
    u0: Series[float]
    u_idle: Series[float]
    # the optimal online policy under a hindsight ceiling (sequential families; null elsewhere)
    online_u: Series[float] = pa.Field(nullable=True)
    online_score: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    tier: Series[str] = pa.Field(nullable=True, isin=["easy", "medium", "hard", "frontier"])
    informed_score: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    heuristic_score: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    naive_score: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    skill_gap: Series[float] = pa.Field(nullable=True, ge=-1, le=1)
    facts_fit: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    attempts: Series[int] = pa.Field(ge=1)
    llm_cost_usd: Series[float] = pa.Field(nullable=True, ge=0)  # null = unknown, never 0
    compute_seconds: Series[float] = pa.Field(ge=0)
    cost_usd: Series[float] = pa.Field(nullable=True, ge=0)
    params_hash: Series[str]
    # derived from spec_json when landed, so reports need not parse it (files written before these columns
    # existed get them from spec_json: the catalog's views derive them, compaction writes them)
    tool_interface: Series[str] = pa.Field(str_length={"min_value": 32, "max_value": 32})
    story: Series[str]
    spec_json: Series[str]
    shard_key: Series[str]
    run_id: Series[str]
    created_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)

    class Config:
        strict = True
        coerce = True


class AttemptsModel(pa.DataFrameModel):
    """Every render attempt, admitted or not."""

    attempt_id: Series[str] = pa.Field(unique=True)
    run_id: Series[str]
    shard_key: Series[str]
    family: Series[str]
    instance_key: Series[str]
    attempt: Series[int] = pa.Field(ge=1)
    setter: Series[str]
    model: Series[str] = pa.Field(nullable=True)
    admitted: Series[pd.BooleanDtype]  # nullable dtype so a null is refused, not coerced to False
    reason: Series[str] = pa.Field(nullable=True)
    env_id: Series[str] = pa.Field(nullable=True)
    checks_json: Series[str]
    seconds: Series[float] = pa.Field(ge=0)
    created_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)

    class Config:
        strict = True
        coerce = True


class LlmCallsModel(pa.DataFrameModel):
    """Every model call, with its tokens and cost (an unknown cost stays null)."""

    call_id: Series[str] = pa.Field(unique=True)
    run_id: Series[str]
    shard_key: Series[str]
    instance_key: Series[str]
    attempt: Series[int] = pa.Field(ge=1)
    stage: Series[str]
    model: Series[str]
    prompt_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    completion_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    cost_usd: Series[float] = pa.Field(nullable=True, ge=0)
    cost_source: Series[str] = pa.Field(isin=COST_SOURCES)
    latency_s: Series[float] = pa.Field(ge=0)
    cache_hit: Series[pd.BooleanDtype]
    error: Series[str] = pa.Field(nullable=True)
    created_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)

    @pa.dataframe_check(error="cost_usd must be null when cost_source is 'unknown'")
    def unknown_cost_is_null(cls, df: pd.DataFrame) -> Series[bool]:
        """An unknown cost is never written as a number."""
        return ~((df["cost_source"] == "unknown") & df["cost_usd"].notna())

    class Config:
        strict = True
        coerce = True


class RunsModel(pa.DataFrameModel):
    """One row per flow run."""

    run_id: Series[str] = pa.Field(unique=True)
    flow_run_id: Series[str] = pa.Field(nullable=True)
    run_date: Series[str] = pa.Field(str_matches=r"^\d{4}-\d{2}-\d{2}$")
    started_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)
    finished_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)
    parameters_json: Series[str]
    requested: Series[int] = pa.Field(ge=0)
    admitted: Series[int] = pa.Field(ge=0)
    rejected: Series[int] = pa.Field(ge=0)
    new_environments: Series[int] = pa.Field(ge=0)
    llm_cost_usd: Series[float] = pa.Field(nullable=True, ge=0)
    compute_seconds: Series[float] = pa.Field(ge=0)
    cost_usd: Series[float] = pa.Field(nullable=True, ge=0)
    wall_seconds: Series[float] = pa.Field(ge=0)
    status: Series[str] = pa.Field(isin=RUN_STATUSES)
    error: Series[str] = pa.Field(nullable=True)

    class Config:
        strict = True
        coerce = True


class EvaluationsModel(pa.DataFrameModel):
    """One row per played episode: who played what, how it scored, what it cost, and the trajectory."""

    evaluation_id: Series[str] = pa.Field(unique=True)
    eval_run_id: Series[str]
    env_id: Series[str]
    family: Series[str]
    mode: Series[str] = pa.Field(isin=("written", "revealed", "hidden"))
    agent: Series[str]
    model: Series[str] = pa.Field(nullable=True)  # the litellm model; null for a baseline agent
    seed: Series[int]
    score: Series[float] = pa.Field(ge=0, le=1, nullable=True)  # null with u when the model kept failing (error)
    u: Series[float] = pa.Field(nullable=True)
    turns: Series[int] = pa.Field(ge=0)
    tool_errors: Series[int] = pa.Field(ge=0)
    llm_calls: Series[int] = pa.Field(ge=0)
    prompt_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    completion_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    cost_usd: Series[float] = pa.Field(nullable=True, ge=0)  # null = unknown, never 0
    error: Series[str] = pa.Field(nullable=True)  # why the episode stopped early (a model that kept failing)
    trajectory_json: Series[str]
    started_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)
    finished_at: Series[pd.DatetimeTZDtype] = pa.Field(dtype_kwargs=_UTC)

    class Config:
        strict = True
        coerce = True


TABLE_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "environments": EnvironmentsModel,
    "attempts": AttemptsModel,
    "llm_calls": LlmCallsModel,
    "runs": RunsModel,
    "evaluations": EvaluationsModel,
}


def table_model(table: str) -> type[pa.DataFrameModel]:
    """The pandera model of a table; KeyError naming the known tables for an unknown one."""
    try:
        return TABLE_MODELS[table]
    except KeyError:
        raise KeyError(f"unknown table {table!r}; known tables: {', '.join(TABLES)}") from None


def empty_frame(table: str) -> pd.DataFrame:
    """A zero-row frame with the table's columns and dtypes."""
    schema = table_model(table).to_schema()
    return schema.coerce_dtype(pd.DataFrame({name: pd.Series([], dtype=object) for name in schema.columns}))


def _arrow_type(dtype: object) -> pyarrow.DataType:
    """The Arrow type written for one pandas dtype of a table model."""
    if isinstance(dtype, pd.DatetimeTZDtype):
        return pyarrow.timestamp("ns", tz="UTC")
    if pd.api.types.is_bool_dtype(dtype):
        return pyarrow.bool_()
    if pd.api.types.is_integer_dtype(dtype):
        return pyarrow.int64()
    if pd.api.types.is_float_dtype(dtype):
        return pyarrow.float64()
    if pd.api.types.is_string_dtype(dtype):
        return pyarrow.string()
    raise TypeError(f"no Arrow type for pandas dtype {dtype!r}")


def model_arrow_schema(table: str) -> pyarrow.Schema:
    """The Arrow schema a table's pandera model implies (``schemas.columns`` must declare the same)."""
    schema = table_model(table).to_schema()
    frame = empty_frame(table)
    fields = [
        pyarrow.field(name, _arrow_type(frame[name].dtype), nullable=column.nullable)
        for name, column in schema.columns.items()
    ]
    return pyarrow.schema(fields)
