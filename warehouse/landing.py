"""Landing: validate a shard's frame with its table's pandera model and write it atomically as Parquet.

Commit markers, which make landed files visible, are in ``warehouse.commits`` (re-exported here).
"""

from __future__ import annotations

import sys
import types

import pandas as pd
import pandera.errors
import pyarrow

from schemas.tables import TABLE_MODELS, arrow_schema
from warehouse.commits import (  # noqa: F401 - re-exported: landing and committing go together
    check_date,
    check_table,
    commit_run,
    committed_files,
    committed_shards,
    parquet_bytes,
    shard_file,
    write_atomically,
)
from warehouse.location import Warehouse, WarehouseError


def _skip_pandera_dask_types() -> None:
    """pandera's model validation imports dask.dataframe (about a second) only to recognise dask frames among a
    model's types; ours are pandas frames. Unless something already loaded it, pandera's dask typing module reads
    as "dask not installed" in this process (dask itself, for the Dask runner, is unaffected)."""
    if "pandera.typing.dask" not in sys.modules:
        stub = types.ModuleType("pandera.typing.dask", "stand-in: dask frames are never validated here")
        stub.DASK_INSTALLED = False
        sys.modules["pandera.typing.dask"] = stub


_skip_pandera_dask_types()

_SHOWN_FAILURES = 3
_COLUMN_SET_CHECKS = {
    "column_in_schema": "columns not in the model",
    "column_in_dataframe": "missing columns",
}


def _shown(values: pd.Series) -> str:
    """The first few distinct failing values, as plain Python reprs."""
    distinct = list(dict.fromkeys(value.item() if hasattr(value, "item") else value for value in values))
    shown = ", ".join(repr(value) for value in distinct[:_SHOWN_FAILURES])
    return shown + (", ..." if len(distinct) > _SHOWN_FAILURES else "")


def _summarise(table: str, error: pandera.errors.SchemaErrors) -> str:
    """One line naming the first failing column or check and its first failing values."""
    cases = error.failure_cases
    first = cases.iloc[0]
    check = str(first["check"])
    same = cases[cases["check"].astype(str) == check]
    if check in _COLUMN_SET_CHECKS:
        line = f"table {table}: {_COLUMN_SET_CHECKS[check]}: {_shown(same['failure_case'])}"
    elif first["schema_context"] == "DataFrameSchema":
        line = f"table {table}: frame check failed ({check}) at rows {_shown(same['index'])}"
    else:
        column = str(first["column"])
        same = same[same["column"].astype(str) == column]
        line = f"table {table}: column {column} failed check {check}: {_shown(same['failure_case'])}"
    others = cases["check"].astype(str).nunique() - 1
    line += f" (and {others} other failing check(s))" if others else ""
    return " ".join(line.split())  # one line, whatever the values hold


def _refuse_naive_timestamps(table: str, df: pd.DataFrame) -> None:
    """Refuse timezone-naive datetime columns: coercion would silently read them as UTC."""
    for name in df.columns:
        if pd.api.types.is_datetime64_dtype(df[name].dtype) and getattr(df[name].dtype, "tz", None) is None:
            raise WarehouseError(
                f"table {table}: column {name} holds timezone-naive datetimes; make them UTC-aware"
            )


def validate(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """The frame validated and coerced by its table model; WarehouseError with one line otherwise."""
    model = TABLE_MODELS[check_table(table)]
    if not isinstance(df, pd.DataFrame):
        raise WarehouseError(f"table {table}: expected a pandas DataFrame, got {type(df).__name__}")
    _refuse_naive_timestamps(table, df)
    try:
        return model.validate(df, lazy=True)
    except pandera.errors.SchemaErrors as error:
        raise WarehouseError(_summarise(table, error)) from None
    except pandera.errors.SchemaError as error:
        raise WarehouseError(f"table {table}: {' '.join(str(error).split())}") from None


def land(wh: Warehouse, table: str, df: pd.DataFrame, date: str, shard_key: str) -> str:
    """Validate a shard's frame and write it atomically as Parquet; returns the file's path."""
    path = shard_file(wh, table, date, shard_key)
    frame = validate(table, df)
    arrow = pyarrow.Table.from_pandas(frame, schema=arrow_schema(table), preserve_index=False)
    write_atomically(wh, path, parquet_bytes(table, arrow))
    return path


