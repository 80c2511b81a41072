"""Storage and catalog: fsspec locations (local or s3://), atomic Parquet landing, DuckDB views."""

from warehouse.catalog import QueryError, check_read_only, connect, run_query
from warehouse.landing import commit_run, committed_files, committed_shards, land, shard_file, validate
from warehouse.location import Warehouse, WarehouseError, resolve_warehouse

__all__ = [
    "QueryError",
    "Warehouse",
    "WarehouseError",
    "check_read_only",
    "commit_run",
    "committed_files",
    "committed_shards",
    "connect",
    "land",
    "resolve_warehouse",
    "run_query",
    "shard_file",
    "validate",
]
